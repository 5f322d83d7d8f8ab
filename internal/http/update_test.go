package http_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/auth"
	emqhttp "github.com/echo-mq/echo_mq/internal/http"
	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

// patch changes job id of q with body (PATCH), as the anonymous admin.
func (h *harness) patch(tb testing.TB, q, id string, body any) reply {
	tb.Helper()
	return h.do(tb, "PATCH", jobPath(q, id), body)
}

// patched changes job id of q with body and wants 200 and the job.
func (h *harness) patched(tb testing.TB, q, id string, body any) jobView {
	tb.Helper()
	return must[jobView](tb, h.patch(tb, q, id, body), http.StatusOK)
}

// wantUpdated fails the test unless q's stream has exactly n "updated"
// events of job id, the last in state, each naming the anonymous admin.
func (h *harness) wantUpdated(tb testing.TB, q, id string, n int, state string) {
	tb.Helper()
	got := entriesOf(h.streamEntries(tb, q), "updated", id)
	if len(got) != n {
		tb.Fatalf("%d updated events of %s %v, want %d", len(got), id, got, n)
	}
	for _, e := range got {
		wantActor(tb, e)
	}
	if last := got[n-1]; last["state"] != state {
		tb.Errorf("last updated event %v, want state %s", last, state)
	}
}

// TestUpdatePayloadAndPriority: a pending, delayed or waiting job takes a
// new payload (null too) and priority and keeps its state; the answer is
// the job as GET answers it, and the change is an event.
func TestUpdatePayloadAndPriority(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "dep")
		h.enqueue(t, q, `{"id":"p","payload":{"v":1},"priority":3}`)
		h.enqueue(t, q, `{"id":"d","payload":{"v":1},"delay_ms":3600000}`)
		h.enqueue(t, q, `{"id":"w","payload":{"v":1},"depends_on":["dep"]}`)
		for _, tc := range []struct{ id, state string }{{"p", "pending"}, {"d", "delayed"}, {"w", "waiting"}} {
			got := h.patched(t, q, tc.id, `{"payload": {"v": 2, "s": "<b>"}, "priority": 7}`)
			sameJSON(t, tc.id+" payload", got.Payload, []byte(`{"v":2,"s":"<b>"}`))
			if got.State != tc.state || got.Priority != 7 {
				t.Errorf("%s after the change: %s priority %d, want %s priority 7", tc.id, got.State, got.Priority, tc.state)
			}
			read := h.wantState(t, q, tc.id, tc.state)
			if read.Priority != 7 || string(read.Payload) != string(got.Payload) || read.RunAt != got.RunAt {
				t.Errorf("GET %s = %+v, want what PATCH answered %+v", tc.id, read, got)
			}
			h.wantUpdated(t, q, tc.id, 1, tc.state)

			got = h.patched(t, q, tc.id, `{"payload":null,"priority":0}`)
			if string(got.Payload) != "null" || got.Priority != 0 {
				t.Errorf("%s with payload null, priority 0: payload %s priority %d", tc.id, got.Payload, got.Priority)
			}
		}
		h.finish(t, q, "dep")
		if got := h.wantState(t, q, "w", "pending"); string(got.Payload) != "null" {
			t.Errorf("released w payload %s, want the changed one, null", got.Payload)
		}
	})
}

// TestUpdatePriorityReordersClaims: a pending job given a new priority is
// claimed in that priority's order, at its place by enqueue time among
// its jobs, grouped or not.
func TestUpdatePriorityReordersClaims(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		for _, group := range []string{"", "g1"} {
			q := redistest.Queue(t) + group
			for _, job := range []struct {
				id       string
				priority int
			}{{"a", 0}, {"b", 2}, {"c", 0}, {"d", 0}} {
				body := map[string]any{"id": job.id, "payload": 1, "priority": job.priority}
				if group != "" {
					body["group"] = group
				}
				h.enqueue(t, q, body)
			}
			h.patched(t, q, "b", `{"priority":0}`) // enqueued between a and c
			h.patched(t, q, "a", `{"priority":9}`)
			var got []string
			for range 4 {
				got = append(got, ids(h.claim(t, q, `{"lease_ms":60000}`))...)
			}
			if want := []string{"b", "c", "d", "a"}; !slices.Equal(got, want) {
				t.Errorf("group %q: claims took %v, want %v", group, got, want)
			}
		}
	})
}

