package http_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/redistest"
)

// wantHeld fails unless c holds n jobs and was held back by held, with a
// retry_after_ms within [lo, hi].
func wantHeld(tb testing.TB, c claimView, n int, held string, lo, hi int64) {
	tb.Helper()
	if len(c.Jobs) != n || c.HeldBy != held || c.RetryAfterMs == nil || *c.RetryAfterMs < lo || *c.RetryAfterMs > hi {
		retry := "none"
		if c.RetryAfterMs != nil {
			retry = fmt.Sprint(*c.RetryAfterMs)
		}
		tb.Fatalf("claim answered %d jobs, held_by %q, retry_after_ms %s; want %d, %q, within [%d, %d]",
			len(c.Jobs), c.HeldBy, retry, n, held, lo, hi)
	}
}

// A claim that a limit cut short, some jobs started, says when the next
// could start: for a rate limit when its own starts leave the window, for
// concurrency when the earliest lease (its own among them) would lapse, at
// most a second.
func TestARetryAfterOfAClaimCutShortIsWhenTheNextCouldStart(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		t.Run("rate limit", func(t *testing.T) {
			q := redistest.Queue(t)
			h.putSettings(t, q, `{"rate_limit":{"limit":5,"window_ms":1000}}`)
			h.addMany(t, q, 20)
			first := h.claimAnswer(t, q, `{"count":20}`)
			wantHeld(t, first, 5, "rate_limit", 1000, 1000)
			// The next claim is held by the same starts, a little later.
			wantHeld(t, h.claimAnswer(t, q, `{"count":20}`), 0, "rate_limit", 1, 1000)
		})
		t.Run("concurrency", func(t *testing.T) {
			q := redistest.Queue(t)
			h.putSettings(t, q, `{"concurrency":2}`)
			h.addMany(t, q, 3)
			wantHeld(t, h.claimAnswer(t, q, `{"count":3}`), 2, "concurrency", 1000, 1000)
			q = redistest.Queue(t)
			h.putSettings(t, q, `{"concurrency":2}`)
			h.addMany(t, q, 3)
			wantHeld(t, h.claimAnswer(t, q, `{"count":3,"lease_ms":400}`), 2, "concurrency", 1, 400)
		})
	})
}

// Only a resume frees a paused queue's or group's jobs: a claim says so,
// and asks for no faster poll than a second.
func TestAClaimHeldByAPauseSaysSo(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		t.Run("queue", func(t *testing.T) {
			q := redistest.Queue(t)
			h.do(t, "POST", "/queues/"+q+"/pause", nil)
			if c := h.claimAnswer(t, q, nil); len(c.Jobs) != 0 || c.HeldBy != "" || c.RetryAfterMs != nil {
				t.Fatalf("a paused queue with nothing pending answered %+v, want no held_by", c)
			}
			h.add(t, q, "a")
			wantHeld(t, h.claimAnswer(t, q, `{"count":2}`), 0, "paused", 1000, 1000)
			must[any](t, h.do(t, "POST", "/queues/"+q+"/resume", nil), http.StatusOK)
			if c := h.claimAnswer(t, q, nil); len(c.Jobs) != 1 || c.HeldBy != "" || c.RetryAfterMs != nil {
				t.Fatalf("after resume the claim answered %+v, want job a alone", c)
			}
		})
		t.Run("group", func(t *testing.T) {
			q := redistest.Queue(t)
			h.addIn(t, q, "g", "a")
			must[any](t, h.do(t, "POST", "/queues/"+q+"/groups/g/pause", nil), http.StatusOK)
			wantHeld(t, h.claimAnswer(t, q, nil), 0, "group_paused", 1000, 1000)
		})
		t.Run("long poll", func(t *testing.T) {
			q := redistest.Queue(t)
			h.add(t, q, "a")
			h.do(t, "POST", "/queues/"+q+"/pause", nil)
			got := make(chan claimView, 1)
			go func() { got <- h.claimAnswer(t, q, `{"wait_ms":20000}`) }()
			time.Sleep(300 * time.Millisecond) // the poll is waiting, or will find the queue resumed
			must[any](t, h.do(t, "POST", "/queues/"+q+"/resume", nil), http.StatusOK)
			if c := <-got; len(c.Jobs) != 1 {
				t.Fatalf("a long poll on a paused queue answered %+v after the resume, want job a", c)
			}
		})
	})
}

// Expired jobs at the head of pending do not make a claim answer empty
// while a job it may start waits behind them: the claim cancels them and
// takes on, up to 100 of them a call.
func TestAClaimTakesOnPastExpiredJobs(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		for _, settings := range []string{"", `{"concurrency":10,"rate_limit":{"limit":3,"window_ms":60000}}`} {
			q := redistest.Queue(t)
			if settings != "" {
				h.putSettings(t, q, settings)
			}
			for i := range 3 {
				h.enqueue(t, q, map[string]any{"id": fmt.Sprint("x", i), "payload": 1, "expires_in_ms": 1})
			}
			h.add(t, q, "good", "next")
			time.Sleep(20 * time.Millisecond) // the three expire
			c := h.claimAnswer(t, q, nil)
			if len(c.Jobs) != 1 || c.Jobs[0].ID != "good" {
				t.Fatalf("settings %q: claim answered %+v, want job good", settings, c)
			}
			for i := range 3 {
				if j := h.wantState(t, q, fmt.Sprint("x", i), "cancelled"); j.CancelReason != "expired" {
					t.Fatalf("x%d: cancel_reason %q, want expired", i, j.CancelReason)
				}
			}
			if settings != "" {
				// The expired jobs took none of the rate limit's three starts.
				if c := h.claimAnswer(t, q, `{"count":5}`); len(c.Jobs) != 1 || c.Jobs[0].ID != "next" {
					t.Fatalf("second claim answered %+v, want next", c)
				}
			}
		}
		t.Run("bounded", func(t *testing.T) {
			q := redistest.Queue(t)
			jobs := make([]string, 150)
			for i := range jobs {
				jobs[i] = fmt.Sprintf(`{"id":"x%d","payload":1,"expires_in_ms":1}`, i)
			}
			must[any](t, h.do(t, "POST", jobsPath(q)+"/batch", `{"jobs":[`+strings.Join(jobs, ",")+`]}`), http.StatusOK)
			h.add(t, q, "good")
			time.Sleep(20 * time.Millisecond)
			if c := h.claimAnswer(t, q, nil); len(c.Jobs) != 0 {
				t.Fatalf("first claim answered %+v, want none: it ends 100 expired jobs at most", c)
			}
			if c := h.claimAnswer(t, q, nil); len(c.Jobs) != 1 || c.Jobs[0].ID != "good" {
				t.Fatalf("second claim answered %+v, want good", c)
			}
		})
	})
}

// addMany enqueues n jobs j0, j1, ... to q.
func (h *harness) addMany(tb testing.TB, q string, n int) {
	tb.Helper()
	for i := range n {
		h.add(tb, q, fmt.Sprint("j", i))
	}
}
