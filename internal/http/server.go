// Package http is echo_mq's HTTP/JSON API: the chi router, its handlers and
// middleware, and the one mapping from errors to problem+json answers.
//
//	@title						echo_mq
//	@version					0.1.0
//	@description				A Redis-backed job queue for polyglot workers. Enqueue, claim, checkpoint, complete, fail and cancel jobs over HTTP; every state change is one atomic, token-fenced Lua script timed by the Redis server's clock. Every error is an RFC 9457 problem+json body with a machine-readable code. Besides what each operation lists: a path the service has no route for answers 404 EMQNOTFOUND, and a method a path does not take 405 EMQMETHOD with an Allow header; HEAD is answered wherever GET is, with its status and headers and no body; every problem's instance is the path asked for; a request body is JSON nested at most 64 deep and at most 16 MiB (EMQ_MAX_BODY_BYTES), each payload, result and progress at most 1 MiB of compact JSON (EMQ_MAX_VALUE_BYTES), over which the answer is 413 EMQTOOLARGE; an integer is written without a fraction or exponent (1, not 1.0); a body with invalid UTF-8, a member name twice in one object or a field name in other case than the spec's (Payload) is 400 EMQINVALID, at any depth; a refused request changes nothing.
//	@contact.name				echo_mq
//	@contact.url				https://github.com/echo-mq/echo_mq
//	@license.name				MIT
//	@license.url				https://opensource.org/license/mit
//	@servers.url				http://127.0.0.1:8080
//	@servers.description		The service on its default address (EMQ_ADDR); one elsewhere serves this document at its own /openapi.yaml.
//	@externalDocs.description	The docs: getting started, the concepts (the fence), the error codes
//	@externalDocs.url			https://github.com/echo-mq/echo_mq/tree/main/docs
//	@tag.name					worker
//	@tag.description			The calls a worker makes on the jobs it claims, fenced by the claim's token.
//	@tag.name					jobs
//	@tag.description			Producing, reading, cancelling and removing jobs.
//	@tag.name					operator
//	@tag.description			Operating queues.
//	@tag.name					schedules
//	@tag.description			Cron and fixed-interval schedules of a queue, kept in Redis: each tick enqueues one job, fired by whichever service replica is up.
//	@tag.name					batches
//	@tag.description			Batches of jobs whose end is known, with one callback job once every job has ended.
//	@tag.name					service
//	@tag.description			Health of the service.
package http

import (
	"cmp"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/go-chi/cors"
	"github.com/go-playground/validator/v10"

	"github.com/echo-mq/echo_mq/internal/admin"
	"github.com/echo-mq/echo_mq/internal/auth"
	"github.com/echo-mq/echo_mq/internal/events"
	"github.com/echo-mq/echo_mq/internal/flow"
	"github.com/echo-mq/echo_mq/internal/history"
	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/internal/lease"
	"github.com/echo-mq/echo_mq/internal/push"
	"github.com/echo-mq/echo_mq/internal/stall"
	"github.com/echo-mq/echo_mq/internal/telemetry"
	"github.com/echo-mq/echo_mq/internal/wake"
)

// The API's two security schemes, for swag. Each stands in a comment of its
// own: swag ends a scheme at the next annotation of any kind, and names
// every scheme of one comment after the first.
//
//	@securitydefinitions.bearerauth	BearerAuth
//	@description					An API key of EMQ_API_KEYS (role:key or name:role:key entries), sent as Authorization: Bearer <key>. A reader key may read; a worker key may also use the worker plane; an admin key may do everything. With no keys configured the API is open and no key is needed.

// Signed requests, for senders that cannot set Authorization.
//
//	@securitydefinitions.apikey	Signature
//	@in							header
//	@name						X-EMQ-Signature
//	@description				sha256= and the hex HMAC-SHA256, under a key of EMQ_API_KEYS, of "<timestamp>.<METHOD>.<path and query>.<body>", with the timestamp (Unix seconds, within 5 minutes of the service's clock) in X-EMQ-Timestamp. Each signature is accepted once, by every deployment on the same Redis. The timestamp and the signature's form are checked before the body is read; signed bodies being checked share one budget of EMQ_MAX_BODY_BYTES and 1 MiB, taken as their bytes come; a body that waits a second for room is answered 503 EMQBUSY with Retry-After.

