package http_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/redistest"
)

// headOver sends HEAD path to a real HTTP server over h's handler, and
// answers the response (its body read to the end) or fails after limit.
func headOver(t *testing.T, srv *httptest.Server, path string, limit time.Duration) *http.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatalf("HEAD %s: %v", path, err)
	}
	resp.Body.Close()
	return resp
}

// HEAD is answered wherever GET is: a stream answers its headers and ends
// (and gives back its stream slot), a POST-only route is 405 with an Allow
// that names no GET or HEAD.
func TestHeadRoutes(t *testing.T) {
	t.Parallel()
	h := onRedis(t)
	srv := httptest.NewServer(h.handler)
	defer srv.Close()
	q := redistest.Queue(t)
	h.add(t, q, "a")

	resp := headOver(t, srv, "/queues/"+q+"/claim", 5*time.Second)
	allow := strings.Join(resp.Header.Values("Allow"), ",")
	if resp.StatusCode != http.StatusMethodNotAllowed || strings.Contains(allow, "GET") || strings.Contains(allow, "HEAD") {
		t.Errorf("HEAD claim: %d Allow %q, want 405 Allow POST", resp.StatusCode, allow)
	}
	// More HEADs of a stream than EMQ_MAX_STREAMS (100): each ends and
	// gives its slot back.
	for i := range 110 {
		for _, path := range []string{"/queues/" + q + "/events", "/events"} {
			resp := headOver(t, srv, path, 5*time.Second)
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
				t.Fatalf("HEAD %s #%d: %d %q", path, i, resp.StatusCode, resp.Header.Get("Content-Type"))
			}
		}
	}
	if resp := headOver(t, srv, "/queues/"+q+"/jobs/a", 5*time.Second); resp.StatusCode != http.StatusOK {
		t.Errorf("HEAD job: %d", resp.StatusCode)
	}
	if resp := headOver(t, srv, "/queues/"+q+"/jobs/nope", 5*time.Second); resp.StatusCode != http.StatusNotFound {
		t.Errorf("HEAD missing job: %d", resp.StatusCode)
	}
	if got := h.claim(t, q, nil); len(got) != 1 {
		t.Errorf("after the HEADs the claim got %v, want a: a HEAD changed the queue", ids(got))
	}
}
