package http_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/redistest"
)

// states are a job's states, in the order GET /queues shows their counts.
var states = []string{"pending", "active", "delayed", "waiting", "completed", "dead", "cancelled"}

// counts is a full counts map: every state, zero unless given.
func counts(nonZero map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for _, s := range states {
		out[s] = nonZero[s]
	}
	return out
}

// operate sends an operator POST (pause, resume, drain) on q.
func (h *harness) operate(tb testing.TB, q, verb string) reply {
	tb.Helper()
	return h.do(tb, "POST", "/queues/"+q+"/"+verb, nil)
}

// wantActor fails the test unless the stream entry names the anonymous
// admin, as every operator action does while the API is open.
func wantActor(tb testing.TB, e map[string]string) {
	tb.Helper()
	if e["actor"] != "anonymous" || e["role"] != "admin" {
		tb.Errorf("event %v, want actor anonymous and role admin", e)
	}
}

// onlyEntry fails the test unless entries holds exactly one entry, and
// returns it.
func onlyEntry(tb testing.TB, entries []map[string]string, what string) map[string]string {
	tb.Helper()
	if len(entries) != 1 {
		tb.Fatalf("%s: got %d events %v, want 1", what, len(entries), entries)
	}
	return entries[0]
}

func TestQueueCounts(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "a1", "a2", "c1", "d1", "x1", "p1", "p2", "p3")
		h.enqueue(t, q, `{"id":"later1","payload":1,"delay_ms":60000}`)
		h.enqueue(t, q, `{"id":"later2","payload":1,"delay_ms":60000}`)
		held := map[string]int64{}
		for _, j := range h.claim(t, q, `{"count":5}`) {
			held[j.ID] = j.Token
		}
		must[jobView](t, h.complete(t, q, "c1", held["c1"], ""), http.StatusOK)
		must[jobView](t, h.fail(t, q, "d1", held["d1"], `,"error":"x","fatal":true`), http.StatusOK)
		must[jobView](t, h.cancel(t, q, "x1", nil), http.StatusAccepted)
		must[jobView](t, h.fail(t, q, "x1", held["x1"], `,"error":"stopped"`), http.StatusOK)
		must[jobView](t, h.cancel(t, q, "p3", nil), http.StatusOK)

		got := h.queueOf(t, q)
		want := queueView{Name: q, Counts: counts(map[string]int64{
			"pending": 2, "active": 2, "delayed": 2, "completed": 1, "dead": 1, "cancelled": 2})}
		if got.Name != want.Name || got.Paused || !maps.Equal(got.Counts, want.Counts) {
			t.Errorf("GET /queues/%s = %+v, want %+v", q, got, want)
		}
		list := must[queuePage](t, h.do(t, "GET", "/queues", nil), http.StatusOK)
		if len(list.Queues) != 1 || list.Queues[0].Name != q || !maps.Equal(list.Queues[0].Counts, want.Counts) {
			t.Errorf("GET /queues = %+v, want only %+v", list, want)
		}
	})
}

func TestQueueUnknownIsZeros(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		got := h.queueOf(t, q)
		if got.Name != q || got.Paused || !maps.Equal(got.Counts, counts(nil)) {
			t.Errorf("GET of a queue nobody used = %+v, want %s, not paused, every count zero", got, q)
		}
		if keys := h.keysOf(t, q, "*"); len(keys) != 0 {
			t.Errorf("reading an unknown queue made keys %v", keys)
		}
	})
}