// Defaults of the HTTP layer.
const (
	DefaultMaxValueBytes = 1 << 20  // payload, result, progress: 1 MiB each
	DefaultMaxBodyBytes  = 16 << 20 // one request body: 16 MiB
	DefaultMaxWaiters    = 10_000   // long polls waiting at once
	DefaultMaxStreams    = 100      // event streams open at once per API key
	MaxJSONDepth         = 64       // nesting of a request body
)

// DefaultMaxWaitersPerKey is one key's share of maxWaiters waiting long
// polls when none is set: three quarters, so that one key leaves a quarter
// to the others.
func DefaultMaxWaitersPerKey(maxWaiters int) int { return max(1, maxWaiters*3/4) }

// leaser is the worker plane the handlers need (*lease.Service).
type leaser interface {
	Enqueue(ctx context.Context, queue string, jobs []lease.NewJob) ([]lease.Enqueued, error)
	Claim(ctx context.Context, queue string, p lease.ClaimParams) (lease.Claimed, error)
	Extend(ctx context.Context, queue, id string, p lease.ExtendParams) (lease.Extended, error)
	Cancellation(ctx context.Context, queue, id string, token int64) (lease.Cancellation, error)
	Complete(ctx context.Context, queue, id string, token int64, result json.RawMessage, next *lease.ClaimParams) (job.Job, []job.Job, error)
	CompleteBatch(ctx context.Context, queue string, batch []lease.Completion, next *lease.ClaimParams) ([]lease.Completed, []job.Job, error)
	Fail(ctx context.Context, queue, id string, p lease.FailParams) (job.Job, error)
	Snooze(ctx context.Context, queue, id string, token int64, delay time.Duration) (job.Job, error)
	Cancel(ctx context.Context, queue, id string, p lease.CancelParams) (job.Job, bool, error)
	AppendLog(ctx context.Context, queue, id string, token int64, lines []string) (lease.Logged, error)
}

// jobAdmin is the operator plane the handlers need (*admin.Service).
type jobAdmin interface {
	Get(ctx context.Context, queue, id string) (job.Job, error)
	Remove(ctx context.Context, queue, id string, force bool, by admin.Actor) error
	Retry(ctx context.Context, queue, id string, by admin.Actor) (job.Job, error)
	Promote(ctx context.Context, queue, id string, by admin.Actor) (job.Job, error)
	Update(ctx context.Context, queue, id string, c admin.Change, by admin.Actor) (job.Job, error)
	List(ctx context.Context, queue, state, cursor string, limit int) (admin.Page, error)
	Queue(ctx context.Context, queue string) (admin.QueueInfo, error)
	Queues(ctx context.Context, prefix, cursor string, limit int) ([]admin.QueueInfo, string, error)
	SetPaused(ctx context.Context, queue string, paused bool, by admin.Actor) (admin.QueueInfo, error)
	Drain(ctx context.Context, queue string, by admin.Actor) (int, error)
	RetryAll(ctx context.Context, queue, state string, limit int, by admin.Actor) (admin.Bulk, error)
	PromoteAll(ctx context.Context, queue string, limit int, by admin.Actor) (admin.Bulk, error)
	Clean(ctx context.Context, queue, state string, olderThanMS int64, limit int, by admin.Actor) (admin.Bulk, error)
	Obliterate(ctx context.Context, queue string, force bool) (int, error)
	Settings(ctx context.Context, queue string) (flow.Settings, error)
	SetSettings(ctx context.Context, queue string, set flow.Settings, asJSON string, by admin.Actor) error
	Groups(ctx context.Context, queue, cursor string, limit int) ([]flow.Group, string, error)
	SetGroupPaused(ctx context.Context, queue, group string, paused bool, by admin.Actor) (flow.Group, error)
	Logs(ctx context.Context, queue, id, cursor string, limit int) (admin.LogPage, error)
}

// sweeper runs the stalled sweep (*stall.Service).
type sweeper interface {
	Sweep(ctx context.Context, queue string, p stall.SweepParams) (stall.Swept, error)
}

// waiters lets long-polling claimers sleep until jobs come (*wake.Hub).
type waiters interface {
	Poll(queue string) *wake.Waiter
}

