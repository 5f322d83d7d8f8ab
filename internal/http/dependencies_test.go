package http_test

import (
	"maps"
	"net/http"
	"slices"
	"testing"

	"github.com/echo-mq/echo_mq/internal/redistest"
)

// depJob is an enqueue body of job id that depends on deps.
func depJob(id string, deps ...string) map[string]any {
	body := map[string]any{"id": id, "payload": map[string]string{"id": id}}
	if len(deps) > 0 {
		body["depends_on"] = deps
	}
	return body
}

// finish claims job id of q (the only pending one) and completes it.
func (h *harness) finish(tb testing.TB, q, id string) {
	tb.Helper()
	j := h.claimOne(tb, q, id, 30000)
	must[jobView](tb, h.do(tb, "POST", jobPath(q, id, "complete"), map[string]any{"token": j.Token}), http.StatusOK)
}

// kill claims job id of q (the only pending one) and fails it fatally:
// it is dead.
func (h *harness) kill(tb testing.TB, q, id string) {
	tb.Helper()
	j := h.claimOne(tb, q, id, 30000)
	body := map[string]any{"token": j.Token, "error": "boom", "fatal": true}
	if got := must[jobView](tb, h.do(tb, "POST", jobPath(q, id, "fail"), body), http.StatusOK); got.State != "dead" {
		tb.Fatalf("fail of %s: state %s, want dead", id, got.State)
	}
}

// TestDependencies: a job waits until every job it depends on has
// completed, then is pending; waiting shows in listings and counts, and
// its release is an event.
func TestDependencies(t *testing.T) {
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := "deps"
		h.add(t, q, "a", "b")
		c := h.enqueue(t, q, depJob("c", "a", "b"))
		if c.State != "waiting" || !slices.Equal(c.DependsOn, []string{"a", "b"}) || c.OnDepFailure != "cancel" {
			t.Fatalf("c enqueued %+v, want waiting on a, b with on_dependency_failure cancel", c)
		}
		h.wantState(t, q, "c", "waiting")
		page := must[jobPage](t, h.do(t, "GET", jobsPath(q)+"?state=waiting", nil), http.StatusOK)
		if !slices.Equal(ids(page.Jobs), []string{"c"}) {
			t.Errorf("waiting listing %v, want [c]", ids(page.Jobs))
		}
		info := must[queueView](t, h.do(t, "GET", "/queues/"+q, nil), http.StatusOK)
		if info.Counts["waiting"] != 1 || info.Counts["pending"] != 2 {
			t.Errorf("counts %v, want waiting 1, pending 2", info.Counts)
		}
		h.finish(t, q, "a")
		h.wantState(t, q, "c", "waiting")
		h.finish(t, q, "b")
		h.wantState(t, q, "c", "pending")
		if got := entriesOf(h.streamEntries(t, q), "released", "c"); len(got) != 1 || got[0]["state"] != "pending" {
			t.Errorf("released events of c: %v, want one, pending", got)
		}
		h.finish(t, q, "c")
	})
}

// TestDependencyDiamond: b and c depend on a, d on b and c; a completes
// and releases both, and d runs only after both completed.
func TestDependencyDiamond(t *testing.T) {
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := "diamond"
		body := map[string]any{"jobs": []any{depJob("d", "b", "c"), depJob("b", "a"), depJob("c", "a"), depJob("a")}}
		jobs := must[jobList](t, h.do(t, "POST", jobsPath(q)+"/batch", body), http.StatusOK).Jobs
		for i, want := range []string{"waiting", "waiting", "waiting", "pending"} {
			if jobs[i].State != want {
				t.Fatalf("job %s enqueued %s, want %s", jobs[i].ID, jobs[i].State, want)
			}
		}
		h.finish(t, q, "a")
		h.wantState(t, q, "b", "pending")
		h.wantState(t, q, "c", "pending")
		h.wantState(t, q, "d", "waiting")
		h.finish(t, q, "b")
		h.wantState(t, q, "d", "waiting")
		h.finish(t, q, "c")
		h.wantState(t, q, "d", "pending")
	})
}