func TestOperatorPathRefused(t *testing.T) {
	t.Parallel()
	badQueues := []string{"a%7Bb%7D", "a:b", "a%20b", strings.Repeat("q", 101), "a%01b"}
	routes := []struct{ method, path string }{
		{"GET", "/queues/Q"},
		{"DELETE", "/queues/Q?force=true"},
		{"POST", "/queues/Q/pause"},
		{"POST", "/queues/Q/resume"},
		{"POST", "/queues/Q/drain"},
		{"GET", "/queues/Q/jobs?state=pending"},
		{"POST", "/queues/Q/jobs/x/retry"},
		{"POST", "/queues/Q/jobs/x/promote"},
	}
	var cases []refusal
	for _, bad := range badQueues {
		for _, rt := range routes {
			cases = append(cases, refusal{name: "queue " + bad + " " + rt.method + " " + rt.path, method: rt.method,
				path: strings.Replace(rt.path, "Q", bad, 1), status: 400, code: "EMQINVALID", field: "queue"})
		}
	}
	for _, verb := range []string{"retry", "promote"} {
		for _, bad := range []string{"a%7Bb", "batch", strings.Repeat("i", 129)} {
			cases = append(cases, refusal{name: "id " + bad + " " + verb, method: "POST",
				path: "/queues/Q/jobs/" + bad + "/" + verb, status: 400, code: "EMQINVALID", field: "id"})
		}
	}
	cases = append(cases, refusal{name: "force maybe", method: "DELETE", path: "/queues/Q?force=maybe",
		status: 400, code: "EMQINVALID", field: "force"})
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "x")
		runRefusals(t, h, q, cases)
		h.wantState(t, q, "x", "pending")
	})
}

func TestPauseResume(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "a", "b", "c", "d", "e")
		ca := h.claimOne(t, q, "a", 30_000)
		cb := h.claimOne(t, q, "b", 30_000)
		cc := h.claimOne(t, q, "c", 30_000)

		info := must[queueView](t, h.operate(t, q, "pause"), http.StatusOK)
		if info.Name != q || !info.Paused || info.Counts["pending"] != 2 || info.Counts["active"] != 3 {
			t.Errorf("pause answered %+v, want %s paused with 2 pending and 3 active", info, q)
		}
		if jobs := h.claim(t, q, `{"count":10}`); len(jobs) != 0 {
			t.Errorf("claim on a paused queue got %v, want none", ids(jobs))
		}
		if again := must[queueView](t, h.operate(t, q, "pause"), http.StatusOK); !again.Paused {
			t.Errorf("pausing twice answered %+v, want paused", again)
		}
		if !h.queueOf(t, q).Paused {
			t.Error("GET of a paused queue says it is not paused")
		}

		// Active jobs go on while paused.
		must[extended](t, h.extend(t, q, "a", ca.Token, 60_000, `{"pct":50}`), http.StatusOK)
		if j := must[jobView](t, h.fail(t, q, "b", cb.Token, `,"error":"x","retry_in_ms":0`), http.StatusOK); j.State != "pending" {
			t.Errorf("fail while paused got %+v, want pending", j)
		}
		wantEmptyNext(t, h.complete(t, q, "a", ca.Token, `,"claim":{"count":5}`), "a paused queue")
		batch := fmt.Sprintf(`{"jobs":[{"id":"c","token":%d}],"claim":{"count":5}}`, cc.Token)
		wantEmptyNext(t, h.do(t, "POST", "/queues/"+q+"/complete", batch), "a paused queue (batch)")
		h.wantState(t, q, "a", "completed")
		h.wantState(t, q, "c", "completed")
		if jobs := h.claim(t, q, nil); len(jobs) != 0 {
			t.Errorf("claim on a paused queue got %v after the fail put b back, want none", ids(jobs))
		}

		info = must[queueView](t, h.operate(t, q, "resume"), http.StatusOK)
		if info.Paused || info.Counts["pending"] != 3 {
			t.Errorf("resume answered %+v, want not paused with 3 pending", info)
		}
		must[queueView](t, h.operate(t, q, "resume"), http.StatusOK)
		if got := ids(h.claim(t, q, `{"count":10}`)); fmt.Sprint(got) != "[d e b]" {
			t.Errorf("claim after resume got %v, want [d e b]", got)
		}

		entries := h.streamEntries(t, q)
		paused := onlyEntry(t, entriesOf(entries, "paused", ""), "pausing twice")
		resumed := onlyEntry(t, entriesOf(entries, "resumed", ""), "resuming twice")
		wantActor(t, paused)
		wantActor(t, resumed)
		if paused["job"] != "" || resumed["job"] != "" || paused["id"] >= resumed["id"] {
			t.Errorf("paused %v, resumed %v: want queue-level events, paused first", paused, resumed)
		}
	})
}

