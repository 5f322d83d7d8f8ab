package http_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/redistest"
)

// batchView is a Batch as the API answers it.
type batchView struct {
	ID            string           `json:"id"`
	Queue         string           `json:"queue"`
	State         string           `json:"state"`
	Total         int64            `json:"total"`
	Counts        map[string]int64 `json:"counts"`
	Success       bool             `json:"success"`
	CallbackJobID string           `json:"callback_job_id"`
	Callback      struct {
		Queue   string          `json:"queue"`
		Payload json.RawMessage `json:"payload"`
		When    string          `json:"when"`
	} `json:"callback"`
	FinishedAt string    `json:"finished_at"`
	Jobs       []jobView `json:"jobs"`
}

func batchesPath(q string, rest ...string) string {
	p := "/queues/" + q + "/batches"
	for _, r := range rest {
		p += "/" + r
	}
	return p
}

// callbackOf waits (up to 5 s) for the callback job of batch b on queue
// q, and returns it.
func (h *harness) callbackOf(tb testing.TB, q, b string) jobView {
	tb.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		r := h.do(tb, "GET", jobPath(q, "batch:"+b), nil)
		if r.Status == http.StatusOK {
			return decode[jobView](tb, r)
		}
		if time.Now().After(deadline) {
			tb.Fatalf("no callback job batch:%s on %s: %s", b, q, r)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestBatch: a batch's jobs carry its id; as they end its counts follow;
// once the last one ended it is done and exactly one callback job is
// enqueued on the callback's queue, with the batch and the payload.
func TestBatch(t *testing.T) {
	forEachBackend(t, func(t *testing.T, h *harness) {
		q, cbq := "imports", "reports"
		h.wantOtherMasters(t, q, cbq)
		body := map[string]any{"id": "b1",
			"jobs":     []any{depJob("j1"), depJob("j2"), depJob("j3")},
			"callback": map[string]any{"queue": cbq, "payload": map[string]any{"user": 42, "html": "<b>"}}}
		b := must[batchView](t, h.do(t, "POST", batchesPath(q), body), http.StatusCreated)
		if b.ID != "b1" || b.State != "running" || b.Total != 3 || len(b.Jobs) != 3 || b.Jobs[0].BatchID != "b1" ||
			b.Counts["pending"] != 3 || b.Callback.Queue != cbq || b.Callback.When != "complete" {
			t.Fatalf("created %+v", b)
		}
		again := must[batchView](t, h.do(t, "POST", batchesPath(q), body), http.StatusOK)
		if again.Total != 3 || len(again.Jobs) != 0 {
			t.Errorf("the same id again: %+v, want the batch as it was, nothing added", again)
		}
		got := must[batchView](t, h.do(t, "GET", batchesPath(q, "b1"), nil), http.StatusOK)
		if got.Counts["pending"] != 3 || got.State != "running" {
			t.Errorf("read %+v, want 3 pending, running", got)
		}
		h.finish(t, q, "j1")
		h.kill(t, q, "j2")
		must[map[string]any](t, h.do(t, "POST", jobPath(q, "j3", "cancel"), map[string]any{}), http.StatusOK)
		cb := h.callbackOf(t, cbq, "b1")
		var payload struct {
			Batch   batchView       `json:"batch"`
			Payload json.RawMessage `json:"payload"`
		}
		if err := json.Unmarshal(cb.Payload, &payload); err != nil {
			t.Fatal(err)
		}
		if pb := payload.Batch; pb.ID != "b1" || pb.State != "done" || pb.Success || pb.Counts["completed"] != 1 ||
			pb.Counts["dead"] != 1 || pb.Counts["cancelled"] != 1 {
			t.Errorf("callback payload %s", cb.Payload)
		}
		sameJSON(t, "the callback's payload", payload.Payload, []byte(`{"user":42,"html":"<b>"}`))
		done := must[batchView](t, h.do(t, "GET", batchesPath(q, "b1"), nil), http.StatusOK)
		if done.State != "done" || done.Success || done.FinishedAt == "" {
			t.Errorf("done batch %+v", done)
		}
		waitFor(t, func() bool {
			return must[batchView](t, h.do(t, "GET", batchesPath(q, "b1"), nil), http.StatusOK).CallbackJobID == "batch:b1"
		}, "callback_job_id")
		var doneEvents int
		for _, e := range h.streamEntries(t, q) {
			if e["kind"] == "batch_done" && e["batch"] == "b1" && e["reason"] == "not every job completed" {
				doneEvents++
			}
		}
		if doneEvents != 1 {
			t.Errorf("%d batch_done events of b1, want one", doneEvents)
		}
		info := must[queueView](t, h.do(t, "GET", "/queues/"+cbq, nil), http.StatusOK)
		if info.Counts["pending"] != 1 {
			t.Errorf("callback queue counts %v, want one pending job", info.Counts)
		}
	})
}

// wantOtherMasters fails the test unless, on a Cluster, queues a and b are
// served by two masters: a callback then crosses nodes.
func (h *harness) wantOtherMasters(tb testing.TB, a, b string) {
	tb.Helper()
	cc, ok := h.rdb.(*redis.ClusterClient)
	if !ok {
		return
	}
	ctx := context.Background()
	na, err := cc.MasterForKey(ctx, h.key(a, "meta"))
	if err != nil {
		tb.Fatal(err)
	}
	nb, err := cc.MasterForKey(ctx, h.key(b, "meta"))
	if err != nil {
		tb.Fatal(err)
	}
	if na.Options().Addr == nb.Options().Addr {
		tb.Fatalf("queues %s and %s are on one master, %s: pick names on two", a, b, na.Options().Addr)
	}
}

// TestBatchSuccessOnly: with when "success", a batch with a dead job owes
// no callback; one whose jobs all completed does.
func TestBatchSuccessOnly(t *testing.T) {
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := "strict"
		for _, b := range []string{"bad", "good"} {
			body := map[string]any{"id": b, "jobs": []any{depJob(b + "-1")},
				"callback": map[string]any{"when": "success"}}
			must[batchView](t, h.do(t, "POST", batchesPath(q), body), http.StatusCreated)
		}
		h.kill(t, q, "bad-1")
		h.finish(t, q, "good-1")
		cb := h.callbackOf(t, q, "good")
		if cb.State != "pending" {
			t.Errorf("callback %+v", cb)
		}
		bad := must[batchView](t, h.do(t, "GET", batchesPath(q, "bad"), nil), http.StatusOK)
		if bad.State != "done" || bad.Success || bad.Counts["dead"] != 1 {
			t.Errorf("bad batch %+v", bad)
		}
		time.Sleep(100 * time.Millisecond) // several dispatcher rounds
		wantProblem(t, h.do(t, "GET", jobPath(q, "batch:bad"), nil), http.StatusNotFound, "EMQGONE")
	})
}

