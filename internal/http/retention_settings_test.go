package http_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/redistest"
	"github.com/echo-mq/echo_mq/internal/stall"
)

// wantGone wants each job of q to be gone: 404, and no row left.
func (h *harness) wantGone(tb testing.TB, q string, ids ...string) {
	tb.Helper()
	for _, id := range ids {
		wantProblem(tb, h.do(tb, "GET", jobPath(q, id), nil), http.StatusNotFound, "EMQGONE")
	}
}

// trim runs the reaper's trim of q (stall.Service.Trim) once.
func (h *harness) trim(tb testing.TB, q string, limit int) (int, bool) {
	tb.Helper()
	n, more, err := stall.NewService(h.rdb, h.prefix).Trim(context.Background(), q, limit)
	if err != nil {
		tb.Fatal(err)
	}
	return n, more
}

// Retention by count: each finish trims its set to the count (a complete
// or fail every 8 finishes at most, a cancel at once), oldest first, rows
// and all; the reaper's trim takes the set down to the count.
func TestRetentionByCountAsJobsFinish(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.putSettings(t, q, `{"retention":{"completed":{"count":5},"dead":{"count":3},"cancelled":{"count":2}}}`)

		h.enqueueBatch(t, q, batchOf("c", 0, 30, ""))
		h.completeBatch(t, q, h.claim(t, q, `{"count":30}`), "")
		if n := h.zcard(t, q, "completed"); n != 5 {
			t.Errorf("%d completed jobs kept, want 5", n)
		}
		h.wantGone(t, q, jobIDs("c", 0, 25)...)
		h.wantState(t, q, "c00029", "completed")

		h.enqueueBatch(t, q, batchOf("d", 0, 12, `,"max_attempts":1`))
		for _, id := range jobIDs("d", 0, 12) {
			held := h.claimOne(t, q, id, 30000)
			must[json.RawMessage](t, h.fail(t, q, id, held.Token, `,"error":"boom"`), http.StatusOK)
			if n := h.zcard(t, q, "dead"); n > 3+7 {
				t.Fatalf("after %s died %d dead jobs are kept, want at most 3 + 7", id, n)
			}
		}
		if n, _ := h.trim(t, q, 1000); h.zcard(t, q, "dead") != 3 {
			t.Errorf("after the reaper's trim (%d) %d dead jobs are kept, want 3", n, h.zcard(t, q, "dead"))
		}
		h.wantGone(t, q, jobIDs("d", 0, 9)...)
		h.wantState(t, q, "d00011", "dead")

		h.enqueueBatch(t, q, batchOf("x", 0, 6, ""))
		for _, id := range jobIDs("x", 0, 6) {
			must[json.RawMessage](t, h.cancel(t, q, id, `{}`), http.StatusOK)
			if n := h.zcard(t, q, "cancelled"); n > 2 {
				t.Fatalf("after %s was cancelled %d cancelled jobs are kept, want 2", id, n)
			}
		}
		h.wantGone(t, q, jobIDs("x", 0, 4)...)
		if rows := len(h.keysOf(t, q, ":job:*")); rows != 5+3+2 {
			t.Errorf("%d job rows left, want the 10 kept", rows)
		}
	})
}