// TestUpdateRunTime: a run time to come delays a pending job and moves a
// delayed one; one that has come makes a delayed job pending (woken for)
// and leaves a pending one in its place.
func TestUpdateRunTime(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "a", "b")
		before := time.Now().Add(time.Hour)
		got := h.patched(t, q, "a", `{"delay_ms":3600000}`)
		after := time.Now().Add(time.Hour)
		if at := parseStamp(t, got.RunAt); got.State != "delayed" || at.Before(before.Truncate(time.Millisecond)) || at.After(after) {
			t.Errorf("pending job given delay_ms 1h: %s run_at %s, want delayed about an hour from now", got.State, got.RunAt)
		}
		h.wantState(t, q, "a", "delayed")
		h.wantUpdated(t, q, "a", 1, "delayed")

		later := time.Now().Add(2 * time.Hour).Truncate(time.Millisecond)
		if got := h.patched(t, q, "a", fmt.Sprintf(`{"run_at":%q}`, stampMS(later))); got.State != "delayed" || got.RunAt != stampMS(later) {
			t.Errorf("delayed job given run_at %s: %s run_at %s", stampMS(later), got.State, got.RunAt)
		}
		if score := h.rdb.ZScore(t.Context(), h.key(q, "delayed"), "a").Val(); int64(score) != later.UnixMilli() {
			t.Errorf("delayed score %v, want %d", score, later.UnixMilli())
		}

		h.patched(t, q, "b", `{"delay_ms":0}`) // pending already: stays where it is
		h.wantState(t, q, "b", "pending")
		wakes := h.subscribeWakes(t, q)
		got = h.patched(t, q, "a", fmt.Sprintf(`{"run_at":%q}`, stampMS(time.Now().Add(-time.Minute))))
		if got.State != "pending" || got.RunAt != "" {
			t.Errorf("delayed job given a run_at passed: %s run_at %q, want pending, none", got.State, got.RunAt)
		}
		wantWake(t, wakes)
		h.wantUpdated(t, q, "a", 3, "pending")
		if claimed := ids(h.claim(t, q, `{"count":2}`)); !slices.Equal(claimed, []string{"b", "a"}) {
			t.Errorf("claimed %v, want [b a]", claimed)
		}
	})
}

// subscribeWakes listens to q's wake channel (lua/events.lua's wake).
func (h *harness) subscribeWakes(tb testing.TB, q string) <-chan string {
	tb.Helper()
	sub := h.rdb.Subscribe(tb.Context(), keyspace.NewQueue(h.prefix, q).WakeChannel())
	if _, err := sub.Receive(tb.Context()); err != nil { // the subscription is confirmed
		tb.Fatal(err)
	}
	tb.Cleanup(func() { sub.Close() })
	out := make(chan string, 16)
	go func() {
		for m := range sub.Channel() {
			out <- m.Payload
		}
	}()
	return out
}

// wantWake fails the test unless a wake comes (within a bound for a hung
// test, not a measure of speed).
func wantWake(tb testing.TB, wakes <-chan string) {
	tb.Helper()
	select {
	case <-wakes:
	case <-time.After(10 * time.Second):
		tb.Fatal("no wake was published")
	}
}

// TestUpdateGroupedRunTime: a grouped job delayed by a change leaves its
// group's pending jobs for its delayed count, and comes back.
func TestUpdateGroupedRunTime(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.addIn(t, q, "g", "a")
		counts := func() map[string]int64 {
			page := must[groupPage](t, h.do(t, "GET", "/queues/"+q+"/groups", nil), http.StatusOK)
			if len(page.Groups) != 1 {
				t.Fatalf("groups %+v, want g alone", page.Groups)
			}
			return page.Groups[0].Counts
		}
		h.patched(t, q, "a", `{"delay_ms":3600000,"priority":4}`)
		h.wantState(t, q, "a", "delayed")
		if c := counts(); c["pending"] != 0 || c["delayed"] != 1 {
			t.Errorf("group counts %v once its job is delayed, want pending 0, delayed 1", c)
		}
		if got := h.claim(t, q, nil); len(got) != 0 {
			t.Errorf("claim took %v, want nothing: the group's job is delayed", ids(got))
		}
		h.patched(t, q, "a", `{"delay_ms":0}`)
		if c := counts(); c["pending"] != 1 || c["delayed"] != 0 {
			t.Errorf("group counts %v once its job is pending again, want pending 1, delayed 0", c)
		}
		if got := h.claim(t, q, nil); len(got) != 1 || got[0].ID != "a" || got[0].Priority != 4 {
			t.Errorf("claim took %+v, want a, priority 4", got)
		}
	})
}