func TestPauseHoldsLongPollUntilResume(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		must[queueView](t, h.operate(t, q, "pause"), http.StatusOK)
		h.add(t, q, "a")
		poll := h.pollAsync(t, q, `{"wait_ms":15000}`)
		stillWaiting(t, poll)
		h.add(t, q, "b") // a wake while paused must not hand out a job
		stillWaiting(t, poll)
		must[queueView](t, h.operate(t, q, "resume"), http.StatusOK)
		a := await(t, poll, 5*time.Second)
		if got := must[jobList](t, a.reply, http.StatusOK).Jobs; len(got) != 1 || got[0].ID != "a" || got[0].Token <= 0 {
			t.Errorf("the waiting poll got %s after resume, want a with a token", a.reply)
		}
	})
}

func TestDrain(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "act", "p1", "p2", "p3")
		h.enqueue(t, q, `{"id":"d1","payload":1,"delay_ms":60000}`)
		h.enqueue(t, q, `{"id":"d2","payload":1,"delay_ms":60000}`)
		c := h.claimOne(t, q, "act", 30_000)

		if got := must[map[string]int](t, h.operate(t, q, "drain"), http.StatusOK); got["removed"] != 5 {
			t.Errorf("drain answered %v, want removed 5", got)
		}
		if got := h.queueOf(t, q).Counts; !maps.Equal(got, counts(map[string]int64{"active": 1})) {
			t.Errorf("counts after the drain = %v, want only the active job", got)
		}
		for _, id := range []string{"p1", "p2", "p3", "d1", "d2"} {
			wantProblem(t, h.do(t, "GET", jobPath(q, id), nil), 404, "EMQGONE")
		}
		if rows := h.keysOf(t, q, ":job:*"); len(rows) != 1 {
			t.Errorf("job rows left after the drain: %v, want only act's", rows)
		}
		if j := must[jobView](t, h.complete(t, q, "act", c.Token, ""), http.StatusOK); j.State != "completed" {
			t.Errorf("the active job after a drain completed as %+v", j)
		}
		if got := must[map[string]int](t, h.operate(t, q, "drain"), http.StatusOK); got["removed"] != 0 {
			t.Errorf("a second drain answered %v, want removed 0", got)
		}
		drained := entriesOf(h.streamEntries(t, q), "drained", "")
		if len(drained) != 2 || drained[0]["count"] != "5" || drained[1]["count"] != "0" {
			t.Fatalf("drained events %v, want counts 5 then 0", drained)
		}
		wantActor(t, drained[0])
	})
}

func TestDrainLarge(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.enqueueBatch(t, q, batchOf("p", 0, 1000, ""))
		h.enqueueBatch(t, q, batchOf("p", 1000, 1000, ""))
		h.enqueueBatch(t, q, batchOf("d", 0, 500, `,"delay_ms":60000`))
		h.add(t, q, "act")
		h.claim(t, q, nil) // p00000 goes active
		if got := must[map[string]int](t, h.operate(t, q, "drain"), http.StatusOK); got["removed"] != 2500 {
			t.Errorf("drain answered %v, want removed 2500", got)
		}
		if got := h.queueOf(t, q).Counts; !maps.Equal(got, counts(map[string]int64{"active": 1})) {
			t.Errorf("counts after the drain = %v, want only the active job", got)
		}
		if rows := h.keysOf(t, q, ":job:*"); len(rows) != 1 {
			t.Errorf("%d job rows left after the drain, want 1", len(rows))
		}
		d := onlyEntry(t, entriesOf(h.streamEntries(t, q), "drained", ""), "a drain in several steps")
		if d["count"] != "2500" {
			t.Errorf("drained event %v, want count 2500", d)
		}
		wantActor(t, d)
	})
}

