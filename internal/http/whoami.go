package http

import (
	"net/http"

	"github.com/echo-mq/echo_mq/internal/auth"
)

// WhoAmI is what the service knows of the key a request came with, so that
// a dashboard can offer only what the key may do.
type WhoAmI struct {
	// The key's role: reader, worker or admin (admin while the API
	// is open).
	Role string `json:"role" binding:"required" enums:"reader,worker,admin" example:"admin"`
	// Names the key as logs and events do: the name EMQ_API_KEYS gives
	// it, or its role and its place in the list ("worker-2"); "anonymous"
	// while the API is open. Never the key, nor anything computed from it.
	Key string `json:"key" binding:"required" example:"ci-deploy"`
	// True when the service has no keys: everyone may do anything.
	Open bool `json:"open" binding:"required" example:"false"`
} // @name WhoAmI

// handleWhoAmI godoc
//
//	@Summary		The key's role
//	@Description	Who the request's key is: its role and its name in logs and events. Any valid key may ask; a dashboard uses it to hide what the key may not do.
//	@ID				whoAmI
//	@Tags			service
//	@Security		BearerAuth
//	@Security		Signature
//	@Produce		application/problem+json
//	@Produce		json
//	@Success		200	{object}	WhoAmI
//	@Router			/whoami [get]
func (s *server) handleWhoAmI(w http.ResponseWriter, r *http.Request) {
	key, ok := r.Context().Value(keyContext{}).(auth.Key)
	if !ok {
		key = anonymous
	}
	writeJSON(w, http.StatusOK, WhoAmI{Role: key.Role.String(), Key: key.Name, Open: s.cfg.Keys == nil || s.cfg.Keys.Open()})
}