// TestDependencyFailure: a dependency that dies cancels its dependants
// with the reason, and theirs in turn; one with on_dependency_failure
// "run" runs anyway. A dependency dead already at the enqueue does the
// same at once, and one completed already counts as done.
func TestDependencyFailure(t *testing.T) {
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := "depfail"
		h.add(t, q, "a")
		h.enqueue(t, q, depJob("b", "a"))
		h.enqueue(t, q, depJob("c", "b"))
		runs := depJob("r", "a")
		runs["on_dependency_failure"] = "run"
		h.enqueue(t, q, runs)
		h.kill(t, q, "a")
		if b := h.wantState(t, q, "b", "cancelled"); b.CancelReason != "dependency a dead" {
			t.Errorf("b cancel_reason %q, want %q", b.CancelReason, "dependency a dead")
		}
		if c := h.wantState(t, q, "c", "cancelled"); c.CancelReason != "dependency b cancelled" {
			t.Errorf("c cancel_reason %q, want %q", c.CancelReason, "dependency b cancelled")
		}
		h.wantState(t, q, "r", "pending")
		h.finish(t, q, "r")

		late := must[jobView](t, h.do(t, "POST", jobsPath(q), depJob("late", "a")), http.StatusCreated)
		if late.State != "cancelled" || late.CancelReason != "dependency a dead" {
			t.Errorf("a job enqueued on a dead dependency: %s %q, want cancelled, dependency a dead", late.State, late.CancelReason)
		}
		after := must[jobView](t, h.do(t, "POST", jobsPath(q), depJob("after", "r")), http.StatusCreated)
		if after.State != "pending" {
			t.Errorf("a job enqueued on a completed dependency: %s, want pending", after.State)
		}
	})
}

// TestDependencyCancelAndRemove: a waiting job can be cancelled (then it
// is never released), and a dependency removed before it ended cancels
// its dependants: "dependency <id> removed".
func TestDependencyCancelAndRemove(t *testing.T) {
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := "depcancel"
		h.add(t, q, "a")
		h.enqueue(t, q, depJob("b", "a"))
		h.enqueue(t, q, depJob("c", "a"))
		must[map[string]any](t, h.do(t, "POST", jobPath(q, "b", "cancel"), map[string]any{}), http.StatusOK)
		h.wantState(t, q, "b", "cancelled")
		must[map[string]any](t, h.do(t, "DELETE", jobPath(q, "a"), nil), http.StatusOK)
		if c := h.wantState(t, q, "c", "cancelled"); c.CancelReason != "dependency a removed" {
			t.Errorf("c cancel_reason %q, want %q", c.CancelReason, "dependency a removed")
		}
		h.wantState(t, q, "b", "cancelled")
	})
}

// TestDependencyRefusals: an unknown id, a cycle, a job on itself, a
// repeated id and the options that do not go with depends_on are 400,
// and nothing is written.
func TestDependencyRefusals(t *testing.T) {
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := "deprefuse"
		h.add(t, q, "a")
		before := h.snapshot(t)
		for _, c := range []struct {
			name, path, field string
			body              any
		}{
			{"unknown", jobsPath(q), "depends_on", depJob("x", "nope")},
			{"itself", jobsPath(q), "depends_on", depJob("x", "x")},
			{"twice", jobsPath(q), "depends_on", depJob("x", "a", "a")},
			{"cycle", jobsPath(q) + "/batch", "jobs[0].depends_on",
				map[string]any{"jobs": []any{depJob("x", "y"), depJob("y", "z"), depJob("z", "x")}}},
			{"unknown in a batch", jobsPath(q) + "/batch", "jobs[1].depends_on",
				map[string]any{"jobs": []any{depJob("x"), depJob("y", "x", "nope")}}},
			{"group", jobsPath(q), "depends_on", map[string]any{"payload": 1, "depends_on": []string{"a"}, "group": "g"}},
			{"dedupe", jobsPath(q), "depends_on", map[string]any{"payload": 1, "depends_on": []string{"a"},
				"dedupe": map[string]any{"key": "k", "mode": "until_done"}}},
			{"expires", jobsPath(q), "depends_on", map[string]any{"payload": 1, "depends_on": []string{"a"}, "expires_in_ms": 10}},
			{"failure alone", jobsPath(q), "on_dependency_failure", map[string]any{"payload": 1, "on_dependency_failure": "run"}},
			{"bad failure", jobsPath(q), "on_dependency_failure", map[string]any{"payload": 1, "depends_on": []string{"a"}, "on_dependency_failure": "maybe"}},
			{"bad id", jobsPath(q), "depends_on[0]", map[string]any{"payload": 1, "depends_on": []string{"no space"}}},
		} {
			p := wantProblem(t, h.do(t, "POST", c.path, c.body), http.StatusBadRequest, "EMQINVALID")
			if c.field != "" {
				wantField(t, p, c.field)
			}
		}
		h.unchanged(t, before, "refused dependencies")
	})
}

