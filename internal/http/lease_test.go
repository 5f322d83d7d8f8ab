package http_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/echo-mq/echo_mq/internal/redistest"
)

type extended struct {
	LeaseExpiresAt  string `json:"lease_expires_at"`
	CancelRequested bool   `json:"cancel_requested"`
	CancelReason    string `json:"cancel_reason"`
}

// extend checkpoints job id of q under token.
func (h *harness) extend(tb testing.TB, q, id string, token int64, leaseMs int, progress string) reply {
	tb.Helper()
	body := fmt.Sprintf(`{"token":%d,"lease_ms":%d}`, token, leaseMs)
	if progress != "" {
		body = fmt.Sprintf(`{"token":%d,"lease_ms":%d,"progress":%s}`, token, leaseMs, progress)
	}
	return h.do(tb, "POST", jobPath(q, id, "lease"), body)
}

func TestExtend(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "a")
		c := h.claimOne(t, q, "a", 1000)
		progress := `{"pct":50,"big":12345678901234567890,"note":"ünïcode"}`
		r := h.extend(t, q, "a", c.Token, 60_000, progress)
		e := must[extended](t, r, http.StatusOK)
		var raw map[string]json.RawMessage
		_ = json.Unmarshal(r.Body, &raw)
		if _, ok := raw["cancel_reason"]; !ok || e.CancelRequested {
			t.Errorf("got %s, want cancel_requested false and cancel_reason present", r.Body)
		}
		old, now := parseStamp(t, c.LeaseExpiresAt), parseStamp(t, e.LeaseExpiresAt)
		if now.Sub(old) < 58_000e6 {
			t.Errorf("lease_expires_at moved from %v to %v, want about 59s later", old, now)
		}
		j := h.wantState(t, q, "a", "active")
		sameJSON(t, "progress", j.Progress, []byte(progress))
		if j.LeaseExpiresAt != e.LeaseExpiresAt {
			t.Errorf("GET lease_expires_at = %s, want %s", j.LeaseExpiresAt, e.LeaseExpiresAt)
		}
		score := h.rdb.ZScore(context.Background(), h.key(q, "active"), "a").Val()
		if int64(score) != now.UnixMilli() {
			t.Errorf("active score = %v, want the new deadline %d", int64(score), now.UnixMilli())
		}
		must[extended](t, h.extend(t, q, "a", c.Token, 1000, ""), http.StatusOK)
		sameJSON(t, "progress after an extend without one", h.get(t, q, "a").Progress, []byte(progress))
	})
}

func TestExtendRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		lose   func(t *testing.T, h *harness, q string, c jobView) // what happens to the holder's job
		status int
		code   string
		state  string
	}{
		{"ok", func(*testing.T, *harness, string, jobView) {}, 200, "", "active"},
		{"lapsed, not swept", func(t *testing.T, h *harness, q string, c jobView) {
			waitPast(t, c.LeaseExpiresAt)
		}, 200, "", "active"},
		{"stale token", func(t *testing.T, h *harness, q string, c jobView) {}, 409, "EMQSTALE", "active"},
		{"swept", func(t *testing.T, h *harness, q string, c jobView) {
			h.sweepUntil(t, q, nil, "a")
		}, 409, "EMQSTALE", "pending"},
		{"completed", func(t *testing.T, h *harness, q string, c jobView) {
			must[jobView](t, h.do(t, "POST", jobPath(q, "a", "complete"), map[string]any{"token": c.Token}), 200)
		}, 409, "EMQSTALE", "completed"},
		{"removed", func(t *testing.T, h *harness, q string, c jobView) {
			must[map[string]int](t, h.do(t, "DELETE", jobPath(q, "a")+"?force=true", nil), 200)
		}, 404, "EMQGONE", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			forEachBackend(t, func(t *testing.T, h *harness) {
				q := redistest.Queue(t)
				h.add(t, q, "a")
				c := h.claimOne(t, q, "a", 100)
				tc.lose(t, h, q, c)
				token := c.Token
				if tc.name == "stale token" {
					token++
				}
				r := h.extend(t, q, "a", token, 60_000, `{"step":2}`)
				if tc.code == "" {
					must[extended](t, r, tc.status)
				} else {
					wantProblem(t, r, tc.status, tc.code)
				}
				if tc.state == "" {
					wantProblem(t, h.do(t, "GET", jobPath(q, "a"), nil), 404, "EMQGONE")
					return
				}
				j := h.wantState(t, q, "a", tc.state)
				if stored := j.Progress != nil; stored != (tc.code == "") {
					t.Errorf("progress %s stored = %v, want %v", j.Progress, stored, tc.code == "")
				}
				if tc.name == "lapsed, not swept" {
					if s := must[swept](t, h.do(t, "POST", "/queues/"+q+"/sweep", nil), 200); len(s.all()) != 0 {
						t.Errorf("a sweep after the extend moved %+v, want nothing", s)
					}
				}
			})
		})
	}
}

