package http_test

import (
	"fmt"
	"net/http"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/redistest"
)

// answer is a long poll's reply and how long it took.
type answer struct {
	reply
	took time.Duration
}

// pollAsync starts a claim on q with body and returns where its answer comes.
func (h *harness) pollAsync(tb testing.TB, q, body string) <-chan answer {
	tb.Helper()
	out := make(chan answer, 1)
	go func() {
		start := time.Now()
		r := h.do(tb, "POST", "/queues/"+q+"/claim", body)
		out <- answer{reply: r, took: time.Since(start)}
	}()
	return out
}

// stillWaiting fails the test if the poll has answered within a moment:
// it is meant to wait for a job that is not there yet.
func stillWaiting(tb testing.TB, polls ...<-chan answer) {
	tb.Helper()
	time.Sleep(200 * time.Millisecond)
	for _, p := range polls {
		select {
		case a := <-p:
			tb.Fatalf("the poll answered %s before any job was there, want it waiting", a.reply)
		default:
		}
	}
}

// await returns the poll's answer, failing the test after limit.
func await(tb testing.TB, p <-chan answer, limit time.Duration) answer {
	tb.Helper()
	select {
	case a := <-p:
		return a
	case <-time.After(limit):
		tb.Fatalf("the poll did not answer within %v", limit)
		return answer{}
	}
}

// progress is a deadline that moves while work moves: a busy machine makes
// work slow, not stop, so a wait fails once what it watches has not
// changed for its limit, or, changing or not, after its cap.
type progress struct {
	limit, capped time.Duration
	began, moved  time.Time
	last          []int64
}

func newProgress(limit, capped time.Duration) *progress {
	now := time.Now()
	return &progress{limit: limit, capped: capped, began: now, moved: now}
}

func (p *progress) String() string {
	return fmt.Sprintf("unchanged for %v, or %v in all", p.limit, p.capped)
}

// stalled reports whether the measures have stayed as they were for the
// limit, or the cap has passed.
func (p *progress) stalled(measures ...int64) bool {
	if !slices.Equal(measures, p.last) {
		p.last, p.moved = measures, time.Now()
	}
	return time.Since(p.moved) > p.limit || time.Since(p.began) > p.capped
}

func TestLongPollWokenByEnqueue(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		poll := h.pollAsync(t, q, `{"wait_ms":10000,"lease_ms":5000}`)
		stillWaiting(t, poll)
		h.add(t, q, "j")
		a := await(t, poll, 15*time.Second)
		jobs := must[jobList](t, a.reply, http.StatusOK).Jobs
		if len(jobs) != 1 || jobs[0].ID != "j" || jobs[0].Token <= 0 {
			t.Fatalf("the waiting claim got %v, want job j with a token", ids(jobs))
		}
		if a.took >= 9*time.Second {
			t.Errorf("the waiting claim answered after %v, want well before its 10s wait ended", a.took)
		}
		h.wantState(t, q, "j", "active")
	})
}

// TestLongPollWokenThroughAnyReplica: a claim waiting on one replica is
// answered by an enqueue, a retry or a promote made through another; the
// wake goes through Redis, not through the process.
func TestLongPollWokenThroughAnyReplica(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		if len(h.replicas) < 2 {
			return // one replica: TestLongPollWokenByEnqueue
		}
		q := redistest.Queue(t)
		waiting, other := h.only(0), h.only(1)
		wake := map[string]func(){
			"enqueue": func() { other.add(t, q, "e") },
			"promote": func() {
				other.enqueue(t, q, `{"id":"p","payload":1,"delay_ms":600000}`)
				must[jobView](t, other.do(t, "POST", jobPath(q, "p", "promote"), nil), http.StatusOK)
			},
			"retry": func() {
				other.enqueue(t, q, `{"id":"r","payload":1,"delay_ms":600000}`)
				must[jobView](t, other.cancel(t, q, "r", nil), http.StatusOK)
				must[jobView](t, other.do(t, "POST", jobPath(q, "r", "retry"), nil), http.StatusOK)
			},
		}
		for _, name := range []string{"enqueue", "promote", "retry"} {
			poll := waiting.pollAsync(t, q, `{"wait_ms":10000}`)
			stillWaiting(t, poll)
			wake[name]()
			a := await(t, poll, 15*time.Second)
			if jobs := must[jobList](t, a.reply, http.StatusOK).Jobs; len(jobs) != 1 || a.took >= 9*time.Second {
				t.Fatalf("%s through replica 1: the poll on replica 0 got %v after %v, want one job at once",
					name, ids(jobs), a.took)
			}
		}
	})
}

func TestLongPollTimesOutEmpty(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		a := await(t, h.pollAsync(t, q, `{"wait_ms":300}`), 15*time.Second)
		if jobs := must[jobList](t, a.reply, http.StatusOK).Jobs; jobs == nil || len(jobs) != 0 {
			t.Errorf("got %s, want {\"jobs\":[]}", a.reply)
		}
		if a.took < 290*time.Millisecond {
			t.Errorf("answered after %v, want after the 300ms wait", a.took)
		}
	})
}