// TestOpenBatch: an open batch is never done before its commit, even when
// every job it has ended; adding to a committed one is 409.
func TestOpenBatch(t *testing.T) {
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := "open"
		b := must[batchView](t, h.do(t, "POST", batchesPath(q), map[string]any{"id": "o", "open": true, "jobs": []any{}, "callback": map[string]any{}}), http.StatusCreated)
		if b.State != "open" || b.Total != 0 {
			t.Fatalf("created %+v", b)
		}
		add := must[batchView](t, h.do(t, "POST", batchesPath(q, "o", "jobs"), map[string]any{"jobs": []any{depJob("o1"), depJob("o2", "o1")}}), http.StatusOK)
		if add.Total != 2 || len(add.Jobs) != 2 || add.Jobs[1].State != "waiting" {
			t.Fatalf("added %+v", add)
		}
		h.finish(t, q, "o1")
		h.finish(t, q, "o2")
		if got := must[batchView](t, h.do(t, "GET", batchesPath(q, "o"), nil), http.StatusOK); got.State != "open" || got.Counts["completed"] != 2 {
			t.Errorf("before its commit %+v, want open with 2 completed", got)
		}
		time.Sleep(50 * time.Millisecond)
		wantProblem(t, h.do(t, "GET", jobPath(q, "batch:o"), nil), http.StatusNotFound, "EMQGONE")
		c := must[batchView](t, h.do(t, "POST", batchesPath(q, "o", "commit"), nil), http.StatusOK)
		if c.State != "done" || !c.Success {
			t.Errorf("committed %+v, want done, success", c)
		}
		must[batchView](t, h.do(t, "POST", batchesPath(q, "o", "commit"), nil), http.StatusOK)
		wantProblem(t, h.do(t, "POST", batchesPath(q, "o", "jobs"), map[string]any{"jobs": []any{depJob("o3")}}), http.StatusConflict, "EMQSTATE")
		h.callbackOf(t, q, "o")
		wantProblem(t, h.do(t, "GET", jobPath(q, "o3"), nil), http.StatusNotFound, "EMQGONE")
	})
}