// observer records what the service does, for /metrics
// (*metrics.Metrics); nil records nothing.
type observer interface {
	ObserveRequest(method, route string, status int, took time.Duration)
	Transition(queue, kind string, n int)
	StaleRefusal(queue string)
	Swept(queue string, recovered, dead, cancelled int)
	Reaped(queue, outcome string, n int)
	ClaimHeld(queue, reason string)
	RedisError()
	ForgetQueue(queue string)
}

// activity records which queues have traffic, for GET /events and the
// metrics' depth (*keyspace.Activity).
type activity interface {
	Touch(ctx context.Context, queue string) error
	Drop(ctx context.Context, queue string) error
}

// Config wires the handler to its services and sets its limits.
type Config struct {
	Leases  leaser      // *lease.Service
	Admin   jobAdmin    // *admin.Service
	Sweeper sweeper     // *stall.Service
	Waiters waiters     // *wake.Hub
	Events  *events.Log // each queue's event stream, and all of them merged
	// Schedules keeps the queues' schedules (*scheduler.Service).
	Schedules schedules
	// Pushes keeps the queues' push targets; PushAllow is the hosts one
	// may name (EMQ_PUSH_ALLOW; none refuses every target).
	Pushes    *push.Store
	PushAllow push.Allow
	// Batches keeps the queues' batches (*batch.Service); required.
	Batches batches
	// History reads the queues' last 24 hours (*history.Reader); required.
	History *history.Reader
	// Metrics records requests and job transitions; nil records nothing.
	Metrics observer
	// Activity records the queue of each worker and admin request that
	// succeeds, and lets an obliterated queue go; GET /events merges the
	// queues it holds. nil records nothing.
	Activity activity
	// Telemetry traces each API request and the scripts it runs (not
	// /healthz, /readyz, /metrics, the spec or the dashboard); nil (or off)
	// traces nothing and costs nothing.
	Telemetry *telemetry.Telemetry
	// MetricsHandler serves GET /metrics; nil serves no such route.
	MetricsHandler http.Handler
	// Keys are the API keys; nil or empty leaves the API open.
	Keys *auth.Keyring
	// Replays remembers request signatures so that each is accepted once.
	Replays auth.Replays
	// MetricsRole is the least role that may read /metrics (auth.Open: no
	// key needed).
	MetricsRole auth.Role
	// CORSOrigins are the browser origins allowed to call the API (["*"]
	// for any); none turns CORS off.
	CORSOrigins []string
	// Ready reports whether Redis answers, for /readyz.
	Ready func(ctx context.Context) error
	// RedisMaster names the Redis master in use, for /readyz; nil but
	// under Redis Sentinel.
	RedisMaster func() string
	// Stopping, when closed, makes waiting long polls answer at once (empty),
	// so that a graceful shutdown does not wait out their wait_ms.
	Stopping <-chan struct{}
	// MaxStalled is the sweep's default threshold (stall.DefaultMaxStalled).
	MaxStalled    int
	MaxValueBytes int // DefaultMaxValueBytes
	MaxBodyBytes  int // DefaultMaxBodyBytes
	// MaxWaiters caps the long polls waiting at once (DefaultMaxWaiters);
	// past it a claim that would wait is answered 503 EMQBUSY.
	MaxWaiters int
	// MaxWaitersPerKey caps the long polls of one API key waiting at once
	// (DefaultMaxWaitersPerKey of MaxWaiters; at most MaxWaiters); past it
	// a claim of that key that would wait is answered 429 EMQBUSY. It
	// applies only when Keys are configured: with the API open every caller
	// is one key, and MaxWaiters alone caps them.
	MaxWaitersPerKey int
	// MaxStreams caps the event streams (GET /queues/{queue}/events and GET
	// /events together) one API key holds open at once (DefaultMaxStreams);
	// past it a stream is answered 429 EMQBUSY. With the API open every
	// caller is one key, so it caps the streams of all callers together.
	MaxStreams int
	Logger     *slog.Logger
}

type server struct {
	cfg       Config
	leases    leaser
	admin     jobAdmin
	sweeper   sweeper
	waiters   waiters
	validator *validator.Validate
	log       *slog.Logger
	router    chi.Router
	waiting   atomic.Int64 // long polls waiting now
	// waitersByKey and streams count each key's waiting long polls and
	// open event streams.
	waitersByKey, streams perKey
	// unverified bounds the bytes signed requests' bodies hold while their
	// signatures are checked: EMQ_MAX_BODY_BYTES in all (verifySigned).
	unverified *bodyBudget
}