// TestLongPollDelayedComesDue: a waiting claim answers soon after a delayed
// job comes due, however it became delayed. The harness runs no reaper: a
// claim moves due jobs itself.
func TestLongPollDelayedComesDue(t *testing.T) {
	t.Parallel()
	enqueueDelayed := func(t *testing.T, h *harness, q string, _ jobView) string {
		return h.enqueue(t, q, `{"id":"d","payload":1,"delay_ms":500}`).RunAt
	}
	failDelayed := func(t *testing.T, h *harness, q string, holder jobView) string {
		return must[jobView](t, h.fail(t, q, "d", holder.Token, `,"error":"x","retry_in_ms":500`), http.StatusOK).RunAt
	}
	for _, tc := range []struct {
		name  string
		early bool // d is delayed before the claim starts waiting
		held  bool // d is claimed first, and delayed by its holder's fail
		delay func(t *testing.T, h *harness, q string, holder jobView) string
	}{
		{"enqueued before the claim", true, false, enqueueDelayed},
		{"enqueued while the claim waits", false, false, enqueueDelayed},
		{"retried while the claim waits", false, true, failDelayed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			forEachBackend(t, func(t *testing.T, h *harness) {
				q := redistest.Queue(t)
				var holder jobView
				if tc.held {
					h.add(t, q, "d")
					holder = h.claimOne(t, q, "d", 30_000)
				}
				var poll <-chan answer
				if !tc.early {
					poll = h.pollAsync(t, q, `{"wait_ms":5000}`)
					stillWaiting(t, poll)
				}
				runAt := tc.delay(t, h, q, holder)
				if tc.early {
					poll = h.pollAsync(t, q, `{"wait_ms":5000}`)
				}
				a := await(t, poll, 15*time.Second)
				jobs := must[jobList](t, a.reply, http.StatusOK).Jobs
				if len(jobs) != 1 || jobs[0].ID != "d" {
					t.Fatalf("the waiting claim got %v, want d once it came due", ids(jobs))
				}
				if a.took >= 4*time.Second {
					t.Errorf("the waiting claim answered after %v, want soon after d came due at %s, well before its 5s wait ended", a.took, runAt)
				}
				if got := parseStamp(t, jobs[0].StartedAt); got.Before(parseStamp(t, runAt)) {
					t.Errorf("d was claimed at %v, before it came due at %s", got, runAt)
				}
			})
		})
	}
}

func TestLongPollStopping(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		polls := make([]<-chan answer, 3)
		for i := range polls {
			polls[i] = h.pollAsync(t, q, `{"wait_ms":30000}`)
		}
		stillWaiting(t, polls...)
		h.stop()
		for _, p := range polls {
			a := await(t, p, 10*time.Second)
			if jobs := must[jobList](t, a.reply, http.StatusOK).Jobs; jobs == nil || len(jobs) != 0 {
				t.Errorf("a poll answered %s at shutdown, want {\"jobs\":[]}", a.reply)
			}
		}
	})
}

// TestLongPollManyWaiters: waiting claimers hold no Redis connection, and
// each job goes to exactly one of them.
func TestLongPollManyWaiters(t *testing.T) {
	t.Parallel()
	const waiters, jobs, maxConns = 200, 20, 20
	// A pool big enough that a design holding a connection per waiter would
	// show it, and a small idle cap so that the claims' burst leaves none.
	bigPool := withClient(func(o *redis.Options) { o.PoolSize, o.MaxIdleConns = 400, 8 })
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		base := h.poolStats()
		maxConns := uint32(maxConns * len(h.clients)) // per replica
		answers := make(chan answer, waiters)
		for range waiters {
			go func() {
				start := time.Now()
				r := h.send(t, "POST", "/queues/"+q+"/claim", "application/json", []byte(`{"wait_ms":30000}`))
				answers <- answer{reply: r, took: time.Since(start)}
			}()
		}
		// Wait until every waiter sleeps (after a claim of its own, or at
		// once when its replica knew the queue empty) and the connections
		// have gone back, with nobody answered. The 200 claims queue at the
		// store (the embedded one runs one at a time), so a busy machine
		// takes a while: the wait fails once nothing moves for 20 s.
		progress := newProgress(20*time.Second, 2*time.Minute)
		for {
			s := h.poolStats()
			gets := s.Hits + s.Misses - base.Hits - base.Misses
			if len(answers) > 0 {
				t.Fatalf("a claim answered %s with no job there", (<-answers).reply)
			}
			asleep := h.sleeping(q)
			if asleep == waiters && gets > 0 && s.TotalConns <= maxConns {
				break
			}
			if progress.stalled(int64(asleep), int64(s.TotalConns)) {
				t.Fatalf("%d waiters: %d asleep, %d claims made, %d connections open (%v); want all asleep on <= %d connections",
					waiters, asleep, gets, s.TotalConns, progress, maxConns)
			}
			time.Sleep(20 * time.Millisecond)
		}
		for i := range jobs {
			h.add(t, q, fmt.Sprintf("j%02d", i))
		}
		var got []string
		for len(got) < jobs {
			a := await(t, answers, 20*time.Second)
			list := must[jobList](t, a.reply, http.StatusOK).Jobs
			if len(list) != 1 {
				t.Fatalf("a waiter got %v, want one job", ids(list))
			}
			got = append(got, list[0].ID)
		}
		// The claims' burst may leave connections that go back to the pool
		// a moment later (on a busy machine, go-redis dials ahead too); a
		// design that held one per waiter would keep 180 open.
		settle := newProgress(5*time.Second, time.Minute)
		for s := h.poolStats(); s.TotalConns > maxConns; s = h.poolStats() {
			if settle.stalled(int64(s.TotalConns)) {
				t.Errorf("%d connections open while %d claimers wait (%v), want <= %d",
					s.TotalConns, waiters-jobs, settle, maxConns)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		h.stop()
		for range waiters - jobs {
			a := await(t, answers, 20*time.Second)
			if list := must[jobList](t, a.reply, http.StatusOK).Jobs; len(list) != 0 {
				got = append(got, ids(list)...)
			}
		}
		sort.Strings(got)
		for i, id := range got {
			if i >= jobs || id != fmt.Sprintf("j%02d", i) {
				t.Fatalf("waiters got %v, want j00..j%02d each exactly once", got, jobs-1)
			}
		}
	}, bigPool)
}