// A batch made without a callback is tracked, and ends with its
// batch_done event, but enqueues no job that ordinary workers would get; a
// closed batch needs a job.
func TestABatchWithoutACallbackEnqueuesNone(t *testing.T) {
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		r := h.do(t, "POST", batchesPath(q), map[string]any{"id": "plain", "jobs": []any{depJob("p1")}})
		if b := must[batchView](t, r, http.StatusCreated); strings.Contains(string(r.Body), `"callback"`) || b.State != "running" {
			t.Fatalf("created %s, want running, with no callback", r.Body)
		}
		h.finish(t, q, "p1")
		if b := must[batchView](t, h.do(t, "GET", batchesPath(q, "plain"), nil), http.StatusOK); b.State != "done" || !b.Success {
			t.Fatalf("after its job %+v, want done", b)
		}
		time.Sleep(100 * time.Millisecond) // several dispatcher rounds
		wantProblem(t, h.do(t, "GET", jobPath(q, "batch:plain"), nil), http.StatusNotFound, "EMQGONE")
		if jobs := h.claim(t, q, `{"count":10}`); len(jobs) != 0 {
			t.Fatalf("workers of %s were handed %+v", q, jobs)
		}
		for _, body := range []string{`{}`, `{"jobs":[]}`, `{"id":"e","callback":{}}`} {
			p := wantProblem(t, h.do(t, "POST", batchesPath(q), body), http.StatusBadRequest, "EMQINVALID")
			wantField(t, p, "jobs")
		}
		wantProblem(t, h.do(t, "GET", batchesPath(q, "e"), nil), http.StatusNotFound, "EMQGONE")
	})
}

// TestBatchRefusals: bad requests are 400 and write nothing; an unknown
// batch is 404.
func TestBatchRefusals(t *testing.T) {
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := "refuse"
		before := h.snapshot(t)
		for _, c := range []struct {
			name, field string
			body        any
		}{
			{"bad id", "id", map[string]any{"id": "a b", "jobs": []any{depJob("a")}}},
			{"long id", "id", map[string]any{"id": string(make([]byte, 0)) + longID(123), "jobs": []any{depJob("a")}}},
			{"bad queue", "callback.queue", map[string]any{"jobs": []any{depJob("a")}, "callback": map[string]any{"queue": "a:b"}}},
			{"bad when", "callback.when", map[string]any{"jobs": []any{depJob("a")}, "callback": map[string]any{"when": "sometimes"}}},
			{"unknown dependency", "jobs[0].depends_on", map[string]any{"jobs": []any{depJob("a", "nope")}}},
			{"bad job", "jobs[0].priority", map[string]any{"jobs": []any{map[string]any{"payload": 1, "priority": 10}}}},
		} {
			p := wantProblem(t, h.do(t, "POST", batchesPath(q), c.body), http.StatusBadRequest, "EMQINVALID")
			if c.field != "" {
				wantField(t, p, c.field)
			}
		}
		h.unchanged(t, before, "refused batches")
		wantProblem(t, h.do(t, "GET", batchesPath(q, "nope"), nil), http.StatusNotFound, "EMQGONE")
		wantProblem(t, h.do(t, "POST", batchesPath(q, "nope", "commit"), nil), http.StatusNotFound, "EMQGONE")
		wantProblem(t, h.do(t, "POST", batchesPath(q, "nope", "jobs"), map[string]any{"jobs": []any{depJob("a")}}), http.StatusNotFound, "EMQGONE")
		wantProblem(t, h.do(t, "GET", batchesPath(q, "a%20b"), nil), http.StatusBadRequest, "EMQINVALID")
	})
}

func longID(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'x'
	}
	return string(b)
}

