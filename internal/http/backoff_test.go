package http_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/redistest"
)

// A backoff that names no delay_ms waits the documented default, a second,
// whatever its type; one of 0 retries at once; a cap below the delay in
// force is refused.
func TestABackoffWithoutADelayWaitsTheDefault(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		for id, backoff := range map[string]string{
			"fixed": `{"type":"fixed"}`, "exponential": `{"type":"exponential"}`, "now": `{"type":"fixed","delay_ms":0}`,
		} {
			q := redistest.Queue(t)
			h.enqueue(t, q, `{"id":"`+id+`","payload":1,"backoff":`+backoff+`}`)
			c := h.claimOne(t, q, id, 30_000)
			j := must[jobView](t, h.fail(t, q, id, c.Token, `,"error":"e"`), http.StatusOK)
			if id == "now" {
				if j.State != "pending" {
					t.Errorf("%s: failed to %s, want pending at once", id, j.State)
				}
				continue
			}
			got := parseStamp(t, j.RunAt).Sub(parseStamp(t, c.StartedAt))
			if j.State != "delayed" || got < time.Second || got > 6*time.Second {
				t.Errorf("%s: failed to %s, retry in %v; want delayed a second", id, j.State, got)
			}
		}
		q := redistest.Queue(t)
		p := wantProblem(t, h.do(t, "POST", jobsPath(q), `{"payload":1,"backoff":{"type":"fixed","delay_ms":600,"max_delay_ms":500}}`),
			http.StatusBadRequest, "EMQINVALID")
		wantField(t, p, "backoff.max_delay_ms")
		// A cap below the default delay caps it.
		h.enqueue(t, q, `{"id":"capped","payload":1,"backoff":{"type":"fixed","max_delay_ms":300}}`)
		c := h.claimOne(t, q, "capped", 30_000)
		j := must[jobView](t, h.fail(t, q, "capped", c.Token, `,"error":"e"`), http.StatusOK)
		if got := parseStamp(t, j.RunAt).Sub(parseStamp(t, c.StartedAt)); got < 300*time.Millisecond || got > 5*time.Second {
			t.Errorf("capped: retry in %v, want 300 ms", got)
		}
	})
}
