package http_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/lease"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

// completeAll claims and completes every pending job of q, 100 at a time,
// each batch complete claiming the next 100 in the same step, and calls
// each (if set) after every batch. It returns how many it completed.
func (h *harness) completeAll(tb testing.TB, q string, each func()) int {
	tb.Helper()
	n := 0
	for held := h.claim(tb, q, `{"count":100}`); len(held) > 0; {
		next := h.completeBatch(tb, q, held, `,"claim":{"count":100}`)
		n += len(held)
		if each != nil {
			each()
		}
		held = next
	}
	return n
}

// zcard is the size of one of q's sorted sets.
func (h *harness) zcard(tb testing.TB, q, state string) int64 {
	tb.Helper()
	n, err := h.rdb.ZCard(context.Background(), h.key(q, state)).Result()
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

func TestRetentionKeepCompleted(t *testing.T) {
	t.Parallel()
	const keep, rounds, perRound = 100, 10, 500
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		most := int64(0)
		check := func() {
			n := h.zcard(t, q, "completed")
			most = max(most, n)
			if n > keep+10 {
				t.Fatalf("%d completed jobs kept, want at most %d + 10", n, keep)
			}
		}
		done := 0
		for r := range rounds {
			h.enqueueBatch(t, q, batchOf("j", r*perRound, perRound, ""))
			done += h.completeAll(t, q, check)
		}
		if done != rounds*perRound {
			t.Fatalf("completed %d jobs, want %d", done, rounds*perRound)
		}
		n := h.queueOf(t, q).Counts["completed"]
		if n < keep || n > keep+10 {
			t.Errorf("the queue keeps %d completed jobs, want %d to %d", n, keep, keep+10)
		}
		if rows := len(h.keysOf(t, q, ":job:*")); int64(rows) != n {
			t.Errorf("%d job rows left for %d completed jobs: the trimmed jobs' rows must go too", rows, n)
		}
		for _, id := range []string{"j00000", "j02500", fmt.Sprintf("j%05d", done-keep-11)} {
			wantProblem(t, h.do(t, "GET", jobPath(q, id), nil), 404, "EMQGONE")
		}
		newest := fmt.Sprintf("j%05d", done-1)
		h.wantState(t, q, newest, "completed")
		if page := h.listPage(t, q, "completed", 1, ""); len(page.Jobs) != 1 || page.Jobs[0].ID != newest {
			t.Errorf("the newest completed job listed is %v, want %s", ids(page.Jobs), newest)
		}
		t.Logf("%d completions, keep %d: at most %d completed jobs kept at once, %d at the end", done, keep, most, n)
	}, withLease(lease.KeepCompleted(keep)))
}

// TestRetentionTrimsAFewPerCall: when far more completed jobs are kept than
// the limit (the limit was lowered), a complete deletes at most 90 of them
// (10 for each job it completed and for each of the 8 completions between
// two looks at the count: lua/lifecycle.lua), so that no call does
// unbounded work, and the count comes down to within 8 of the limit.
func TestRetentionTrimsAFewPerCall(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.enqueueBatch(t, q, batchOf("j", 0, 60, ""))
		h.completeBatch(t, q, h.claim(t, q, `{"count":50}`), "")
		if n := h.zcard(t, q, "completed"); n != 50 {
			t.Fatalf("%d completed with KeepCompleted(0), want all 50", n)
		}
		strict := lease.NewService(h.rdb, h.prefix, lease.KeepCompleted(5))
		ctx := context.Background()
		prev := int64(50)
		for i := range 10 {
			c := h.claim(t, q, nil)[0]
			if _, _, err := strict.Complete(ctx, q, c.ID, c.Token, nil, nil); err != nil {
				t.Fatal(err)
			}
			n := h.zcard(t, q, "completed")
			if n < prev+1-90 || n < 5 {
				t.Errorf("complete %d: %d completed jobs left after %d, want at most 90 trimmed and at least 5 kept", i, n, prev)
			}
			prev = n
		}
		if prev < 5 || prev > 5+8 {
			t.Errorf("%d completed jobs kept after 10 completes, want 5 to 13", prev)
		}
		if rows := len(h.keysOf(t, q, ":job:*")); int64(rows) != prev {
			t.Errorf("%d job rows left, want the %d kept", rows, prev)
		}
	}, withLease(lease.KeepCompleted(0)))
}