// waitFor polls cond for up to 5 s.
func waitFor(tb testing.TB, cond func() bool, what string) {
	tb.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestBatchCallbackIDs: two batches of one id on two queues, calling back
// to one queue, get a callback job each (the second under a longer id,
// which its batch names); and no enqueue may take a callback's id.
func TestBatchCallbackIDs(t *testing.T) {
	forEachBackend(t, func(t *testing.T, h *harness) {
		cbq := "callbacks"
		wantProblem(t, h.do(t, "POST", jobsPath(cbq), map[string]any{"id": "batch:same", "payload": 1}), http.StatusBadRequest, "EMQINVALID")
		var named []string
		for _, q := range []string{"qa", "qb"} {
			body := map[string]any{"id": "same", "jobs": []any{depJob(q + "-1")}, "callback": map[string]any{"queue": cbq}}
			must[batchView](t, h.do(t, "POST", batchesPath(q), body), http.StatusCreated)
			h.finish(t, q, q+"-1")
			waitFor(t, func() bool {
				b := must[batchView](t, h.do(t, "GET", batchesPath(q, "same"), nil), http.StatusOK)
				if b.CallbackJobID != "" {
					named = append(named, b.CallbackJobID)
				}
				return b.CallbackJobID != ""
			}, "the callback of "+q)
		}
		if named[0] == named[1] {
			t.Fatalf("both batches name the callback %s", named[0])
		}
		for i, q := range []string{"qa", "qb"} {
			cb := h.get(t, cbq, named[i])
			var p struct {
				Batch batchView `json:"batch"`
			}
			if err := json.Unmarshal(cb.Payload, &p); err != nil || p.Batch.Queue != q {
				t.Errorf("callback %s carries %s, want the batch of %s", named[i], cb.Payload, q)
			}
		}
	})
}

// TestBatchEdges: batches "x:jobs" and "x" keep apart; a job of an
// expired batch, retried while a new batch of the same id runs, leaves
// its batch rather than count in the new one; an add answers the ended
// counts and GET the live ones.
func TestBatchEdges(t *testing.T) {
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := "bedges"
		for _, id := range []string{"x:jobs", "x", "y", "y:jobs"} {
			body := map[string]any{"id": id, "open": true, "jobs": []any{depJob(strings.ReplaceAll(id, ":", "-") + "-1")}}
			if b := must[batchView](t, h.do(t, "POST", batchesPath(q), body), http.StatusCreated); b.Total != 1 {
				t.Errorf("batch %s: %+v", id, b)
			}
		}

		h.drain(t, q) // their pending jobs: each batch counts its job cancelled

		must[batchView](t, h.do(t, "POST", batchesPath(q), map[string]any{"id": "r", "jobs": []any{depJob("r2")}}), http.StatusCreated)
		h.kill(t, q, "r2") // batch r is done
		// As if 7 days went by: the done batch expired, and its id is made again.
		if err := h.rdb.Del(context.Background(), h.key(q, "batch:r"), h.key(q, "batch_jobs:r")).Err(); err != nil {
			t.Fatal(err)
		}
		must[batchView](t, h.do(t, "POST", batchesPath(q), map[string]any{"id": "r", "open": true, "jobs": []any{}}), http.StatusCreated)
		if j := must[jobView](t, h.do(t, "POST", jobPath(q, "r2", "retry"), nil), http.StatusOK); j.BatchID != "" {
			t.Errorf("r2 retried into the new batch r: batch_id %q, want none", j.BatchID)
		}
		add := must[batchView](t, h.do(t, "POST", batchesPath(q, "r", "jobs"), map[string]any{"jobs": []any{depJob("r3")}}), http.StatusOK)
		if add.Total != 1 || add.Counts["dead"] != 0 || add.Counts["pending"] != 0 {
			t.Errorf("the add answered %+v, want total 1 and only ended counts", add)
		}
		got := must[batchView](t, h.do(t, "GET", batchesPath(q, "r"), nil), http.StatusOK)
		if got.Total != 1 || got.Counts["pending"] != 1 || got.Counts["dead"] != 0 {
			t.Errorf("the new batch r: %+v, want its one job pending", got)
		}
	})
}

// drain drains q and wants 200.
func (h *harness) drain(tb testing.TB, q string) {
	tb.Helper()
	must[map[string]any](tb, h.operate(tb, q, "drain"), http.StatusOK)
}
