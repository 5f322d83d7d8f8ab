package http

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/echo-mq/echo_mq/internal/admin"
	"github.com/echo-mq/echo_mq/internal/batch"
	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/rediserr"
)

// Problem is an RFC 9457 problem details body: every error the service
// answers has this shape, with a machine-readable Code.
type Problem struct {
	Type     string       `json:"type" binding:"required" example:"https://github.com/echo-mq/echo_mq#emqstale"`
	Title    string       `json:"title" binding:"required" example:"Stale token"`
	Status   int          `json:"status" binding:"required" example:"409"`
	Detail   string       `json:"detail" binding:"required" example:"the token does not hold this job: job-1"`
	Code     string       `json:"code" binding:"required" example:"EMQSTALE"`
	Instance string       `json:"instance,omitempty" example:"/queues/emails/jobs/job-1/complete"`
	Errors   []FieldError `json:"errors,omitempty"`
} // @name Problem

// FieldError names one invalid field of a request and what is wrong with it.
type FieldError struct {
	Field   string `json:"field" binding:"required" example:"lease_ms"`
	Message string `json:"message" binding:"required" example:"must be at least 100"`
} // @name FieldError

// The problem codes. docs/design.md#the-contract-in-brief fixes the first ones; the last three name the
// errors it leaves open (unknown route, wrong method, a bug).
const (
	CodeStale        = "EMQSTALE"
	CodeGone         = "EMQGONE"
	CodeState        = "EMQSTATE"
	CodeInvalid      = "EMQINVALID"
	CodeTooLarge     = "EMQTOOLARGE"
	CodeMediaType    = "EMQMEDIATYPE"
	CodeUnauthorized = "EMQUNAUTHORIZED"
	CodeForbidden    = "EMQFORBIDDEN"
	CodeUnavailable  = "EMQUNAVAILABLE"
	CodeBusy         = "EMQBUSY"
	CodeQuota        = "EMQQUOTA"
	CodeNotFound     = "EMQNOTFOUND"
	CodeMethod       = "EMQMETHOD"
	CodeInternal     = "EMQINTERNAL"
	retryAfterSecond = "1"
)

// kinds is the one table from a problem code to its status and title. A
// requestError may answer another status for its code: EMQBUSY is 503 for
// a service-wide limit, 429 for a per-key one (keyBusy).
var kinds = map[string]struct {
	status int
	title  string
}{
	CodeStale:        {http.StatusConflict, "Stale token"},
	CodeGone:         {http.StatusNotFound, "No such job"},
	CodeState:        {http.StatusConflict, "Not in this state"},
	CodeInvalid:      {http.StatusBadRequest, "Invalid request"},
	CodeTooLarge:     {http.StatusRequestEntityTooLarge, "Request too large"},
	CodeMediaType:    {http.StatusUnsupportedMediaType, "Unsupported media type"},
	CodeUnauthorized: {http.StatusUnauthorized, "Unauthorized"},
	CodeForbidden:    {http.StatusForbidden, "Forbidden"},
	CodeUnavailable:  {http.StatusServiceUnavailable, "Redis unavailable"},
	CodeBusy:         {http.StatusServiceUnavailable, "Too busy"},
	CodeQuota:        {http.StatusConflict, "Too many queues"},
	CodeNotFound:     {http.StatusNotFound, "No such route"},
	CodeMethod:       {http.StatusMethodNotAllowed, "Method not allowed"},
	CodeInternal:     {http.StatusInternalServerError, "Internal error"},
}

// requestError is a refusal of the request itself, found before any state
// is touched: bad JSON, a failed validation, a body too large.
type requestError struct {
	code   string
	status int // 0: the code's status in kinds
	detail string
	fields []FieldError
}

func (e *requestError) Error() string { return e.detail }

func invalid(detail string, fields ...FieldError) error {
	return &requestError{code: CodeInvalid, detail: detail, fields: fields}
}

// codeOf finds the problem code for err.
func codeOf(err error) string {
	var re *requestError
	switch {
	case errors.As(err, &re):
		return re.code
	case errors.Is(err, admin.ErrCursor), errors.Is(err, batch.ErrCursor), errors.Is(err, job.ErrInvalid):
		return CodeInvalid
	case errors.Is(err, job.ErrStale):
		return CodeStale
	case errors.Is(err, job.ErrGone):
		return CodeGone
	case errors.Is(err, job.ErrState):
		return CodeState
	case errors.Is(err, keyspace.ErrQuota):
		return CodeQuota
	case rediserr.Unavailable(err), newerLayout(err):
		return CodeUnavailable
	default:
		return CodeInternal
	}
}

