package http

import (
	"context"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/echo-mq/echo_mq/internal/auth"
	"github.com/echo-mq/echo_mq/internal/ui"
)

// route is one route of the API and the least role that may call it.
type route struct {
	method  string
	pattern string
	role    auth.Role
	handle  http.HandlerFunc
}

// apiRoutes is every route of the queue API, in one table, so that who may
// call what can be read in one place.
func (s *server) apiRoutes() []route {
	const q, job, schedule = "/queues/{queue}", "/queues/{queue}/jobs/{id}", "/queues/{queue}/schedules/{name}"
	return []route{
		{"GET", "/whoami", auth.Reader, s.handleWhoAmI},
		{"GET", "/queues", auth.Reader, s.handleQueueList},
		{"GET", q, auth.Reader, s.handleQueueGet},
		{"GET", q + "/jobs", auth.Reader, s.handleJobList},
		{"GET", job, auth.Reader, s.handleJobGet},
		{"GET", job + "/logs", auth.Reader, s.handleLogList},
		{"GET", q + "/events", auth.Reader, s.handleEvents(s.cfg.Events)},
		{"GET", q + "/settings", auth.Reader, s.handleSettingsGet},
		{"GET", q + "/groups", auth.Reader, s.handleGroupList},
		{"GET", "/events", auth.Reader, s.handleAllEvents(s.cfg.Events)},
		{"GET", q + "/schedules", auth.Reader, s.handleScheduleList},
		{"GET", schedule, auth.Reader, s.handleScheduleGet},
		{"GET", q + "/push", auth.Reader, s.handlePushGet},
		{"GET", q + "/stats", auth.Reader, s.handleQueueStats},
		{"GET", q + "/batches/{id}", auth.Reader, s.handleBatchGet},
		{"GET", q + "/batches", auth.Reader, s.handleBatchList},

		{"POST", q + "/jobs", auth.Worker, s.handleEnqueue},
		{"POST", q + "/jobs/batch", auth.Worker, s.handleEnqueueBatch},
		{"POST", q + "/batches", auth.Worker, s.handleBatchCreate},
		{"POST", q + "/batches/{id}/jobs", auth.Worker, s.handleBatchAdd},
		{"POST", q + "/batches/{id}/commit", auth.Worker, s.handleBatchCommit},
		{"POST", q + "/claim", auth.Worker, s.handleClaim},
		{"POST", q + "/complete", auth.Worker, s.handleCompleteBatch},
		{"POST", job + "/lease", auth.Worker, s.handleLeaseExtend},
		{"POST", job + "/logs", auth.Worker, s.handleLogAppend},
		{"POST", job + "/complete", auth.Worker, s.handleComplete},
		{"POST", job + "/fail", auth.Worker, s.handleFail},
		{"POST", job + "/snooze", auth.Worker, s.handleSnooze},
		{"GET", job + "/cancellation", auth.Worker, s.handleCancellation},
		{"POST", job + "/cancel", auth.Worker, s.handleCancel},

		{"POST", q + "/sweep", auth.Admin, s.handleSweep},
		{"POST", q + "/pause", auth.Admin, s.handleQueuePause},
		{"POST", q + "/resume", auth.Admin, s.handleQueueResume},
		{"POST", q + "/drain", auth.Admin, s.handleQueueDrain},
		{"POST", q + "/retry", auth.Admin, s.handleQueueRetry},
		{"POST", q + "/clean", auth.Admin, s.handleQueueClean},
		{"POST", q + "/promote", auth.Admin, s.handleQueuePromote},
		{"PUT", q + "/settings", auth.Admin, s.handleSettingsPut},
		{"POST", q + "/groups/{group}/pause", auth.Admin, s.handleGroupPause},
		{"POST", q + "/groups/{group}/resume", auth.Admin, s.handleGroupResume},
		{"DELETE", q, auth.Admin, s.handleQueueObliterate},
		{"POST", job + "/retry", auth.Admin, s.handleJobRetry},
		{"POST", job + "/promote", auth.Admin, s.handleJobPromote},
		{"DELETE", job, auth.Admin, s.handleJobRemove},
		{"PATCH", job, auth.Admin, s.handleJobUpdate},
		{"PUT", schedule, auth.Admin, s.handleSchedulePut},
		{"DELETE", schedule, auth.Admin, s.handleScheduleDelete},
		{"POST", schedule + "/pause", auth.Admin, s.handleSchedulePause},
		{"POST", schedule + "/resume", auth.Admin, s.handleScheduleResume},
		{"POST", schedule + "/run", auth.Admin, s.handleScheduleRun},
		{"PUT", q + "/push", auth.Admin, s.handlePushPut},
		{"DELETE", q + "/push", auth.Admin, s.handlePushDelete},
	}
}

// registerAPIRoutes mounts every route of apiRoutes behind its role check.
func (s *server) registerAPIRoutes(r chi.Router) {
	// Only the API is traced: a probe of /healthz, a scrape of /metrics or
	// the dashboard's files every few seconds would each be a trace, and
	// bury the requests' under them.
	for _, rt := range s.apiRoutes() {
		mw := []func(http.Handler) http.Handler{s.cfg.Telemetry.Middleware, s.authorize(rt.role)}
		if rt.touches() {
			mw = append(mw, s.touchQueue)
		}
		r.With(mw...).MethodFunc(rt.method, rt.pattern, rt.handle)
	}
}

// registerUIRoutes mounts the built-in dashboard at /ui/. Its static files
// need no key: the page asks for one and sends it on each API call, where
// the routes above check it.
func registerUIRoutes(r chi.Router) {
	r.Get("/ui", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/ui/", http.StatusMovedPermanently)
	})
	// The file server sees paths without /ui; its 404 names the path asked for.
	missing := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r = r.Clone(r.Context())
		r.URL.Path, r.URL.RawPath = "/ui"+r.URL.Path, ""
		notFound(w, r)
	})
	r.Method(http.MethodGet, "/ui/*", http.StripPrefix("/ui", ui.Handler(missing)))
}

// answerHead answers HEAD wherever GET is answered, as net/http users
// expect: chi's middleware.GetHead routes a HEAD with no route of its own
// to the GET handler (and a path without GET to methodNotAllowed, whose
// Allow lists HEAD beside GET), and net/http sends no body. A handler that
// would go on after its headers (an event stream) is stopped once they
// are written: its request's context ends there, as when a client leaves.
func answerHead(next http.Handler) http.Handler {
	get := middleware.GetHead(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodHead {
			next.ServeHTTP(w, r)
			return
		}
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		get.ServeHTTP(&headWriter{ResponseWriter: w, headed: cancel}, r.WithContext(ctx))
	})
}

// headWriter calls headed once a final status is written.
type headWriter struct {
	http.ResponseWriter
	headed func()
}

func (w *headWriter) WriteHeader(status int) {
	w.ResponseWriter.WriteHeader(status)
	if status >= http.StatusOK {
		w.headed()
	}
}

func (w *headWriter) Write(p []byte) (int, error) {
	w.headed() // a Write without WriteHeader sends 200
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection (Flush, deadlines).
func (w *headWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