func TestObliterateRefusedWhileActive(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "a", "b")
		c := h.claimOne(t, q, "a", 30_000)
		before := h.snapshot(t)
		wantProblem(t, h.do(t, "DELETE", "/queues/"+q, nil), 409, "EMQSTATE")
		wantProblem(t, h.do(t, "DELETE", "/queues/"+q+"?force=false", nil), 409, "EMQSTATE")
		h.unchanged(t, before, "an obliterate refused while a job is active")
		must[jobView](t, h.complete(t, q, "a", c.Token, ""), http.StatusOK)
		if got := must[map[string]int](t, h.do(t, "DELETE", "/queues/"+q, nil), http.StatusOK); got["removed"] != 2 {
			t.Errorf("obliterate with no job active answered %v, want removed 2", got)
		}
		if keys := h.keysOf(t, q, "*"); len(keys) != 0 {
			t.Errorf("keys left after the obliterate: %v", keys)
		}
	})
}

// fillQueue puts jobs of q in every state and returns the active ones'
// tokens and how many jobs it made.
func (h *harness) fillQueue(tb testing.TB, q string) (held map[string]int64, total int) {
	tb.Helper()
	h.add(tb, q, "c1", "d1", "k1", "a1", "a2")
	held = map[string]int64{}
	for _, j := range h.claim(tb, q, `{"count":5}`) {
		held[j.ID] = j.Token
	}
	must[jobView](tb, h.complete(tb, q, "c1", held["c1"], `,"result":1`), http.StatusOK)
	must[jobView](tb, h.fail(tb, q, "d1", held["d1"], `,"error":"x","fatal":true`), http.StatusOK)
	must[jobView](tb, h.cancel(tb, q, "k1", nil), http.StatusAccepted)
	must[jobView](tb, h.fail(tb, q, "k1", held["k1"], `,"error":"stopped"`), http.StatusOK)
	must[extended](tb, h.extend(tb, q, "a1", held["a1"], 30_000, `{"pct":1}`), http.StatusOK)
	h.add(tb, q, "p1", "p2")
	h.enqueue(tb, q, `{"id":"later","payload":1,"delay_ms":60000}`)
	must[queueView](tb, h.operate(tb, q, "pause"), http.StatusOK)
	return map[string]int64{"a1": held["a1"], "a2": held["a2"]}, 8
}

func TestObliterateForce(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q, other := redistest.Queue(t), redistest.Queue(t)
		h.add(t, other, "keep")
		held, total := h.fillQueue(t, q)
		if len(h.keysOf(t, q, "*")) < total {
			t.Fatalf("the queue has only keys %v", h.keysOf(t, q, "*"))
		}
		if got := must[map[string]int](t, h.do(t, "DELETE", "/queues/"+q+"?force=true", nil), http.StatusOK); got["removed"] != total {
			t.Errorf("obliterate answered %v, want removed %d", got, total)
		}
		if keys := h.keysOf(t, q, "*"); len(keys) != 0 {
			t.Errorf("keys of the queue left after the obliterate: %v", keys)
		}
		ctx := context.Background()
		if h.rdb.SIsMember(ctx, h.prefix+":queues", q).Val() {
			t.Errorf("%s:queues still names the obliterated queue", h.prefix)
		}
		list := must[queuePage](t, h.do(t, "GET", "/queues", nil), http.StatusOK)
		if len(list.Queues) != 1 || list.Queues[0].Name != other {
			t.Errorf("GET /queues = %+v, want only %s", list.Queues, other)
		}
		if got := h.queueOf(t, q); got.Paused || !maps.Equal(got.Counts, counts(nil)) {
			t.Errorf("GET of the obliterated queue = %+v, want not paused, all zeros", got)
		}
		for id, token := range held {
			wantProblem(t, h.complete(t, q, id, token, ""), 404, "EMQGONE")
			wantProblem(t, h.extend(t, q, id, token, 1000, ""), 404, "EMQGONE")
			wantProblem(t, h.fail(t, q, id, token, `,"error":"x"`), 404, "EMQGONE")
			wantProblem(t, h.do(t, "GET", fmt.Sprintf("%s?token=%d", jobPath(q, id, "cancellation"), token), nil), 404, "EMQGONE")
		}
		if jobs := h.claim(t, q, nil); len(jobs) != 0 {
			t.Errorf("claim on the obliterated queue got %v", ids(jobs))
		}
		if keys := h.keysOf(t, q, "*"); len(keys) != 0 {
			t.Errorf("the holders' refused calls left keys: %v", keys)
		}
		h.wantState(t, other, "keep", "pending")
	})
}