// Retention by age: the jobs that finished more than age_ms ago go, on an
// idle queue too: the due index holds the queue for when they age out, and
// the reaper then trims them. A finish trims those that aged out before it.
func TestRetentionByAgeOnAnIdleQueue(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.putSettings(t, q, `{"retention":{"completed":{"age_ms":400},"dead":{"age_ms":400},"cancelled":{"age_ms":400}}}`)
		h.enqueue(t, q, `{"id":"c","payload":{}}`)
		h.enqueue(t, q, `{"id":"d","payload":{},"max_attempts":1}`)
		h.enqueue(t, q, `{"id":"x","payload":{},"priority":9}`)
		must[json.RawMessage](t, h.complete(t, q, "c", h.claimOne(t, q, "c", 1000).Token, ""), http.StatusOK)
		must[json.RawMessage](t, h.fail(t, q, "d", h.claimOne(t, q, "d", 1000).Token, `,"error":"boom"`), http.StatusOK)
		cancelled := must[jobView](t, h.cancel(t, q, "x", `{}`), http.StatusOK)
		for _, state := range []string{"completed", "dead", "cancelled"} {
			if n := h.zcard(t, q, state); n != 1 {
				t.Fatalf("%d %s jobs right after they finished, want 1", n, state)
			}
		}
		waitPast(t, stampAt(parseStamp(t, cancelled.FinishedAt).Add(400*time.Millisecond)))
		h.reapWhenDue(t, q)
		for _, state := range []string{"completed", "dead", "cancelled"} {
			if n := h.zcard(t, q, state); n != 0 {
				t.Errorf("%d %s jobs after they aged out and the reaper came, want 0", n, state)
			}
		}
		h.wantGone(t, q, "c", "d", "x")

		// A finish trims the jobs that aged out before it (a complete
		// looks every 8 completions at most).
		h.enqueue(t, q, `{"id":"old","payload":{}}`)
		old := must[completed](t, h.complete(t, q, "old", h.claimOne(t, q, "old", 30000).Token, ""), http.StatusOK)
		waitPast(t, stampAt(parseStamp(t, old.FinishedAt).Add(400*time.Millisecond)))
		h.enqueueBatch(t, q, batchOf("n", 0, 8, ""))
		h.completeBatch(t, q, h.claim(t, q, `{"count":8}`), "")
		h.wantGone(t, q, "old")
		if n := h.zcard(t, q, "completed"); n != 8 {
			t.Errorf("%d completed jobs kept, want the 8 new ones", n)
		}
	})
}

// A finish trims at most 10 jobs for each finish since its set's last
// look, and the reaper's trim at most its limit per call, saying whether
// it left more: no call does unbounded work.
func TestRetentionTrimsBoundedPerCall(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.enqueueBatch(t, q, batchOf("x", 0, 151, ""))
		for _, id := range jobIDs("x", 0, 150) {
			must[json.RawMessage](t, h.cancel(t, q, id, `{}`), http.StatusOK)
		}
		h.putSettings(t, q, `{"retention":{"cancelled":{"age_ms":1}}}`)
		time.Sleep(20 * time.Millisecond)
		must[json.RawMessage](t, h.cancel(t, q, "x00150", `{}`), http.StatusOK)
		if n := h.zcard(t, q, "cancelled"); n != 151-10 {
			t.Fatalf("a cancel left %d of 151 cancelled jobs, want 10 trimmed", n)
		}
		left := 141
		for _, want := range []struct {
			n    int
			more bool
		}{{50, true}, {50, true}, {left - 100, false}} {
			time.Sleep(5 * time.Millisecond) // x00150 ages out too
			n, more := h.trim(t, q, 50)
			if n != want.n || more != want.more {
				t.Fatalf("trim with limit 50: %d, more %v; want %d, more %v", n, more, want.n, want.more)
			}
		}
		if rows := len(h.keysOf(t, q, ":job:*")); rows != 0 {
			t.Errorf("%d job rows left, want none", rows)
		}
	})
}

// A retention put on a queue that has jobs already is marked in its
// layout ("1.0", docs/design.md#retention), which is what tells a finish
// to read it: its completes trim by it; putting settings without one
// takes the mark away, and the completes keep every job again.
func TestRetentionPutOnAQueueInUse(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		ctx := context.Background()
		layout := func() string { return h.rdb.HGet(ctx, h.key(q, "meta"), "layout").Val() }
		h.enqueueBatch(t, q, batchOf("a", 0, 1, ""))
		if got := layout(); got != "1" {
			t.Fatalf("layout of a plain queue %q, want 1", got)
		}
		h.putSettings(t, q, `{"retention":{"completed":{"count":2}}}`)
		if got := layout(); got != "1.0" {
			t.Fatalf("layout with a retention %q, want 1.0", got)
		}
		h.enqueueBatch(t, q, batchOf("c", 0, 20, ""))
		h.completeBatch(t, q, h.claim(t, q, `{"count":21}`), "")
		if n := h.zcard(t, q, "completed"); n > 2 {
			t.Errorf("%d completed jobs kept under a retention of 2", n)
		}

		h.putSettings(t, q, `{"concurrency":5}`)
		if got := layout(); got != "1" {
			t.Fatalf("layout after the retention is taken away %q, want 1", got)
		}
		before := h.zcard(t, q, "completed")
		h.enqueueBatch(t, q, batchOf("d", 0, 20, ""))
		for range 4 {
			h.completeBatch(t, q, h.claim(t, q, `{"count":5}`), "")
		}
		if n := h.zcard(t, q, "completed"); n != before+20 {
			t.Errorf("%d completed jobs kept without a retention, want %d", n, before+20)
		}
	})
}
