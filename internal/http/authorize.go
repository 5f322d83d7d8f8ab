package http

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/echo-mq/echo_mq/internal/admin"
	"github.com/echo-mq/echo_mq/internal/auth"
)

type keyContext struct{}

// anonymous is everyone when no keys are configured: the API is open.
var anonymous = auth.Key{Name: "anonymous", Role: auth.Admin}

// authorize lets a request through when its key's role is at least role:
// 401 EMQUNAUTHORIZED without a valid key (a bearer key, or a signature of
// the body), 403 EMQFORBIDDEN for a key of a lesser role. With no keys
// configured everyone passes as the anonymous admin.
func (s *server) authorize(role auth.Role) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if role == auth.Open {
				next.ServeHTTP(w, r)
				return
			}
			key, err := s.authenticate(r)
			if err != nil {
				s.writeProblem(w, r, err)
				return
			}
			if key.Role < role {
				s.writeProblem(w, r, &requestError{code: CodeForbidden,
					detail: aKey(key.Role) + " may not do this; it needs " + aKey(role)})
				return
			}
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), keyContext{}, key)))
		})
	}
}

// aKey names a key of role with its article: "a reader key", "an admin
// key".
func aKey(role auth.Role) string {
	name := role.String()
	if strings.ContainsAny(name[:1], "aeiou") {
		return "an " + name + " key"
	}
	return "a " + name + " key"
}

// authenticate finds the request's key: the bearer key, or the key that
// signed the body (X-EMQ-Signature, X-EMQ-Timestamp; verifySigned).
func (s *server) authenticate(r *http.Request) (auth.Key, error) {
	keys := s.cfg.Keys
	if keys == nil || keys.Open() {
		return anonymous, nil
	}
	sig := r.Header.Get("X-EMQ-Signature")
	if sig == "" || r.Header.Get("Authorization") != "" {
		key, err := keys.Bearer(r.Header.Get("Authorization"))
		return key, unauthorized(err)
	}
	return s.verifySigned(r, sig)
}

// unauthorized turns an authentication refusal into a 401; other errors
// (Redis, for the replay check) pass through.
func unauthorized(err error) error {
	if errors.Is(err, auth.ErrNoKey) || errors.Is(err, auth.ErrBadKey) || errors.Is(err, auth.ErrBadSignature) {
		return &requestError{code: CodeUnauthorized, detail: err.Error()}
	}
	return err
}

// actorOf is who makes a request, for the audit trail: the key's name and
// role (the anonymous admin while the API is open).
func actorOf(r *http.Request) admin.Actor {
	key, ok := r.Context().Value(keyContext{}).(auth.Key)
	if !ok {
		key = anonymous
	}
	return admin.Actor{Name: key.Name, Role: key.Role.String()}
}