func TestObliterateLarge(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.enqueueBatch(t, q, batchOf("c", 0, 250, ""))
		var held []jobView
		for range 3 {
			held = append(held, h.claim(t, q, `{"count":100}`)...)
		}
		h.completeBatch(t, q, held, "")
		h.enqueueBatch(t, q, batchOf("x", 0, 100, ""))
		h.claim(t, q, `{"count":100,"lease_ms":100}`)
		s := h.sweepUntil(t, q, `{"max_stalled":1,"limit":1000}`, "x00000", "x00099")
		if len(s.Dead) != 100 {
			t.Fatalf("sweep dead-lettered %d jobs, want 100", len(s.Dead))
		}
		h.enqueueBatch(t, q, batchOf("k", 0, 20, ""))
		for i := range 20 {
			must[jobView](t, h.cancel(t, q, fmt.Sprintf("k%05d", i), nil), http.StatusOK)
		}
		h.enqueueBatch(t, q, batchOf("a", 0, 10, ""))
		h.claim(t, q, `{"count":10}`)
		h.enqueueBatch(t, q, batchOf("p", 0, 1000, ""))
		h.enqueueBatch(t, q, batchOf("p", 1000, 200, ""))
		h.enqueueBatch(t, q, batchOf("d", 0, 300, `,"delay_ms":60000`))
		want := counts(map[string]int64{"pending": 1200, "active": 10, "delayed": 300, "completed": 250, "dead": 100, "cancelled": 20})
		if got := h.queueOf(t, q).Counts; !maps.Equal(got, want) {
			t.Fatalf("counts before the obliterate = %v, want %v", got, want)
		}
		wantProblem(t, h.do(t, "DELETE", "/queues/"+q, nil), 409, "EMQSTATE")
		if got := must[map[string]int](t, h.do(t, "DELETE", "/queues/"+q+"?force=true", nil), http.StatusOK); got["removed"] != 1880 {
			t.Errorf("obliterate answered %v, want removed 1880", got)
		}
		if keys := h.keysOf(t, q, "*"); len(keys) != 0 {
			t.Errorf("%d keys of the queue left after the obliterate, e.g. %v", len(keys), keys[:min(5, len(keys))])
		}
	})
}

// TestObliterateKeepsTheFence: a queue made again under the same name, with
// the same job ids, never hands out a token an old holder knows.
func TestObliterateKeepsTheFence(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "a", "b", "c")
		var old []jobView
		for range 3 { // one claim per job
			old = append(old, h.claim(t, q, nil)...)
		}
		must[jobView](t, h.complete(t, q, "c", old[2].Token, ""), http.StatusOK)
		must[map[string]int](t, h.do(t, "DELETE", "/queues/"+q+"?force=true", nil), http.StatusOK)

		h.add(t, q, "a", "b", "c")
		fresh := h.claim(t, q, `{"count":3}`)
		if len(fresh) != 3 {
			t.Fatalf("claim on the queue made again got %v, want 3 jobs", ids(fresh))
		}
		for _, n := range fresh {
			for _, o := range old {
				if n.Token == o.Token {
					t.Errorf("new token %d of %s is old token of %s", n.Token, n.ID, o.ID)
				}
			}
		}
		wantProblem(t, h.complete(t, q, "a", old[0].Token, ""), 409, "EMQSTALE")
		wantProblem(t, h.extend(t, q, "b", old[1].Token, 1000, ""), 409, "EMQSTALE")
		wantProblem(t, h.complete(t, q, "c", old[2].Token, ""), 409, "EMQSTALE")
		for _, id := range []string{"a", "b", "c"} {
			h.wantState(t, q, id, "active")
		}
	})
}

