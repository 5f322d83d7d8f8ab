package http

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/echo-mq/echo_mq/internal/auth"
)

// TestForbiddenNamesRolesWithTheirArticle: a 403 says which key was sent
// and which is needed, "an admin key" as "a reader key".
func TestForbiddenNamesRolesWithTheirArticle(t *testing.T) {
	t.Parallel()
	h, _ := keyedHandler(t)
	for _, tc := range []struct {
		role         auth.Role
		method, path string
		want         string
	}{
		{auth.Reader, "POST", "/queues/q/pause", "a reader key may not do this; it needs an admin key"},
		{auth.Worker, "POST", "/queues/q/pause", "a worker key may not do this; it needs an admin key"},
		{auth.Reader, "POST", "/queues/q/claim", "a reader key may not do this; it needs a worker key"},
	} {
		rec := send(t, h, tc.method, tc.path, testKeys[tc.role], "{}")
		var p Problem
		if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || rec.Code != http.StatusForbidden || p.Detail != tc.want {
			t.Errorf("%s %s as %v: %d %q, want 403 %q", tc.method, tc.path, tc.role, rec.Code, p.Detail, tc.want)
		}
	}
}