// NewHandler returns the service's HTTP handler.
func NewHandler(cfg Config) http.Handler {
	cfg.MaxValueBytes = cmp.Or(cfg.MaxValueBytes, DefaultMaxValueBytes)
	cfg.MaxBodyBytes = max(cmp.Or(cfg.MaxBodyBytes, DefaultMaxBodyBytes), cfg.MaxValueBytes+64<<10)
	cfg.MaxStalled = cmp.Or(cfg.MaxStalled, stall.DefaultMaxStalled)
	cfg.MaxWaiters = cmp.Or(cfg.MaxWaiters, DefaultMaxWaiters)
	cfg.MaxWaitersPerKey = min(cmp.Or(cfg.MaxWaitersPerKey, DefaultMaxWaitersPerKey(cfg.MaxWaiters)), cfg.MaxWaiters)
	cfg.MaxStreams = cmp.Or(cfg.MaxStreams, DefaultMaxStreams)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &server{
		cfg: cfg, leases: cfg.Leases, admin: cfg.Admin, sweeper: cfg.Sweeper, waiters: cfg.Waiters,
		validator: newValidator(), log: cfg.Logger, unverified: newBodyBudget(cfg.MaxBodyBytes),
	}
	return s.routes()
}

func (s *server) routes() http.Handler {
	r := chi.NewRouter()
	s.router = r
	r.Use(checkRequestID, middleware.RequestID, s.logRequests, s.recoverer, s.limitBody)
	if len(s.cfg.CORSOrigins) > 0 {
		r.Use(cors.Handler(cors.Options{
			AllowedOrigins: s.cfg.CORSOrigins,
			AllowedMethods: []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete},
			AllowedHeaders: []string{"Authorization", "Content-Type", "Last-Event-ID", "Prefer", "traceparent", "tracestate"},
			ExposedHeaders: []string{"Preference-Applied", "Retry-After"},
			MaxAge:         600,
		}))
	}
	r.Use(answerHead)
	r.NotFound(notFound)
	r.MethodNotAllowed(s.methodNotAllowed)
	registerServiceRoutes(r, s)
	s.registerAPIRoutes(r)
	registerUIRoutes(r)
	return r
}

// limitBody caps every request body: one that declares a larger
// Content-Length is refused with 413 before any of it is read; reading past
// the cap otherwise fails, and decode answers 413.
func (s *server) limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > int64(s.cfg.MaxBodyBytes) {
			s.writeProblem(w, r, bodyError(&http.MaxBytesError{Limit: int64(s.cfg.MaxBodyBytes)}))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, int64(s.cfg.MaxBodyBytes))
		next.ServeHTTP(w, r)
	})
}

// logRequests logs one line per request: method, route pattern, status,
// duration and request id, at debug level (warn for a 5xx). Never a token or a key: the query string and
// headers are not logged.
func (s *server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		next.ServeHTTP(ww, r)
		route, status, took := chi.RouteContext(r.Context()).RoutePattern(), ww.Status(), time.Since(start)
		if r.Context().Err() != nil && status >= 500 {
			status = statusClientClosed // the client left: not the service's failure
		}
		if s.cfg.Metrics != nil {
			s.cfg.Metrics.ObserveRequest(r.Method, route, status, took)
		}
		level := slog.LevelDebug
		if status >= 500 {
			level = slog.LevelWarn
		}
		if s.log.Enabled(r.Context(), level) { // no formatting for a line nobody keeps
			s.log.Log(r.Context(), level, "Request", "method", r.Method, "route", route,
				"status", status, "duration", took, "request_id", middleware.GetReqID(r.Context()))
		}
	})
}

// statusClientClosed is the status logs and metrics give a request whose
// client went away before the answer (nginx's 499): its 503 was never read.
const statusClientClosed = 499

// transition counts n jobs of queue going through kind, for /metrics.
func (s *server) transition(queue, kind string, n int) {
	if s.cfg.Metrics != nil {
		s.cfg.Metrics.Transition(queue, kind, n)
	}
}

// writeJSON answers v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // payloads come back as sent: "<" stays "<"
	_ = enc.Encode(v)
}