// TestObliteratedQueueUsedAgainIsKnown: a queue made again by an enqueue
// after an obliterate is a known queue again: GET /queues lists it and the
// reaper (which walks the queues set) sweeps it.
func TestObliteratedQueueUsedAgainIsKnown(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "a")
		must[map[string]int](t, h.do(t, "DELETE", "/queues/"+q, nil), http.StatusOK)
		h.add(t, q, "a")
		if !h.rdb.SIsMember(context.Background(), h.prefix+":queues", q).Val() {
			t.Errorf("%s:queues does not name %s, enqueued again after its obliterate", h.prefix, q)
		}
		list := must[queuePage](t, h.do(t, "GET", "/queues", nil), http.StatusOK)
		if len(list.Queues) != 1 || list.Queues[0].Name != q || list.Queues[0].Counts["pending"] != 1 {
			t.Errorf("GET /queues = %+v, want %s with 1 pending", list.Queues, q)
		}
	})
}

func TestRetryDead(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.enqueue(t, q, `{"id":"a","payload":1,"max_attempts":2}`)
		t1 := h.claimOne(t, q, "a", 30_000).Token
		must[jobView](t, h.fail(t, q, "a", t1, `,"error":"first","retry_in_ms":0`), http.StatusOK)
		t2 := h.claimOne(t, q, "a", 30_000).Token
		if dead := must[jobView](t, h.fail(t, q, "a", t2, `,"error":"boom","retry_in_ms":0`), http.StatusOK); dead.State != "dead" {
			t.Fatalf("the second failure of 2 attempts got %+v, want dead", dead)
		}

		j := must[jobView](t, h.do(t, "POST", jobPath(q, "a", "retry"), nil), http.StatusOK)
		if j.State != "pending" || j.Attempts != 0 || j.Stalled != 0 || j.FinishedAt != "" || j.LastError != "boom" || j.Token != 0 {
			t.Errorf("retry got %+v, want pending, attempts 0, stalled 0, no finished_at, last_error kept, no token", j)
		}
		h.wantState(t, q, "a", "pending")
		c := h.claimOne(t, q, "a", 30_000)
		if c.Token <= 0 || c.Token == t1 || c.Token == t2 || c.Attempts != 1 {
			t.Errorf("claim after the retry got token %d attempts %d, want a token other than %d and %d and attempts 1", c.Token, c.Attempts, t1, t2)
		}
		for _, old := range []int64{t1, t2} {
			wantProblem(t, h.complete(t, q, "a", old, ""), 409, "EMQSTALE")
			wantProblem(t, h.extend(t, q, "a", old, 1000, ""), 409, "EMQSTALE")
		}
		// A fresh budget: a failure now retries rather than dead-letters.
		if again := must[jobView](t, h.fail(t, q, "a", c.Token, `,"error":"again","retry_in_ms":0`), http.StatusOK); again.State != "pending" {
			t.Errorf("the first failure after a retry got %+v, want pending (a fresh budget of 2)", again)
		}
		e := onlyEntry(t, entriesOf(h.streamEntries(t, q), "retried", "a"), "one retry")
		if e["state"] != "pending" {
			t.Errorf("retried event %v, want state pending", e)
		}
		wantActor(t, e)
	})
}

func TestRetryStalledDead(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "a")
		c := h.claimOne(t, q, "a", 100)
		h.sweepUntil(t, q, `{"max_stalled":1}`, "a")
		if dead := h.wantState(t, q, "a", "dead"); dead.Stalled != 1 || dead.LastError != "stalled" {
			t.Fatalf("after the sweep got %+v, want dead by a stall", dead)
		}
		j := must[jobView](t, h.do(t, "POST", jobPath(q, "a", "retry"), nil), http.StatusOK)
		if j.State != "pending" || j.Stalled != 0 || j.Attempts != 0 {
			t.Errorf("retry got %+v, want pending with stalled and attempts reset", j)
		}
		again := h.claimOne(t, q, "a", 30_000)
		if again.Token <= 0 || again.Token == c.Token {
			t.Errorf("token after the retry %d, want a fresh one, not %d", again.Token, c.Token)
		}
		wantProblem(t, h.complete(t, q, "a", c.Token, ""), 409, "EMQSTALE")
		wantProblem(t, h.fail(t, q, "a", c.Token, `,"error":"x"`), 409, "EMQSTALE")
		h.wantState(t, q, "a", "active")
	})
}