// TestUpdateWaitingRunTime: a waiting job's run time is when it runs once
// its dependencies have ended; a delay counts from the change.
func TestUpdateWaitingRunTime(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "dep")
		h.enqueue(t, q, `{"id":"w1","payload":1,"depends_on":["dep"]}`)
		h.enqueue(t, q, `{"id":"w2","payload":1,"depends_on":["dep"],"delay_ms":3600000}`)
		before := time.Now().Add(time.Hour).Truncate(time.Millisecond)
		w1 := h.patched(t, q, "w1", `{"delay_ms":3600000}`)
		if w1.State != "waiting" || parseStamp(t, w1.RunAt).Before(before) {
			t.Errorf("waiting job given delay_ms 1h: %s run_at %q, want waiting about an hour from now", w1.State, w1.RunAt)
		}
		if w2 := h.patched(t, q, "w2", `{"delay_ms":0}`); w2.State != "waiting" || w2.RunAt != "" {
			t.Errorf("waiting job given delay_ms 0: %s run_at %q, want waiting, none", w2.State, w2.RunAt)
		}
		h.wantUpdated(t, q, "w2", 1, "waiting")
		h.finish(t, q, "dep")
		if got := h.wantState(t, q, "w1", "delayed"); got.RunAt != w1.RunAt {
			t.Errorf("released w1 run_at %q, want %q", got.RunAt, w1.RunAt)
		}
		h.wantState(t, q, "w2", "pending")
	})
}

// TestUpdateRefused: an active or finished job is 409 EMQSTATE naming its
// state, no job 404 EMQGONE, a bad body 400 naming the field; none writes
// anything.
func TestUpdateRefused(t *testing.T) {
	t.Parallel()
	patch := func(name, id, body string, status int, code, field string) refusal {
		return refusal{name: name, method: "PATCH", path: "/queues/Q/jobs/" + id, body: body, status: status, code: code, field: field}
	}
	cases := []refusal{
		patch("nothing to change", "p", `{}`, 400, "EMQINVALID", "payload"),
		patch("empty body", "p", ``, 400, "EMQINVALID", "payload"),
		patch("delay_ms and run_at", "p", `{"delay_ms":0,"run_at":"2030-01-01T00:00:00Z"}`, 400, "EMQINVALID", "run_at"),
		patch("priority 10", "p", `{"priority":10}`, 400, "EMQINVALID", "priority"),
		patch("priority -1", "p", `{"priority":-1,"payload":1}`, 400, "EMQINVALID", "priority"),
		patch("delay_ms -1", "p", `{"delay_ms":-1}`, 400, "EMQINVALID", "delay_ms"),
		patch("delay_ms over a year", "p", `{"delay_ms":31536000001}`, 400, "EMQINVALID", "delay_ms"),
		patch("run_at no time", "p", `{"run_at":"soon"}`, 400, "EMQINVALID", "run_at"),
		patch("run_at before 1970", "p", `{"run_at":"1969-12-31T23:59:59Z"}`, 400, "EMQINVALID", "run_at"),
		patch("unknown field", "p", `{"payload":1,"max_attempts":5}`, 400, "EMQINVALID", "max_attempts"),
		patch("payload twice", "p", `{"payload":1,"payload":2}`, 400, "EMQINVALID", "payload"),
		patch("not an object", "p", `[1]`, 400, "EMQINVALID", ""),
		patch("bad id", "a%7Bb", `{"priority":1}`, 400, "EMQINVALID", "id"),
		patch("no such job", "nope", `{"priority":1}`, 404, "EMQGONE", ""),
	}
	for _, state := range []string{"active", "completed", "dead", "cancelled"} {
		cases = append(cases, patch("a job "+state, state, `{"priority":1}`, 409, "EMQSTATE", ""))
	}
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "completed", "dead", "active")
		h.finish(t, q, "completed")
		h.kill(t, q, "dead")
		h.claimOne(t, q, "active", 60000)
		h.add(t, q, "cancelled", "p")
		must[jobView](t, h.cancel(t, q, "cancelled", nil), http.StatusOK)
		runRefusals(t, h, q, cases)
		for _, state := range []string{"active", "completed", "dead", "cancelled"} {
			p := wantProblem(t, h.patch(t, q, state, `{"priority":1}`), 409, "EMQSTATE")
			if !strings.Contains(p.Detail, "is "+state+";") || !strings.Contains(p.Detail, "only a pending, delayed or waiting job") {
				t.Errorf("EMQSTATE detail %q, want the state %s and the way out", p.Detail, state)
			}
		}
		if got := entriesOf(h.streamEntries(t, q), "updated", ""); len(got) != 0 {
			t.Errorf("refused changes wrote events %v", got)
		}
	})
}

