package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Error is a refusal from the service: an answer whose status is not 2xx.
// The service answers every error as an RFC 9457 problem+json body, whose
// members it holds; an answer from something else in front of the service
// (a proxy's 502) has only Status, and a Detail made of its body's start.
//
// Test for the common refusals with errors.Is and the sentinels (ErrStale,
// ErrGone, ...), and read the rest with errors.As:
//
//	var e *client.Error
//	if errors.As(err, &e) && e.Status == http.StatusServiceUnavailable {
//		time.Sleep(e.RetryAfter)
//	}
type Error struct {
	// Status is the HTTP status code, such as 409.
	Status int
	// Code is the problem's machine-readable code, such as "EMQSTALE";
	// empty when the answer was not a problem.
	Code string
	// Title is the problem's short summary, such as "Stale token".
	Title string
	// Detail says what happened to this request.
	Detail string
	// Instance is the path the problem is about.
	Instance string
	// Fields names each invalid field of a refused request (EMQINVALID).
	Fields []FieldError
	// RetryAfter is the answer's Retry-After, when it had one (a 503 or a
	// 429 does):
	// how long to wait before sending the request again.
	RetryAfter time.Duration
}

// FieldError names one invalid field of a request, by its JSON name, and
// what is wrong with it.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// The sentinels that errors.Is matches against an *Error, by its code.
var (
	// ErrStale: the token is not the current holder's, or the job is no
	// longer active under it (409 EMQSTALE). Drop the job.
	ErrStale = errors.New("client: stale token")
	// ErrGone: no such job (404 EMQGONE). Drop the job. A schedule's calls
	// answer it for no such schedule, a batch's for no such batch.
	ErrGone = errors.New("client: no such job")
	// ErrState: the verb does not apply in the job's, batch's or queue's
	// state, such as cancelling a completed job or adding jobs to a
	// committed batch (409 EMQSTATE).
	ErrState = errors.New("client: not in this state")
	// ErrInvalid: the request is malformed or fails validation (400
	// EMQINVALID); Error.Fields says which fields.
	ErrInvalid = errors.New("client: invalid request")
	// ErrQuota: the call would make a new queue, and the service has
	// EMQ_MAX_QUEUES queues already (409 EMQQUOTA); nothing was written.
	// Error.Detail names the limit.
	ErrQuota = errors.New("client: too many queues")
	// ErrUnauthorized: no API key or a wrong one (401 EMQUNAUTHORIZED).
	ErrUnauthorized = errors.New("client: unauthorized")
	// ErrForbidden: the key's role may not do this (403 EMQFORBIDDEN).
	ErrForbidden = errors.New("client: forbidden")
	// ErrUnavailable: any 503, from the service (Redis cannot be reached,
	// too many waiting claims) or a proxy. Retry after Error.RetryAfter.
	ErrUnavailable = errors.New("client: service unavailable")
)

// sentinelCodes maps each sentinel but ErrUnavailable to its problem code.
var sentinelCodes = map[error]string{
	ErrStale:        "EMQSTALE",
	ErrGone:         "EMQGONE",
	ErrState:        "EMQSTATE",
	ErrInvalid:      "EMQINVALID",
	ErrQuota:        "EMQQUOTA",
	ErrUnauthorized: "EMQUNAUTHORIZED",
	ErrForbidden:    "EMQFORBIDDEN",
}

// Error returns "client: <status> <code>: <detail>".
func (e *Error) Error() string {
	kind := e.Code
	if kind == "" {
		kind = http.StatusText(e.Status)
	}
	if e.Detail == "" {
		return fmt.Sprintf("client: %d %s", e.Status, kind)
	}
	return fmt.Sprintf("client: %d %s: %s", e.Status, kind, e.Detail)
}

// Is reports whether target is the sentinel of e's code (or ErrUnavailable
// for a 503), so that errors.Is(err, client.ErrStale) reads as it says.
func (e *Error) Is(target error) bool {
	if target == ErrUnavailable {
		return e.Status == http.StatusServiceUnavailable
	}
	code, ok := sentinelCodes[target]
	return ok && code == e.Code
}

// Retryable reports whether err is worth sending again after a pause: a
// 502, 503 or 504 answer, a 429 (the service's EMQBUSY when the API key
// has its share of waiting claims, or a proxy's rate limit), or a request
// that failed on its way in a way that may pass (see transient). It is false for a request its context
// cancelled, for any other answer, and for a failure that sending again
// cannot mend: a URL the transport cannot use, a TLS certificate that is
// not trusted, a host name that does not resolve. Work retries the
// retryable errors on its own and gives up on the others.
func Retryable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Status == http.StatusBadGateway || e.Status == http.StatusServiceUnavailable ||
			e.Status == http.StatusGatewayTimeout || e.Status == http.StatusTooManyRequests
	}
	return transient(err)
}

// transient reports whether err is a failure of the transport that may
// not happen again: a timeout (a deadline, a dial or TLS handshake that
// took too long), a temporary DNS failure, a dial, read or write that
// failed (refused, reset, unreachable, broken pipe), or a connection that
// closed before the whole answer came (EOF, as a server that restarts or
// drops an idle connection gives). TLS refusals are not: a local or remote
// TLS alert is a *net.OpError of another Op, and a certificate error is
// not a net.Error at all.
func transient(err error) bool {
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return dns.IsTimeout || dns.IsTemporary
	}
	return anyInChain(err, func(err error) bool {
		if err == io.EOF || err == io.ErrUnexpectedEOF || err == syscall.ECONNRESET || err == syscall.ECONNREFUSED {
			return true
		}
		switch err := err.(type) {
		case *net.OpError:
			return err.Op == "dial" || err.Op == "read" || err.Op == "write"
		case interface{ Timeout() bool }:
			return err.Timeout()
		}
		return false
	})
}

// anyInChain reports whether f is true of err or of any error it wraps.
// Unlike errors.As, it looks past the first error of a type: a *url.Error
// is a net.Error whose Timeout sees only the error right under it.
func anyInChain(err error, f func(error) bool) bool {
	if err == nil {
		return false
	}
	if f(err) {
		return true
	}
	switch err := err.(type) {
	case interface{ Unwrap() error }:
		return anyInChain(err.Unwrap(), f)
	case interface{ Unwrap() []error }:
		for _, e := range err.Unwrap() {
			if anyInChain(e, f) {
				return true
			}
		}
	}
	return false
}

// maxDetail bounds how much of a body that is not a problem goes into
// Error.Detail.
const maxDetail = 512

// errorOf reads a non-2xx answer into an *Error.
func errorOf(resp *http.Response) *Error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	e := &Error{Status: resp.StatusCode, RetryAfter: retryAfter(resp.Header.Get("Retry-After"))}
	var p struct {
		Title    string       `json:"title"`
		Detail   string       `json:"detail"`
		Code     string       `json:"code"`
		Instance string       `json:"instance"`
		Errors   []FieldError `json:"errors"`
	}
	if json.Unmarshal(body, &p) == nil && p.Code != "" {
		e.Code, e.Title, e.Detail, e.Instance, e.Fields = p.Code, p.Title, p.Detail, p.Instance, p.Errors
		return e
	}
	e.Detail = strings.TrimSpace(string(body[:min(len(body), maxDetail)]))
	return e
}

// retryAfter reads a Retry-After header: seconds, or an HTTP date. It is 0
// when the header is absent or unreadable.
func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil {
		return max(0, time.Duration(s)*time.Second)
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, time.Until(t))
	}
	return 0
}
