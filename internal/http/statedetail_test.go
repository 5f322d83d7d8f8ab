package http_test

import (
	"net/http"
	"testing"

	"github.com/echo-mq/echo_mq/internal/redistest"
)

// A verb refused for the job's state says the state and what to do
// instead, not only that the verb does not apply.
func TestAStateRefusalNamesTheStateAndTheWayOut(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "done")
		h.finish(t, q, "done")
		h.add(t, q, "active", "pending")
		h.claimOne(t, q, "active", 30_000)
		for _, tc := range []struct {
			method, path, detail string
		}{
			{"DELETE", jobPath(q, "active"), "job active is active; remove it with ?force=true, or cancel it first"},
			{"POST", jobPath(q, "pending", "promote"), "job pending is pending; only a delayed job can be promoted"},
			{"POST", jobPath(q, "pending", "retry"), "job pending is pending; only a dead or cancelled job can be retried"},
			{"POST", jobPath(q, "done", "cancel"), "job done is completed; a finished job cannot be cancelled (remove it to delete it)"},
		} {
			if p := wantProblem(t, h.do(t, tc.method, tc.path, `{}`), http.StatusConflict, "EMQSTATE"); p.Detail != tc.detail {
				t.Errorf("%s %s: detail %q, want %q", tc.method, tc.path, p.Detail, tc.detail)
			}
		}
	})
}