// writeProblem answers err as problem+json. Only a 5xx is logged, with the
// real error; the client is told "internal error" for a bug.
func (s *server) writeProblem(w http.ResponseWriter, r *http.Request, err error) {
	code := codeOf(err)
	p := problemAt(r, code, err.Error())
	var gone *job.GoneError
	if code == CodeGone && errors.As(err, &gone) {
		p.Title = goneTitle(gone)
	}
	var re *requestError
	if errors.As(err, &re) {
		p.Errors = re.fields
		p.Status = cmp.Or(re.status, p.Status)
	}
	if errors.Is(err, admin.ErrCursor) || errors.Is(err, batch.ErrCursor) {
		p.Errors = []FieldError{{Field: "cursor", Message: "is not a cursor this service gave out"}}
	}
	switch {
	case r.Context().Err() != nil:
		// The client went away mid-call: nobody reads this answer, and it
		// says nothing about Redis or the service.
		p = problemAt(r, CodeUnavailable, "the request was cancelled")
		s.log.Debug("Request cancelled by the client", "path", r.URL.Path)
	case code == CodeStale && s.cfg.Metrics != nil:
		s.cfg.Metrics.StaleRefusal(pathParam(r, "queue"))
	case code == CodeInternal:
		p.Detail = "internal error"
		s.log.Error("Request failed", "error", err, "method", r.Method, "path", r.URL.Path,
			"request_id", middleware.GetReqID(r.Context()))
	case code == CodeBusy:
		w.Header().Set("Retry-After", retryAfterSecond)
	case code == CodeUnauthorized:
		w.Header().Set("WWW-Authenticate", `Bearer realm="echo_mq"`)
	case code == CodeUnavailable && newerLayout(err):
		// A newer release wrote the queue: this service leaves it alone
		// until it is upgraded too (docs/design.md#layout).
		p.Detail, _ = rediserr.NewerLayout(err)
		w.Header().Set("Retry-After", retryAfterSecond)
		s.log.Error("Queue written by a newer release: upgrade this service", "queue", pathParam(r, "queue"),
			"detail", p.Detail, "path", r.URL.Path)
	case code == CodeUnavailable && errors.Is(err, rediserr.ErrNotAcknowledged):
		// EMQ_ACK_REPLICAS: the master has the write, too few replicas do,
		// so a failover could lose it; the caller repeats it
		// (docs/design.md#acknowledged-writes).
		if s.cfg.Metrics != nil {
			s.cfg.Metrics.RedisError()
		}
		p.Detail = "the write reached the Redis master but not enough replicas in time (EMQ_ACK_REPLICAS), so a failover could lose it; repeat it (an enqueue with the same id, a complete with the same token)"
		w.Header().Set("Retry-After", retryAfterSecond)
		s.log.Warn("Write not acknowledged by the replicas", "error", err, "path", r.URL.Path)
	case code == CodeUnavailable:
		if s.cfg.Metrics != nil {
			s.cfg.Metrics.RedisError()
		}
		p.Detail = "Redis cannot be reached; retry later"
		w.Header().Set("Retry-After", retryAfterSecond)
		s.log.Warn("Redis unavailable", "error", err, "path", r.URL.Path)
	}
	writeProblemBody(w, p)
}

func newProblem(code, detail string) Problem {
	kind := kinds[code]
	return Problem{
		Type:   "https://github.com/echo-mq/echo_mq#" + strings.ToLower(code),
		Title:  kind.title,
		Status: kind.status,
		Detail: detail,
		Code:   code,
	}
}

// problemAt is the problem of code about request r: its instance is the
// path asked for.
func problemAt(r *http.Request, code, detail string) Problem {
	p := newProblem(code, detail)
	p.Instance = r.URL.Path
	return p
}

// goneTitle is the title of an EMQGONE that says what is gone: "No such
// schedule", or "No push target" for what a queue has one of. A job's
// keeps the code's own, "No such job".
func goneTitle(g *job.GoneError) string {
	if g.Name == "" && g.Queue != "" {
		return "No " + g.What
	}
	return "No such " + g.What
}

func writeProblemBody(w http.ResponseWriter, p Problem) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(p.Status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(p)
}

// notFound answers unknown routes.
func notFound(w http.ResponseWriter, r *http.Request) {
	writeProblemBody(w, problemAt(r, CodeNotFound, fmt.Sprintf("no route %s %s", r.Method, r.URL.Path)))
}

// methodNotAllowed answers a known route asked with the wrong method, with
// the Allow header RFC 9110 asks for: HEAD wherever GET is (answerHead).
func (s *server) methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	for _, method := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		if s.router.Match(chi.NewRouteContext(), method, r.URL.Path) {
			w.Header().Add("Allow", method)
			if method == http.MethodGet {
				w.Header().Add("Allow", http.MethodHead)
			}
		}
	}
	writeProblemBody(w, problemAt(r, CodeMethod, fmt.Sprintf("%s is not allowed on %s", r.Method, r.URL.Path)))
}

// recoverer turns a panic into a logged 500 problem.
func (s *server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			rec := recover()
			if rec == nil || rec == http.ErrAbortHandler {
				if rec != nil {
					panic(rec)
				}
				return
			}
			s.log.Error("Handler panicked", "panic", fmt.Sprint(rec), "method", r.Method,
				"path", r.URL.Path, "request_id", middleware.GetReqID(r.Context()))
			writeProblemBody(w, problemAt(r, CodeInternal, "internal error"))
		}()
		next.ServeHTTP(w, r)
	})
}

// newerLayout reports whether err is a script's refusal of a queue that a
// newer release wrote (rediserr.NewerLayout).
func newerLayout(err error) bool {
	_, ok := rediserr.NewerLayout(err)
	return ok
}
