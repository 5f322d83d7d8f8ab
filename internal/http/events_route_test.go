package http_test

import (
	"mime"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/echo-mq/echo_mq/internal/redistest"
)

// TestEventStreamThroughTheRouter reads a queue's event stream through the
// service's router on every backend, as a dashboard does, so that the
// contract check (CheckContract) sees a real stream: each event's data must
// be an Event of api/openapi.yaml, named by its kind. events_test.go tests
// the stream itself.
func TestEventStreamThroughTheRouter(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "a")
		j := h.claimOne(t, q, "a", 30_000)
		must[jobView](t, h.do(t, "POST", jobPath(q, "a", "complete"), map[string]any{"token": j.Token}), http.StatusOK)
		h.stop() // the stream sends what the queue retains, then ends as at shutdown
		r := h.do(t, "GET", "/queues/"+q+"/events?from=0", nil)
		if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); r.Status != http.StatusOK || mt != "text/event-stream" {
			t.Fatalf("GET events got %d %q, want 200 text/event-stream", r.Status, r.Header.Get("Content-Type"))
		}
		var kinds []string
		for _, line := range strings.Split(string(r.Body), "\n") {
			if kind, ok := strings.CutPrefix(line, "event: "); ok {
				kinds = append(kinds, kind)
			}
		}
		if want := []string{"enqueued", "claimed", "completed"}; !slices.Equal(kinds, want) {
			t.Errorf("the stream sent events %q, want %q", kinds, want)
		}
	})
}