// TestDrainAndObliterateLinked: a drain removes waiting jobs too, counts
// the batch's drained jobs cancelled (so the batch is done and owes its
// callback) and cancels the dependants of a drained job; an obliterate
// leaves no key of batches or dependencies behind.
func TestDrainAndObliterateLinked(t *testing.T) {
	forEachBackend(t, func(t *testing.T, h *harness) {
		q, cbq := "drained", "drained-cb"
		h.add(t, q, "a")
		h.claimOne(t, q, "a", 30000) // active: a drain leaves it
		body := map[string]any{"id": "d", "callback": map[string]any{"queue": cbq},
			"jobs": []any{depJob("b1"), depJob("b2", "b1"), depJob("w", "a")}}
		must[batchView](t, h.do(t, "POST", batchesPath(q), body), http.StatusCreated)
		must[map[string]any](t, h.operate(t, q, "drain"), http.StatusOK)
		info := must[queueView](t, h.do(t, "GET", "/queues/"+q, nil), http.StatusOK)
		if !maps.Equal(info.Counts, counts(map[string]int64{"active": 1})) {
			t.Errorf("counts after the drain %v, want only the active job", info.Counts)
		}
		h.callbackOf(t, cbq, "d")
		b := must[batchView](t, h.do(t, "GET", batchesPath(q, "d"), nil), http.StatusOK)
		if b.State != "done" || b.Counts["cancelled"] != 3 {
			t.Errorf("the drained batch %+v, want done with 3 cancelled", b)
		}

		h.add(t, q, "x")
		h.enqueue(t, q, depJob("y", "x"))
		must[batchView](t, h.do(t, "POST", batchesPath(q), map[string]any{"id": "e", "open": true, "jobs": []any{}}), http.StatusCreated)
		must[map[string]int](t, h.do(t, "DELETE", "/queues/"+q+"?force=true", nil), http.StatusOK)
		if keys := h.keysOf(t, q, ":*"); len(keys) != 0 {
			t.Errorf("keys left after the obliterate: %v", keys)
		}
	})
}

// TestWaitingMetric: the depth gauge counts waiting jobs.
func TestWaitingMetric(t *testing.T) {
	h := newHarness(t, redistest.Client(t), withMetrics())
	q := redistest.Queue(t)
	h.add(t, q, "a")
	h.enqueue(t, q, depJob("b", "a"))
	depth := metricSeries(h.scrapeMetrics(t), "emq_queue_jobs")
	for state, want := range map[string]float64{"pending": 1, "waiting": 1} {
		if got := depth["queue="+q+",state="+state]; got != want {
			t.Errorf("emq_queue_jobs{state=%q} = %v, want %v", state, got, want)
		}
	}
}

// TestDependencyEdges: a complete with claim-next hands out the dependant
// it released; a job made again under the id of a removed dependant is
// not told of the old one's dependency; an enqueue answers a chain
// cancelled by a dead dependency as it is stored.
func TestDependencyEdges(t *testing.T) {
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := "depedges"
		h.add(t, q, "a")
		h.enqueue(t, q, depJob("b", "a"))
		a := h.claimOne(t, q, "a", 30000)
		done := must[struct {
			Next []jobView `json:"next"`
		}](t, h.do(t, "POST", jobPath(q, "a", "complete"), map[string]any{"token": a.Token, "claim": map[string]any{"count": 1}}), http.StatusOK)
		if len(done.Next) != 1 || done.Next[0].ID != "b" || done.Next[0].State != "active" {
			t.Errorf("complete with claim-next gave %+v, want b, released by it", done.Next)
		}

		h.add(t, q, "y", "z")
		h.enqueue(t, q, depJob("d", "y"))
		must[map[string]any](t, h.do(t, "DELETE", jobPath(q, "d"), nil), http.StatusOK)
		h.enqueue(t, q, depJob("d", "z"))
		y := h.claimOne(t, q, "y", 30000) // y is first in line
		must[jobView](t, h.do(t, "POST", jobPath(q, "y", "complete"), map[string]any{"token": y.Token}), http.StatusOK)
		h.wantState(t, q, "d", "waiting") // for z, not y
		h.finish(t, q, "z")
		h.wantState(t, q, "d", "pending")
		h.finish(t, q, "d")

		h.add(t, q, "x")
		h.kill(t, q, "x")
		jobs := must[jobList](t, h.do(t, "POST", jobsPath(q)+"/batch",
			map[string]any{"jobs": []any{depJob("p", "x"), depJob("c", "p")}}), http.StatusOK).Jobs
		for _, j := range jobs {
			if stored := h.get(t, q, j.ID); j.State != "cancelled" || stored.State != "cancelled" {
				t.Errorf("%s answered %s, stored %s: want both cancelled", j.ID, j.State, stored.State)
			}
		}
	})
}
