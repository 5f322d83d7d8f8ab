package http_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/redistest"
)

// enqueueAs enqueues body and checks the status: 201 for a new job, 200
// for the one a key or id answered.
func (h *harness) enqueueAs(tb testing.TB, q, body string, status int) jobView {
	tb.Helper()
	return must[jobView](tb, h.do(tb, "POST", "/queues/"+q+"/jobs", body), status)
}

// until_done: while the keyed job is pending, delayed or active, an
// enqueue with the key makes nothing and answers that job; once it has
// finished, the key makes a new job.
func TestDedupeUntilDone(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		const key = `"dedupe":{"key":"report:7","mode":"until_done"}`
		first := h.enqueueAs(t, q, `{"payload":1,`+key+`}`, http.StatusCreated)
		if first.DedupeKey != "report:7" {
			t.Fatalf("dedupe_key %q", first.DedupeKey)
		}
		again := h.enqueueAs(t, q, `{"payload":2,`+key+`}`, http.StatusOK)
		if again.ID != first.ID || string(again.Payload) != "1" {
			t.Fatalf("a second enqueue answered %+v, want the first job untouched", again)
		}
		// An id that exists wins over the key; a new id with the key is
		// answered by the keyed job.
		h.enqueue(t, q, `{"id":"other","payload":0}`)
		if j := h.enqueueAs(t, q, `{"id":"other","payload":3,`+key+`}`, http.StatusOK); j.ID != "other" {
			t.Fatalf("an existing id answered %+v", j)
		}
		if j := h.enqueueAs(t, q, `{"id":"fresh","payload":3,`+key+`}`, http.StatusOK); j.ID != first.ID {
			t.Fatalf("a new id with a held key answered %+v", j)
		}
		if r := h.do(t, "GET", jobPath(q, "fresh"), nil); r.Status != http.StatusNotFound {
			t.Fatalf("the deduplicated id was made: %s", r)
		}

		held := h.claimOne(t, q, first.ID, 30000)
		h.enqueueAs(t, q, `{"payload":4,`+key+`}`, http.StatusOK) // active still holds it
		if r := h.complete(t, q, first.ID, held.Token, ""); r.Status != http.StatusOK {
			t.Fatalf("complete: %s", r)
		}
		next := h.enqueueAs(t, q, `{"payload":5,`+key+`}`, http.StatusCreated)
		if next.ID == first.ID {
			t.Fatal("the finished job still held its key")
		}

		// In a batch, answers come in order: the first job with a key holds
		// it for the ones after it.
		b := must[jobList](t, h.do(t, "POST", "/queues/"+q+"/jobs/batch", `{"jobs":[
			{"payload":"a","dedupe":{"key":"b","mode":"until_done"}},
			{"payload":"b","dedupe":{"key":"b","mode":"until_done"}},
			{"payload":"c","dedupe":{"key":"report:7","mode":"until_done"}},
			{"payload":"d"}]}`), http.StatusOK)
		if len(b.Jobs) != 4 || b.Jobs[1].ID != b.Jobs[0].ID || string(b.Jobs[1].Payload) != `"a"` ||
			b.Jobs[2].ID != next.ID || b.Jobs[3].DedupeKey != "" {
			t.Fatalf("batch answered %+v", b.Jobs)
		}
		if n := h.count(t, q, "pending"); n != 4 { // other, next, a, d
			t.Errorf("%d pending, want 4", n)
		}
	})
}

// count is how many jobs of q are in state.
func (h *harness) count(tb testing.TB, q, state string) int64 {
	tb.Helper()
	n, err := h.rdb.ZCard(tb.Context(), h.key(q, state)).Result()
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// 32 producers racing on one key make exactly one job, and every one of
// them is answered with it.
func TestDedupeRaceMakesOneJob(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		const producers = 32
		var wg sync.WaitGroup
		replies := make([]reply, producers)
		for i := range producers {
			wg.Go(func() {
				replies[i] = h.do(t, "POST", "/queues/"+q+"/jobs",
					fmt.Sprintf(`{"payload":%d,"dedupe":{"key":"race","mode":"until_done"}}`, i))
			})
		}
		wg.Wait()
		created, ids := 0, map[string]bool{}
		for _, r := range replies {
			j := decode[jobView](t, r)
			ids[j.ID] = true
			if r.Status == http.StatusCreated {
				created++
			} else if r.Status != http.StatusOK {
				t.Fatalf("enqueue answered %s", r)
			}
		}
		if created != 1 || len(ids) != 1 || h.count(t, q, "pending") != 1 {
			t.Fatalf("%d created, %d ids, %d pending: want one job", created, len(ids), h.count(t, q, "pending"))
		}
	})
}