// A checkpoint of progress alone (no lease_ms) stores the progress and
// leaves the lease as it stands, answering it; only one with lease_ms
// renews the lease. One with neither is refused.
func TestAProgressOnlyCheckpointLeavesTheLease(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "a")
		c := h.claimOne(t, q, "a", 60_000)
		body := fmt.Sprintf(`{"token":%d,"progress":{"pct":50}}`, c.Token)
		e := must[extended](t, h.do(t, "POST", jobPath(q, "a", "lease"), body), http.StatusOK)
		if e.LeaseExpiresAt != c.LeaseExpiresAt || e.CancelRequested {
			t.Errorf("got %+v, want the claim's lease %s and no cancel", e, c.LeaseExpiresAt)
		}
		j := h.wantState(t, q, "a", "active")
		sameJSON(t, "progress", j.Progress, []byte(`{"pct":50}`))
		if j.LeaseExpiresAt != c.LeaseExpiresAt {
			t.Errorf("GET lease_expires_at = %s, want the claim's %s", j.LeaseExpiresAt, c.LeaseExpiresAt)
		}
		before := h.snapshot(t)
		p := wantProblem(t, h.do(t, "POST", jobPath(q, "a", "lease"), fmt.Sprintf(`{"token":%d}`, c.Token)), http.StatusBadRequest, "EMQINVALID")
		wantMessage(t, p, "lease_ms", "is required without progress")
		h.unchanged(t, before, "a checkpoint of nothing")
	})
}

func TestExtendUnknownJob(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		before := h.snapshot(t)
		wantProblem(t, h.extend(t, q, "nope", 1, 1000, `{"p":1}`), 404, "EMQGONE")
		h.unchanged(t, before, "an extend of an unknown job")
	})
}

type cancellation struct {
	CancelRequested bool   `json:"cancel_requested"`
	CancelReason    string `json:"cancel_reason"`
}

func TestCancellationCheck(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "a")
		c := h.claimOne(t, q, "a", 30_000)
		check := func(token int64) reply {
			return h.do(t, "GET", fmt.Sprintf("%s?token=%d", jobPath(q, "a", "cancellation"), token), nil)
		}
		if got := must[cancellation](t, check(c.Token), 200); got.CancelRequested || got.CancelReason != "" {
			t.Errorf("before a cancel got %+v, want no cancel", got)
		}
		must[jobView](t, h.do(t, "POST", jobPath(q, "a", "cancel"), `{"reason":"customer asked"}`), 202)
		if got := must[cancellation](t, check(c.Token), 200); !got.CancelRequested || got.CancelReason != "customer asked" {
			t.Errorf("after a cancel got %+v, want cancel_requested with the reason", got)
		}
		wantProblem(t, check(c.Token+1), 409, "EMQSTALE")
		wantProblem(t, h.do(t, "GET", jobPath(q, "nope", "cancellation")+"?token=1", nil), 404, "EMQGONE")
		must[jobView](t, h.do(t, "POST", jobPath(q, "a", "complete"), map[string]any{"token": c.Token}), 200)
		wantProblem(t, check(c.Token), 409, "EMQSTALE")
	})
}

// TestFenceAcrossReenqueue is rule 3 (docs/design.md#fencing): a token is never valid for another
// claim, also when the id is removed and enqueued again.
func TestFenceAcrossReenqueue(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "x")
		t1 := h.claimOne(t, q, "x", 30_000).Token
		must[map[string]int](t, h.do(t, "DELETE", jobPath(q, "x")+"?force=true", nil), 200)
		h.add(t, q, "x")
		t2 := h.claimOne(t, q, "x", 30_000).Token
		if t2 == t1 {
			t.Fatalf("the second claim's token %d is the first's", t2)
		}
		calls := []struct {
			name, method, path string
			body               any
		}{
			{"extend", "POST", jobPath(q, "x", "lease"), map[string]any{"token": t1, "lease_ms": 60_000}},
			{"cancellation", "GET", fmt.Sprintf("%s?token=%d", jobPath(q, "x", "cancellation"), t1), nil},
			{"cancel", "POST", jobPath(q, "x", "cancel"), map[string]any{"token": t1}},
			{"fail", "POST", jobPath(q, "x", "fail"), map[string]any{"token": t1, "error": "old", "fatal": true}},
			{"complete", "POST", jobPath(q, "x", "complete"), map[string]any{"token": t1, "result": "old"}},
			{"batch complete", "POST", "/queues/" + q + "/complete", map[string]any{"jobs": []any{map[string]any{"id": "x", "token": t1}}}},
		}
		for _, c := range calls {
			r := h.do(t, c.method, c.path, c.body)
			if c.name == "batch complete" {
				res := must[batchResults](t, r, 200).Results
				if len(res) != 1 || res[0].Code != "EMQSTALE" || res[0].Status != 409 {
					t.Errorf("batch complete with the old token got %s, want its result EMQSTALE", r.Body)
				}
				continue
			}
			if r.Status != 409 {
				t.Errorf("%s with the old token got %s, want 409 EMQSTALE", c.name, r)
				continue
			}
			wantProblem(t, r, 409, "EMQSTALE")
		}
		j := h.wantState(t, q, "x", "active")
		if j.CancelRequested || j.LastError != "" || j.Result != nil {
			t.Errorf("the old holder's calls changed the job: %+v", j)
		}
		done := must[jobView](t, h.do(t, "POST", jobPath(q, "x", "complete"), map[string]any{"token": t2, "result": "new"}), 200)
		if done.State != "completed" {
			t.Errorf("the current holder's complete got %+v, want completed", done)
		}
	})
}
