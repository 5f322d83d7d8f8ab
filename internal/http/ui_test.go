package http

import (
	"net/http"
	"strings"
	"testing"

	"github.com/echo-mq/echo_mq/internal/auth"
)

// TestTheDashboardNeedsNoKey: with API keys set, the dashboard's page and
// files are served to anyone (the page asks for a key itself), while the
// API it calls still refuses a request without one.
func TestTheDashboardNeedsNoKey(t *testing.T) {
	t.Parallel()
	h, _ := keyedHandler(t)

	if rec := send(t, h, "GET", "/ui", "", ""); rec.Code != http.StatusMovedPermanently || rec.Header().Get("Location") != "/ui/" {
		t.Errorf("GET /ui: %d to %q, want 301 to /ui/", rec.Code, rec.Header().Get("Location"))
	}
	page := send(t, h, "GET", "/ui/", "", "")
	if page.Code != http.StatusOK || !strings.HasPrefix(page.Header().Get("Content-Type"), "text/html") ||
		!strings.Contains(page.Body.String(), "<table") {
		t.Fatalf("GET /ui/ without a key: %d %q, want the dashboard's page", page.Code, page.Header().Get("Content-Type"))
	}
	if csp := page.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
		t.Errorf("GET /ui/: Content-Security-Policy %q, want the strict one", csp)
	}
	for path, ctype := range map[string]string{"/ui/app.js": "text/javascript", "/ui/style.css": "text/css"} {
		if rec := send(t, h, "GET", path, "", ""); rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), ctype) {
			t.Errorf("GET %s without a key: %d %q, want 200 %s", path, rec.Code, rec.Header().Get("Content-Type"), ctype)
		}
	}
	if rec := send(t, h, "GET", "/queues", "", ""); rec.Code != http.StatusUnauthorized {
		t.Errorf("GET /queues without a key: %d, want 401", rec.Code)
	}
	if rec := send(t, h, "GET", "/queues", testKeys[auth.Reader], ""); rec.Code != http.StatusOK {
		t.Errorf("GET /queues with a reader key: %d %s, want 200", rec.Code, rec.Body)
	}
	missing := send(t, h, "GET", "/ui/nope.js", "", "")
	if missing.Code != http.StatusNotFound || !strings.Contains(missing.Body.String(), "EMQNOTFOUND") {
		t.Errorf("GET /ui/nope.js: %d %s, want 404 EMQNOTFOUND", missing.Code, missing.Body)
	}
	if rec := send(t, h, "POST", "/ui/", "", ""); rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /ui/: %d, want 405", rec.Code)
	}
}
