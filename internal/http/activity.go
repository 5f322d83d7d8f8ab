package http

import (
	"context"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5/middleware"

	"github.com/echo-mq/echo_mq/internal/auth"
)

// touchQueue records that the request's queue has traffic (the activity
// index) once the handler has answered it with success: so every change a
// worker or an operator makes, and every claim, keeps its queue in GET
// /events and the metrics' depth, and a refused request still changes
// nothing. Readers' requests change nothing and touch nothing. A touch of a
// queue this process touched within seconds costs no round trip; one that
// fails is counted as a Redis error, and the answer stands.
func (s *server) touchQueue(next http.Handler) http.Handler {
	if s.cfg.Activity == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ww, ok := w.(middleware.WrapResponseWriter) // logRequests's, or the telemetry's
		if !ok {
			ww = middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		}
		next.ServeHTTP(ww, r)
		if ww.Status() >= 400 || r.Context().Err() != nil {
			return
		}
		if err := s.cfg.Activity.Touch(r.Context(), pathParam(r, "queue")); err != nil && s.cfg.Metrics != nil {
			s.cfg.Metrics.RedisError()
		}
	})
}

// touches reports whether the route's successes are its queue's traffic:
// a worker's or an operator's route that names a queue, but for the
// obliterate, which lets the queue go.
func (rt route) touches() bool {
	return rt.role >= auth.Worker && strings.HasPrefix(rt.pattern, "/queues/{queue}") &&
		!(rt.method == http.MethodDelete && rt.pattern == "/queues/{queue}")
}

// forgetQueue lets an obliterated queue go from the activity index (GET
// /events, the metrics' depth) and deletes its series of this replica's
// metrics.
func (s *server) forgetQueue(r *http.Request, queue string) {
	if s.cfg.Activity != nil {
		if err := s.cfg.Activity.Drop(context.WithoutCancel(r.Context()), queue); err != nil {
			s.log.Warn("Cannot take an obliterated queue out of the activity index; it leaves within an hour",
				"queue", queue, "error", err, "request_id", middleware.GetReqID(r.Context()))
		}
	}
	if s.cfg.Metrics != nil {
		s.cfg.Metrics.ForgetQueue(queue)
	}
}
