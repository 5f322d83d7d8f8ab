package http_test

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"testing"

	emqhttp "github.com/echo-mq/echo_mq/internal/http"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

func (h *harness) sweep(tb testing.TB, q string, body any) swept {
	tb.Helper()
	return must[swept](tb, h.do(tb, "POST", "/queues/"+q+"/sweep", body), http.StatusOK)
}

func TestSweepLists(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "busy", "slow", "cancelme")
		h.claimOne(t, q, "busy", 60_000)
		h.claimOne(t, q, "slow", 100)
		h.claimOne(t, q, "cancelme", 100)
		must[jobView](t, h.cancel(t, q, "cancelme", nil), http.StatusAccepted)
		s := h.sweepUntil(t, q, nil, "slow", "cancelme")
		if fmt.Sprint(s.Recovered, s.Dead, s.Cancelled) != "[slow] [] [cancelme]" {
			t.Errorf("sweep moved %+v, want slow recovered and cancelme cancelled", s)
		}
		h.wantState(t, q, "busy", "active")
		if j := h.wantState(t, q, "slow", "pending"); j.Stalled != 1 || j.LeaseExpiresAt != "" {
			t.Errorf("recovered job %+v, want stalled 1 and no lease", j)
		}
		r := h.do(t, "POST", "/queues/"+q+"/sweep", nil)
		if got := string(r.Body); r.Status != 200 || got != "{\"recovered\":[],\"dead\":[],\"cancelled\":[],\"retried\":[]}\n" {
			t.Errorf("an idle sweep got %s, want four empty lists", r)
		}
	})
}

// TestSweepThreshold: one stall is a slow worker, the second a poison job.
func TestSweepThreshold(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "poison")
		h.claimOne(t, q, "poison", 100)
		h.add(t, q, "b", "c")
		if s := h.sweepUntil(t, q, nil, "poison"); fmt.Sprint(s.Recovered) != "[poison]" {
			t.Fatalf("first sweep moved %+v, want poison recovered", s)
		}
		again := h.claimOne(t, q, "poison", 100)
		if again.Stalled != 1 || again.Attempts != 2 {
			t.Errorf("reclaimed %+v, want stalled 1, attempts 2", again)
		}
		if s := h.sweepUntil(t, q, nil, "poison"); fmt.Sprint(s.Dead) != "[poison]" {
			t.Fatalf("second sweep moved %+v, want poison dead", s)
		}
		j := h.wantState(t, q, "poison", "dead")
		if j.LastError != "stalled" || j.Stalled != 2 || j.FinishedAt == "" {
			t.Errorf("dead job %+v, want last_error stalled, stalled 2, finished_at", j)
		}
		if n := h.rdb.HGet(context.Background(), h.key(q, "meta"), "failed").Val(); n != "1" {
			t.Errorf("failed counter = %q, want 1", n)
		}
	})
}

func TestSweepMaxStalled(t *testing.T) {
	t.Parallel()
	t.Run("per call", func(t *testing.T) {
		t.Parallel()
		forEachBackend(t, func(t *testing.T, h *harness) {
			q := redistest.Queue(t)
			h.add(t, q, "a")
			h.claimOne(t, q, "a", 100)
			if s := h.sweepUntil(t, q, `{"max_stalled":1}`, "a"); fmt.Sprint(s.Dead) != "[a]" {
				t.Errorf("sweep with max_stalled 1 moved %+v, want a dead", s)
			}
		})
	})
	t.Run("per service", func(t *testing.T) {
		t.Parallel()
		forEachBackend(t, func(t *testing.T, h *harness) {
			q := redistest.Queue(t)
			h.add(t, q, "a", "b")
			h.claimOne(t, q, "a", 100)
			if s := h.sweepUntil(t, q, nil, "a"); fmt.Sprint(s.Dead) != "[a]" {
				t.Errorf("sweep of a service with MaxStalled 1 moved %+v, want a dead", s)
			}
			h.claimOne(t, q, "b", 100)
			if s := h.sweepUntil(t, q, `{"max_stalled":3}`, "b"); fmt.Sprint(s.Recovered) != "[b]" {
				t.Errorf("sweep with max_stalled 3 moved %+v, want b recovered", s)
			}
		}, withConfig(func(c *emqhttp.Config) { c.MaxStalled = 1 }))
	})
}

func TestSweepLimit(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "a", "b", "c")
		jobs := h.claim(t, q, `{"count":3,"lease_ms":100}`)
		waitPast(t, jobs[2].LeaseExpiresAt)
		first := h.sweep(t, q, `{"limit":2}`)
		if len(first.all()) != 2 {
			t.Fatalf("sweep with limit 2 moved %+v, want 2 jobs", first)
		}
		rest := h.sweepUntil(t, q, `{"limit":2}`)
		got := append(first.all(), rest.all()...)
		sort.Strings(got)
		if fmt.Sprint(got) != "[a b c]" {
			t.Errorf("sweeps moved %v, want a, b and c once each", got)
		}
	})
}

func TestJobGetAndRemove(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "p", "act")
		if j := h.get(t, q, "p"); j.ID != "p" || j.Queue != q || j.State != "pending" {
			t.Errorf("GET got %+v, want pending p of %s", j, q)
		}
		wantProblem(t, h.do(t, "GET", jobPath(q, "nope"), nil), 404, "EMQGONE")
		wantProblem(t, h.do(t, "DELETE", jobPath(q, "nope"), nil), 404, "EMQGONE")

		if r := must[map[string]int](t, h.do(t, "DELETE", jobPath(q, "p"), nil), 200); r["removed"] != 1 {
			t.Errorf("DELETE answered %v, want removed 1", r)
		}
		wantProblem(t, h.do(t, "GET", jobPath(q, "p"), nil), 404, "EMQGONE")
		if h.inSet(t, q, "pending", "p") || h.rdb.Exists(context.Background(), h.key(q, "job:p")).Val() != 0 {
			t.Error("the removed job is still in pending or its row is left")
		}

		c := h.claimOne(t, q, "act", 30_000)
		before := h.snapshot(t)
		wantProblem(t, h.do(t, "DELETE", jobPath(q, "act"), nil), 409, "EMQSTATE")
		wantProblem(t, h.do(t, "DELETE", jobPath(q, "act")+"?force=false", nil), 409, "EMQSTATE")
		h.unchanged(t, before, "DELETE of an active job without force")
		must[map[string]int](t, h.do(t, "DELETE", jobPath(q, "act")+"?force=true", nil), 200)
		if h.inSet(t, q, "active", "act") {
			t.Error("the force-removed job is still active")
		}
		wantProblem(t, h.complete(t, q, "act", c.Token, ""), 404, "EMQGONE")
		wantProblem(t, h.extend(t, q, "act", c.Token, 1000, ""), 404, "EMQGONE")
		wantProblem(t, h.fail(t, q, "act", c.Token, `,"error":"x"`), 404, "EMQGONE")
		if s := h.sweep(t, q, nil); len(s.all()) != 0 {
			t.Errorf("sweep after the removal moved %+v", s)
		}
	})
}