func TestRetentionDefault(t *testing.T) {
	t.Parallel()
	h := newHarness(t, redistest.Client(t))
	q := redistest.Queue(t)
	total := lease.DefaultKeepCompleted + 50
	for from := 0; from < total; from += 1000 {
		h.enqueueBatch(t, q, batchOf("j", from, min(1000, total-from), ""))
		h.completeAll(t, q, nil)
	}
	if n := h.zcard(t, q, "completed"); n != 10_000 {
		t.Errorf("%d completed jobs kept after %d completions with the default, want 10,000", n, total)
	}
	wantProblem(t, h.do(t, "GET", jobPath(q, "j00049"), nil), 404, "EMQGONE")
	h.wantState(t, q, "j00050", "completed")
}

// redisInfo reads one field of INFO section as a number.
func redisInfo(tb testing.TB, rdb redis.UniversalClient, section, field string) int64 {
	tb.Helper()
	info, err := rdb.Info(context.Background(), section).Result()
	if err != nil {
		tb.Fatal(err)
	}
	for line := range strings.SplitSeq(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				tb.Fatalf("INFO %s: %q", field, line)
			}
			return n
		}
	}
	tb.Fatalf("INFO %s has no %s", section, field)
	return 0
}

// TestRetentionMemoryFlat: an endless stream of jobs keeps the number of
// keys and Redis's memory flat: completed jobs are trimmed, the event
// stream is capped. Both are full after steadyAt completions (the 1,000
// kept, and three events a job past the stream's 10,000); memory is then
// watched over three times as many more. On a redis-server of its own,
// so that other tests' keys do not count; not on the embedded store (too
// slow for 20,000).
func TestRetentionMemoryFlat(t *testing.T) {
	t.Parallel()
	const keep, rounds, perRound, steadyAt = 1000, 20, 1000, 5000
	srv := redistest.StartServer(t)
	rdb := closeLater(t, redis.NewClient(&redis.Options{Addr: srv.Addr}))
	h := newHarness(t, rdb, withLease(lease.KeepCompleted(keep)))
	q := redistest.Queue(t)
	ctx := context.Background()
	start := time.Now()
	var steady, most int64
	for r := range rounds {
		h.enqueueBatch(t, q, batchOf("j", r*perRound, perRound, ""))
		h.completeAll(t, q, nil)
		done := (r + 1) * perRound
		if done%steadyAt != 0 {
			continue
		}
		keys := rdb.DBSize(ctx).Val()
		mem := redisInfo(t, rdb, "memory", "used_memory")
		events := rdb.XLen(ctx, h.key(q, "events")).Val()
		t.Logf("after %6d completions: %5d keys, %5d completed, %5d events, used_memory %6.2f MiB",
			done, keys, h.zcard(t, q, "completed"), events, float64(mem)/(1<<20))
		if keys > keep+10+20 {
			t.Errorf("after %d completions Redis holds %d keys, want about %d completed job rows and a few queue keys",
				done, keys, keep)
		}
		if events > 11_000 {
			t.Errorf("after %d completions the event stream holds %d entries, want about 10,000", done, events)
		}
		if done == steadyAt {
			steady = mem
		} else {
			most = max(most, mem)
		}
	}
	t.Logf("%d completions in %v; used_memory at %d: %.2f MiB, most after: %.2f MiB",
		rounds*perRound, time.Since(start).Round(time.Millisecond), steadyAt, float64(steady)/(1<<20), float64(most)/(1<<20))
	if most > steady+1<<20 {
		t.Errorf("used_memory grew from %d to %d bytes over %d more completions, want it flat (within 1 MiB)",
			steady, most, rounds*perRound-steadyAt)
	}
}

// TestEventStreamCapped: the event stream keeps about the last 10,000
// entries, however many jobs come.
func TestEventStreamCapped(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		for from := 0; from < 15_000; from += 1000 {
			h.enqueueBatch(t, q, batchOf("j", from, 1000, ""))
		}
		n, err := h.rdb.XLen(context.Background(), h.key(q, "events")).Result()
		if err != nil {
			t.Fatal(err)
		}
		if n < 10_000 || n > 11_000 {
			t.Errorf("after 15,000 enqueues the stream holds %d entries, want about 10,000", n)
		}
		last := h.streamEntries(t, q)
		if e := last[len(last)-1]; e["kind"] != "enqueued" || e["job"] != "j14999" {
			t.Errorf("the last entry is %v, want j14999 enqueued", e)
		}
	})
}