// TestUpdateNeedsAnAdminKey: a worker key may enqueue but not change a
// job: 403, and the job is as it was.
func TestUpdateNeedsAnAdminKey(t *testing.T) {
	t.Parallel()
	const workerKey, adminKey = "worker-key-update-0123456789", "admin-key-update-0123456789"
	keys, err := auth.ParseKeys("ops:admin:" + adminKey + ",app:worker:" + workerKey)
	if err != nil {
		t.Fatal(err)
	}
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		if r := h.sendWith(t, "POST", jobsPath(q), bearer(workerKey), `{"id":"a","payload":1}`); r.Status != http.StatusCreated {
			t.Fatalf("enqueue: %s", r)
		}
		before := h.snapshot(t)
		wantProblem(t, h.sendWith(t, "PATCH", jobPath(q, "a"), bearer(workerKey), `{"priority":5}`), 403, emqhttp.CodeForbidden)
		h.unchanged(t, before, "a worker's PATCH")
		got := must[jobView](t, h.sendWith(t, "PATCH", jobPath(q, "a"), bearer(adminKey), `{"priority":5}`), http.StatusOK)
		if got.Priority != 5 {
			t.Errorf("admin's PATCH answered priority %d, want 5", got.Priority)
		}
		e := onlyEntry(t, entriesOf(h.streamEntries(t, q), "updated", "a"), "the admin's change")
		if e["actor"] != "ops" || e["role"] != "admin" {
			t.Errorf("updated event %v, want actor ops, role admin", e)
		}
	}, withConfig(func(c *emqhttp.Config) { c.Keys = keys }))
}

// TestUpdateAudited: a change is logged as an operator action naming the
// fields it changed; a refused one is not.
func TestUpdateAudited(t *testing.T) {
	t.Parallel()
	var logs lockedBuffer
	h := newHarness(t, redistest.Client(t), withConfig(func(c *emqhttp.Config) {
		c.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}))
	q := redistest.Queue(t)
	h.add(t, q, "a")
	h.patched(t, q, "a", `{"payload":{"x":1},"run_at":"2000-01-01T00:00:00Z"}`)
	wantProblem(t, h.patch(t, q, "nope", `{"priority":1}`), 404, "EMQGONE")
	var audited []map[string]any
	for _, rec := range logs.records(t) {
		if rec["msg"] == "Operator action" {
			audited = append(audited, rec)
		}
	}
	want := map[string]any{"action": "update", "queue": q, "job": "a", "fields": "payload,run_at", "actor": "anonymous", "role": "admin"}
	if len(audited) != 1 {
		t.Fatalf("audited %v, want one update", audited)
	}
	for k, v := range want {
		if audited[0][k] != v {
			t.Errorf("audit record %v, want %s = %v", audited[0], k, v)
		}
	}
	raw, _ := json.Marshal(audited[0])
	t.Logf("audit record: %s", raw)
}