// throttle: for ttl_ms after the keyed job was created, every enqueue with
// the key answers it, finished or not; then a new job is made.
func TestDedupeThrottle(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		const key = `"dedupe":{"key":"t","mode":"throttle","ttl_ms":800}`
		first := h.enqueueAs(t, q, `{"payload":1,`+key+`}`, http.StatusCreated)
		held := h.claimOne(t, q, first.ID, 30000)
		if r := h.complete(t, q, first.ID, held.Token, ""); r.Status != http.StatusOK {
			t.Fatalf("complete: %s", r)
		}
		if j := h.enqueueAs(t, q, `{"payload":2,`+key+`}`, http.StatusOK); j.ID != first.ID || j.State != "completed" {
			t.Fatalf("within the window: %+v, want the completed job", j)
		}
		waitPast(t, stampAt(parseStamp(t, first.CreatedAt).Add(800*time.Millisecond)))
		if j := h.enqueueAs(t, q, `{"payload":3,`+key+`}`, http.StatusCreated); j.ID == first.ID {
			t.Fatal("the window ended and the key still answered")
		}
	})
}

// stampAt formats t as the API does.
func stampAt(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// debounce: while the keyed job has not started, an enqueue replaces its
// payload and priority and moves its run time, never past max_wait_ms after
// it was created; once it started, a new job is made.
func TestDedupeDebounce(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		const key = `"dedupe":{"key":"d","mode":"debounce","max_wait_ms":30000}`
		first := h.enqueueAs(t, q, `{"payload":1,"delay_ms":60000,`+key+`}`, http.StatusCreated)
		created := parseStamp(t, first.CreatedAt)
		if first.State != "delayed" || !parseStamp(t, first.RunAt).Equal(created.Add(30*time.Second)) {
			t.Fatalf("first: %+v, want delayed until created_at + max_wait_ms", first)
		}
		second := h.enqueueAs(t, q, `{"payload":2,"priority":3,"delay_ms":10000,`+key+`}`, http.StatusOK)
		if second.ID != first.ID || string(second.Payload) != "2" || second.Priority != 3 || second.State != "delayed" {
			t.Fatalf("second: %+v, want the job updated", second)
		}
		if runAt := parseStamp(t, second.RunAt); runAt.Before(created.Add(10*time.Second)) || runAt.After(created.Add(15*time.Second)) {
			t.Fatalf("second run_at %v, want about 10 s after %v", runAt, created)
		}
		third := h.enqueueAs(t, q, `{"payload":3,`+key+`}`, http.StatusOK) // delay 0: pending now
		if third.ID != first.ID || third.State != "pending" || third.RunAt != "" || third.Priority != 0 {
			t.Fatalf("third: %+v, want it pending at priority 0", third)
		}
		if h.count(t, q, "delayed") != 0 || h.count(t, q, "pending") != 1 {
			t.Fatalf("sets: %d delayed, %d pending", h.count(t, q, "delayed"), h.count(t, q, "pending"))
		}
		held := h.claimOne(t, q, first.ID, 30000)
		if string(held.Payload) != "3" {
			t.Fatalf("claimed payload %s", held.Payload)
		}
		next := h.enqueueAs(t, q, `{"payload":4,`+key+`}`, http.StatusCreated)
		if next.ID == first.ID {
			t.Fatal("a started job was debounced")
		}
		// In a batch the later enqueue updates the earlier one.
		b := must[jobList](t, h.do(t, "POST", "/queues/"+q+"/jobs/batch", `{"jobs":[
			{"payload":"x","dedupe":{"key":"e","mode":"debounce"}},
			{"payload":"y","delay_ms":5000,"dedupe":{"key":"e","mode":"debounce"}}]}`), http.StatusOK)
		if b.Jobs[0].ID != b.Jobs[1].ID || string(b.Jobs[1].Payload) != `"y"` || b.Jobs[1].State != "delayed" {
			t.Fatalf("batch answered %+v", b.Jobs)
		}
	})
}

// A job not started within expires_in_ms is never claimed: the claim that
// meets it cancels it with cancel_reason "expired".
func TestExpiredJobIsNeverClaimed(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		j := h.enqueue(t, q, `{"id":"e1","payload":{},"expires_in_ms":200}`)
		if !parseStamp(t, j.ExpiresAt).Equal(parseStamp(t, j.CreatedAt).Add(200 * time.Millisecond)) {
			t.Fatalf("expires_at %q, created_at %q", j.ExpiresAt, j.CreatedAt)
		}
		h.enqueue(t, q, `{"id":"e2","payload":{},"expires_in_ms":600000}`)
		waitPast(t, j.ExpiresAt)
		claimed := h.claim(t, q, `{"count":10,"lease_ms":30000}`)
		if len(claimed) != 1 || claimed[0].ID != "e2" {
			t.Fatalf("claimed %+v, want e2 alone", claimed)
		}
		if e := h.wantState(t, q, "e1", "cancelled"); e.CancelReason != "expired" || e.Attempts != 0 {
			t.Fatalf("expired job: %+v", e)
		}
		// One that started keeps running: its expiry is only about its start.
		if r := h.fail(t, q, "e2", claimed[0].Token, `,"error":"boom","retry_in_ms":0`); r.Status != http.StatusOK {
			t.Fatalf("fail: %s", r)
		}
		if again := h.claim(t, q, `{"count":1}`); len(again) != 1 || again[0].ID != "e2" {
			t.Fatalf("a started job was not claimed again: %+v", again)
		}
	})
}

