package http_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/echo-mq/echo_mq/internal/redistest"
)

// cancel cancels job id of q with body.
func (h *harness) cancel(tb testing.TB, q, id string, body any) reply {
	tb.Helper()
	return h.do(tb, "POST", jobPath(q, id, "cancel"), body)
}

func TestCancelWaiting(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, enqueue string }{
		{"pending", `{"id":"a","payload":1}`},
		{"delayed", `{"id":"a","payload":1,"delay_ms":60000}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			forEachBackend(t, func(t *testing.T, h *harness) {
				q := redistest.Queue(t)
				h.enqueue(t, q, tc.enqueue)
				j := must[jobView](t, h.cancel(t, q, "a", `{"reason":"not needed"}`), http.StatusOK)
				if j.State != "cancelled" || j.CancelReason != "not needed" || j.FinishedAt == "" || j.RunAt != "" {
					t.Errorf("got %+v, want cancelled with its reason, finished_at and no run_at", j)
				}
				h.wantState(t, q, "a", "cancelled")
				if jobs := h.claim(t, q, nil); len(jobs) != 0 {
					t.Errorf("claim got the cancelled job: %v", ids(jobs))
				}
				again := must[jobView](t, h.cancel(t, q, "a", nil), http.StatusOK)
				if again.State != "cancelled" {
					t.Errorf("cancelling a cancelled job got %+v, want it cancelled", again)
				}
			})
		})
	}
}

func TestCancelActive(t *testing.T) {
	t.Parallel()
	for _, pinned := range []bool{false, true} {
		t.Run(fmt.Sprintf("pinned=%v", pinned), func(t *testing.T) {
			t.Parallel()
			forEachBackend(t, func(t *testing.T, h *harness) {
				q := redistest.Queue(t)
				h.add(t, q, "a")
				c := h.claimOne(t, q, "a", 30_000)
				body := map[string]any{"reason": "user left"}
				if pinned {
					body["token"] = c.Token
				}
				j := must[jobView](t, h.cancel(t, q, "a", body), http.StatusAccepted)
				if j.State != "active" || !j.CancelRequested || j.CancelReason != "user left" {
					t.Errorf("got %+v, want active with the cancel requested", j)
				}
				h.wantState(t, q, "a", "active")
				e := must[extended](t, h.extend(t, q, "a", c.Token, 30_000, ""), http.StatusOK)
				if !e.CancelRequested || e.CancelReason != "user left" {
					t.Errorf("extend got %+v, want the cancel and its reason", e)
				}
				check := h.do(t, "GET", fmt.Sprintf("%s?token=%d", jobPath(q, "a", "cancellation"), c.Token), nil)
				if got := must[cancellation](t, check, http.StatusOK); !got.CancelRequested || got.CancelReason != "user left" {
					t.Errorf("cancellation got %+v, want the cancel and its reason", got)
				}
			})
		})
	}
}

func TestCancelThenHolderReports(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, verb, body, state string }{
		{"fail", "fail", `,"error":"stopped","retry_in_ms":0`, "cancelled"},
		{"complete", "complete", `,"result":"done anyway"`, "completed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			forEachBackend(t, func(t *testing.T, h *harness) {
				q := redistest.Queue(t)
				h.add(t, q, "a")
				c := h.claimOne(t, q, "a", 30_000)
				must[jobView](t, h.cancel(t, q, "a", nil), http.StatusAccepted)
				r := h.do(t, "POST", jobPath(q, "a", tc.verb), fmt.Sprintf(`{"token":%d%s}`, c.Token, tc.body))
				if j := must[jobView](t, r, http.StatusOK); j.State != tc.state {
					t.Errorf("%s after a cancel got %+v, want %s", tc.verb, j, tc.state)
				}
				h.wantState(t, q, "a", tc.state)
			})
		})
	}
}

func TestCancelPinnedToOldAttempt(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "a")
		t1 := h.claimOne(t, q, "a", 30_000).Token
		must[jobView](t, h.fail(t, q, "a", t1, `,"error":"x","retry_in_ms":0`), http.StatusOK)
		before := h.snapshot(t)
		wantProblem(t, h.cancel(t, q, "a", map[string]any{"token": t1}), 409, "EMQSTALE")
		h.unchanged(t, before, "a cancel pinned to an attempt of a pending job")
		t2 := h.claimOne(t, q, "a", 30_000).Token
		wantProblem(t, h.cancel(t, q, "a", map[string]any{"token": t1, "reason": "old"}), 409, "EMQSTALE")
		j := h.wantState(t, q, "a", "active")
		if j.CancelRequested || j.CancelReason != "" {
			t.Errorf("a cancel pinned to the old attempt marked the new one: %+v", j)
		}
		must[jobView](t, h.cancel(t, q, "a", map[string]any{"token": t2}), http.StatusAccepted)
	})
}

func TestCancelRefused(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "done", "dead")
		cd := h.claimOne(t, q, "done", 30_000)
		must[jobView](t, h.complete(t, q, "done", cd.Token, ""), http.StatusOK)
		cx := h.claimOne(t, q, "dead", 30_000)
		must[jobView](t, h.fail(t, q, "dead", cx.Token, `,"error":"x","fatal":true`), http.StatusOK)
		for id, state := range map[string]string{"done": "completed", "dead": "dead"} {
			before := h.snapshot(t)
			wantProblem(t, h.cancel(t, q, id, `{"reason":"too late"}`), 409, "EMQSTATE")
			h.unchanged(t, before, "cancel of a "+state+" job")
		}
		wantProblem(t, h.cancel(t, q, "nope", nil), 404, "EMQGONE")
	})
}

func TestCancelRequestedLeaseLapses(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "a")
		c := h.claimOne(t, q, "a", 100)
		must[jobView](t, h.cancel(t, q, "a", `{"reason":"r"}`), http.StatusAccepted)
		s := h.sweepUntil(t, q, nil, "a")
		if fmt.Sprint(s.Cancelled) != "[a]" || len(s.Recovered)+len(s.Dead) != 0 {
			t.Errorf("sweep moved %+v, want a cancelled", s)
		}
		h.wantState(t, q, "a", "cancelled")
		wantProblem(t, h.extend(t, q, "a", c.Token, 1000, ""), 409, "EMQSTALE")
	})
}