func TestRetryCancelled(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "waiting", "held")
		must[jobView](t, h.cancel(t, q, "waiting", `{"reason":"no"}`), http.StatusOK)
		c := h.claimOne(t, q, "held", 30_000)
		must[jobView](t, h.cancel(t, q, "held", `{"reason":"stop"}`), http.StatusAccepted)
		must[jobView](t, h.fail(t, q, "held", c.Token, `,"error":"stopped"`), http.StatusOK)
		for _, id := range []string{"waiting", "held"} {
			h.wantState(t, q, id, "cancelled")
			j := must[jobView](t, h.do(t, "POST", jobPath(q, id, "retry"), nil), http.StatusOK)
			if j.State != "pending" || j.CancelRequested || j.CancelReason != "" || j.Attempts != 0 {
				t.Errorf("retry of cancelled %s got %+v, want pending, no cancel, attempts 0", id, j)
			}
			h.wantState(t, q, id, "pending")
		}
		got := h.claim(t, q, `{"count":2}`)
		if fmt.Sprint(ids(got)) != "[waiting held]" || got[1].Token == c.Token {
			t.Errorf("claim after the retries got %+v, want waiting then held with fresh tokens", got)
		}
		if e := must[extended](t, h.extend(t, q, "held", got[1].Token, 1000, ""), http.StatusOK); e.CancelRequested {
			t.Errorf("the retried job's new attempt sees the old cancel: %+v", e)
		}
	})
}

func TestRetryRefused(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "done", "act", "p")
		cd := h.claimOne(t, q, "done", 30_000)
		must[jobView](t, h.complete(t, q, "done", cd.Token, ""), http.StatusOK)
		h.claimOne(t, q, "act", 30_000)
		h.enqueue(t, q, `{"id":"later","payload":1,"delay_ms":60000}`)
		before := h.snapshot(t)
		for _, id := range []string{"p", "act", "done", "later"} {
			wantProblem(t, h.do(t, "POST", jobPath(q, id, "retry"), nil), 409, "EMQSTATE")
		}
		wantProblem(t, h.do(t, "POST", jobPath(q, "nope", "retry"), nil), 404, "EMQGONE")
		h.unchanged(t, before, "refused retries")
	})
}

func TestPromote(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "first")
		h.enqueue(t, q, `{"id":"d","payload":1,"delay_ms":3600000}`)
		j := must[jobView](t, h.do(t, "POST", jobPath(q, "d", "promote"), nil), http.StatusOK)
		if j.State != "pending" || j.RunAt != "" {
			t.Errorf("promote got %+v, want pending without run_at", j)
		}
		h.wantState(t, q, "d", "pending")
		if got := ids(h.claim(t, q, `{"count":5}`)); fmt.Sprint(got) != "[first d]" {
			t.Errorf("claim after the promote got %v, want [first d]", got)
		}
		e := onlyEntry(t, entriesOf(h.streamEntries(t, q), "promoted", "d"), "one promote")
		if e["state"] != "pending" {
			t.Errorf("promoted event %v, want state pending", e)
		}
		wantActor(t, e)

		h.add(t, q, "p")
		before := h.snapshot(t)
		for _, id := range []string{"p", "d", "first"} { // pending, active, active
			wantProblem(t, h.do(t, "POST", jobPath(q, id, "promote"), nil), 409, "EMQSTATE")
		}
		wantProblem(t, h.do(t, "POST", jobPath(q, "nope", "promote"), nil), 404, "EMQGONE")
		h.unchanged(t, before, "refused promotes")
	})
}

func TestPromoteFinishedRefused(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.fillQueue(t, q)
		before := h.snapshot(t)
		for _, id := range []string{"c1", "d1", "k1"} { // completed, dead, cancelled
			wantProblem(t, h.do(t, "POST", jobPath(q, id, "promote"), nil), 409, "EMQSTATE")
		}
		h.unchanged(t, before, "promotes of finished jobs")
	})
}