// timeout_ms: the lease never reaches past started_at + timeout_ms; then
// the sweep fails the attempt with last_error "timeout" (not a stall),
// the holder is stale, and the last attempt is dead.
func TestTimeoutFailsTheAttempt(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.enqueue(t, q, `{"id":"t1","payload":{},"timeout_ms":300,"max_attempts":2,"backoff":{"type":"fixed","delay_ms":0}}`)
		held := h.claimOne(t, q, "t1", 60000)
		ends := parseStamp(t, held.StartedAt).Add(300 * time.Millisecond)
		if held.TimeoutMs != 300 || !parseStamp(t, held.LeaseExpiresAt).Equal(ends) {
			t.Fatalf("claimed %+v, want the lease to end at started_at + 300 ms", held)
		}
		ext := must[extended](t, h.do(t, "POST", jobPath(q, "t1", "lease"), fmt.Sprintf(`{"token":%d,"lease_ms":60000}`, held.Token)), http.StatusOK)
		if !parseStamp(t, ext.LeaseExpiresAt).Equal(ends) {
			t.Fatalf("extended to %s, want %s", ext.LeaseExpiresAt, stampAt(ends))
		}
		waitPast(t, stampAt(ends))
		wantProblem(t, h.do(t, "POST", jobPath(q, "t1", "lease"), fmt.Sprintf(`{"token":%d,"lease_ms":60000}`, held.Token)),
			http.StatusConflict, "EMQSTALE")
		s := h.sweepUntil(t, q, nil, "t1")
		if len(s.Retried) != 1 {
			t.Fatalf("swept %+v, want t1 retried", s)
		}
		j := h.wantState(t, q, "t1", "pending")
		if j.LastError != "timeout" || j.Stalled != 0 || j.Attempts != 1 {
			t.Fatalf("after the timeout: %+v", j)
		}
		wantProblem(t, h.complete(t, q, "t1", held.Token, ""), http.StatusConflict, "EMQSTALE")

		last := h.claimOne(t, q, "t1", 60000)
		waitPast(t, last.LeaseExpiresAt)
		if s := h.sweepUntil(t, q, nil, "t1"); len(s.Dead) != 1 {
			t.Fatalf("second sweep %+v, want t1 dead", s)
		}
		if d := h.wantState(t, q, "t1", "dead"); d.LastError != "timeout" || d.Stalled != 0 {
			t.Fatalf("dead: %+v", d)
		}
	})
}

// Bad options are refused with the field named, and write nothing.
func TestAdmissionValidation(t *testing.T) {
	t.Parallel()
	h := newHarness(t, redistest.Client(t))
	q := redistest.Queue(t)
	before := h.snapshot(t)
	for body, field := range map[string]string{
		`{"payload":1,"dedupe":{"mode":"until_done"}}`:                                          "dedupe.key",
		`{"payload":1,"dedupe":{"key":"k","mode":"forever"}}`:                                   "dedupe.mode",
		`{"payload":1,"dedupe":{"key":"k","mode":"throttle"}}`:                                  "dedupe.ttl_ms",
		`{"payload":1,"dedupe":{"key":"k","mode":"until_done","ttl_ms":5}}`:                     "dedupe.ttl_ms",
		`{"payload":1,"dedupe":{"key":"k","mode":"throttle","ttl_ms":0}}`:                       "dedupe.ttl_ms",
		`{"payload":1,"dedupe":{"key":"k","mode":"throttle","ttl_ms":5,"max_wait_ms":5}}`:       "dedupe.max_wait_ms",
		`{"payload":1,"dedupe":{"key":"k","mode":"debounce"},"group":"g"}`:                      "dedupe.mode",
		`{"payload":1,"dedupe":{"key":"` + strings.Repeat("é", 129) + `","mode":"until_done"}}`: "dedupe.key",
		`{"payload":1,"expires_in_ms":0}`:                                                       "expires_in_ms",
		`{"payload":1,"expires_in_ms":31536000001}`:                                             "expires_in_ms",
		`{"payload":1,"timeout_ms":99}`:                                                         "timeout_ms",
		`{"payload":1,"timeout_ms":86400001}`:                                                   "timeout_ms",
	} {
		p := wantProblem(t, h.do(t, "POST", "/queues/"+q+"/jobs", body), http.StatusBadRequest, "EMQINVALID")
		if len(p.Errors) != 1 || p.Errors[0].Field != field {
			t.Errorf("%s: fields %+v, want %s", body, p.Errors, field)
		}
	}
	p := wantProblem(t, h.do(t, "POST", "/queues/"+q+"/jobs/batch",
		`{"jobs":[{"payload":1},{"payload":1,"dedupe":{"key":"k","mode":"throttle"}}]}`), http.StatusBadRequest, "EMQINVALID")
	if len(p.Errors) != 1 || p.Errors[0].Field != "jobs[1].dedupe.ttl_ms" {
		t.Errorf("batch fields %+v", p.Errors)
	}
	h.unchanged(t, before, "refused enqueues")
}
