// Package http is echo_mq's HTTP/JSON API: the chi router, its handlers and
// middleware, and the one mapping from errors to problem+json answers.
//
//	@title						echo_mq
//	@version					0.1.0
//	@description				A Redis-backed job queue for polyglot workers. Enqueue, claim, checkpoint, complete, fail and cancel jobs over HTTP; every state change is one atomic, token-fenced Lua script timed by the Redis server's clock. Every error is an RFC 9457 problem+json body with a machine-readable code.
//	@license.name				MIT
//	@externalDocs.description	README: the worker loop, the fence, the error codes
//	@externalDocs.url			https://github.com/echo-mq/echo_mq#readme
//	@tag.name					worker
//	@tag.description			The calls a worker makes on the jobs it claims, fenced by the claim's token.
//	@tag.name					jobs
//	@tag.description			Producing, reading, cancelling and removing jobs.
//	@tag.name					operator
//	@tag.description			Operating queues.
//	@tag.name					service
//	@tag.description			Health of the service.
package http

import (
	"cmp"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/go-playground/validator/v10"

	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/internal/lease"
	"github.com/echo-mq/echo_mq/internal/stall"
	"github.com/echo-mq/echo_mq/internal/wake"
)

// Defaults of the HTTP layer.
const (
	DefaultMaxValueBytes = 1 << 20  // payload, result, progress: 1 MiB each
	DefaultMaxBodyBytes  = 16 << 20 // one request body: 16 MiB
)

// leaser is the worker plane the handlers need (*lease.Service).
type leaser interface {
	Enqueue(ctx context.Context, queue string, jobs []lease.NewJob) ([]lease.Enqueued, error)
	Claim(ctx context.Context, queue string, p lease.ClaimParams) (lease.Claimed, error)
	Extend(ctx context.Context, queue, id string, p lease.ExtendParams) (lease.Extended, error)
	Cancellation(ctx context.Context, queue, id string, token int64) (lease.Cancellation, error)
	Complete(ctx context.Context, queue, id string, token int64, result json.RawMessage, next *lease.ClaimParams) (job.Job, []job.Job, error)
	CompleteBatch(ctx context.Context, queue string, batch []lease.Completion, next *lease.ClaimParams) ([]lease.Completed, []job.Job, error)
	Fail(ctx context.Context, queue, id string, p lease.FailParams) (job.Job, error)
	Cancel(ctx context.Context, queue, id string, p lease.CancelParams) (job.Job, bool, error)
}

// jobAdmin is the operator plane the handlers need (*admin.Service).
type jobAdmin interface {
	Get(ctx context.Context, queue, id string) (job.Job, error)
	Remove(ctx context.Context, queue, id string, force bool) error
}

// sweeper runs the stalled sweep (*stall.Service).
type sweeper interface {
	Sweep(ctx context.Context, queue string, p stall.SweepParams) (stall.Swept, error)
}

// waiters lets long-polling claimers sleep until jobs come (*wake.Hub).
type waiters interface {
	Register(queue string) *wake.Waiter
}

// Config wires the handler to its services and sets its limits.
type Config struct {
	Leases  leaser   // *lease.Service
	Admin   jobAdmin // *admin.Service
	Sweeper sweeper  // *stall.Service
	Waiters waiters  // *wake.Hub
	// Ready reports whether Redis answers, for /readyz.
	Ready func(ctx context.Context) error
	// Stopping, when closed, makes waiting long polls answer at once (empty),
	// so that a graceful shutdown does not wait out their wait_ms.
	Stopping <-chan struct{}
	// MaxStalled is the sweep's default threshold (stall.DefaultMaxStalled).
	MaxStalled    int
	MaxValueBytes int // DefaultMaxValueBytes
	MaxBodyBytes  int // DefaultMaxBodyBytes
	Logger        *slog.Logger
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
}

// NewHandler returns the service's HTTP handler.
func NewHandler(cfg Config) http.Handler {
	cfg.MaxValueBytes = cmp.Or(cfg.MaxValueBytes, DefaultMaxValueBytes)
	cfg.MaxBodyBytes = max(cmp.Or(cfg.MaxBodyBytes, DefaultMaxBodyBytes), cfg.MaxValueBytes+64<<10)
	cfg.MaxStalled = cmp.Or(cfg.MaxStalled, stall.DefaultMaxStalled)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &server{
		cfg: cfg, leases: cfg.Leases, admin: cfg.Admin, sweeper: cfg.Sweeper, waiters: cfg.Waiters,
		validator: newValidator(), log: cfg.Logger,
	}
	return s.routes()
}

func (s *server) routes() http.Handler {
	r := chi.NewRouter()
	s.router = r
	r.Use(middleware.RequestID, s.logRequests, s.recoverer, s.limitBody)
	r.NotFound(notFound)
	r.MethodNotAllowed(s.methodNotAllowed)
	registerServiceRoutes(r, s)
	r.Route("/queues/{queue}", func(r chi.Router) {
		registerJobRoutes(r, s)
		registerLeaseRoutes(r, s)
		r.Post("/sweep", s.handleSweep)
	})
	return r
}

// limitBody caps every request body; reading past it fails, and decode
// answers 413.
func (s *server) limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, int64(s.cfg.MaxBodyBytes))
		next.ServeHTTP(w, r)
	})
}

// logRequests logs one line per request: method, route pattern, status,
// duration and request id. Never a token or a key: the query string and
// headers are not logged.
func (s *server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		next.ServeHTTP(ww, r)
		route := chi.RouteContext(r.Context()).RoutePattern()
		level := slog.LevelDebug
		if ww.Status() >= 500 {
			level = slog.LevelWarn
		}
		s.log.Log(r.Context(), level, "Request", "method", r.Method, "route", route,
			"status", ww.Status(), "duration", time.Since(start), "request_id", middleware.GetReqID(r.Context()))
	})
}

// writeJSON answers v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // payloads come back as sent: "<" stays "<"
	_ = enc.Encode(v)
}
