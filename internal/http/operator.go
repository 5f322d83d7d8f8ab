package http

import (
	"net/http"

	"github.com/go-chi/chi/v5/middleware"
)

// audit logs an operator action: who, what, on what, when (the log's
// time). The scripts write the same action to the queue's event stream.
func (s *server) audit(r *http.Request, action string, attrs ...any) {
	by := actorOf(r)
	s.log.Info("Operator action", append([]any{"action", action, "actor", by.Name, "role", by.Role,
		"request_id", middleware.GetReqID(r.Context())}, attrs...)...)
}
