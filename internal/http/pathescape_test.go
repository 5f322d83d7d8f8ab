package http_test

import (
	"net/http"
	"testing"

	"github.com/echo-mq/echo_mq/internal/redistest"
)

// A client that percent-escapes path segments (JavaScript's
// encodeURIComponent, Python's quote(safe="")) reaches the same job as one
// that sends the characters as they are.
func TestEscapedPathParameters(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.enqueue(t, q, `{"id":"order:1","payload":{"n":1}}`)

		got := must[jobView](t, h.do(t, "GET", "/queues/"+q+"/jobs/order%3A1", nil), http.StatusOK)
		if got.ID != "order:1" {
			t.Errorf("escaped id read job %q, want order:1", got.ID)
		}
		must[jobView](t, h.do(t, "GET", "/queues/"+q+"/jobs/order%3a1", nil), http.StatusOK)

		// An escape never smuggles a character the id may not hold.
		wantProblem(t, h.do(t, "GET", "/queues/"+q+"/jobs/a%2Fb", nil), http.StatusBadRequest, "EMQINVALID")
		wantProblem(t, h.do(t, "GET", "/queues/"+q+"/jobs/a%7Bb", nil), http.StatusBadRequest, "EMQINVALID")
		wantProblem(t, h.do(t, "GET", "/queues/"+q+"/jobs/b%61tch", nil), http.StatusBadRequest, "EMQINVALID")
		wantProblem(t, h.do(t, "GET", "/queues/"+q+"%7D/jobs/order:1", nil), http.StatusBadRequest, "EMQINVALID")
	})
}
