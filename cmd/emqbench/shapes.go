package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// shape is one way of driving the queue, as the issue names them.
type shape string

const (
	single shape = "single" // enqueue, claim, complete: one request per step
	next   shape = "next"   // enqueue; complete with claim-next: one request per job
	batch  shape = "batch"  // enqueue batches; claim many; batch complete with claim-next
)

// settings are the knobs every shape shares.
type settings struct {
	producers, workers int
	enqueueBatch       int // jobs per enqueue request in the batch shape
	claimCount         int // jobs per claim in the batch shape
	backlog            int64
	warmup, duration   time.Duration
}

// outcome is what one run of one shape through one driver measured.
type outcome struct {
	jobsPerSec     float64
	total          int64   // jobs completed (extends made) in the whole run, warm-up too
	perQueue       []int64 // of total, each queue's part
	calls          int64   // calls made in the whole run, warm-up and failed ones too
	redisPerJob    float64 // Redis's CPU µs per job over the whole run (0: unknown)
	servicePerCall float64 // the service's CPU µs per HTTP request over the whole run (0: unknown)
	routes         []routeStats
	errors         int64
	firstErr       error
}

// load is one run in progress: producers and workers on its queues at once.
type load struct {
	d         driver
	queues    []string
	shape     shape
	set       settings
	share     int64          // each queue's part of the backlog cap
	pending   []atomic.Int64 // per queue: jobs enqueued and not completed
	done      []atomic.Int64 // per queue: jobs completed (extends made)
	completed atomic.Int64   // every queue's together
	measuring atomic.Bool
	stopped   atomic.Bool // loops stop at their next call; calls in flight finish
	calls     atomic.Int64
	errs      atomic.Int64
	firstErr  atomic.Pointer[error]
	lat       merged

	claimRoute, batchRoute string // route names, made once
}

// newLoad prepares a run over queues. The backlog cap is split evenly
// between them, so that producers keep every queue supplied rather than
// fill a few.
func newLoad(d driver, queues []string, sh shape, set settings) *load {
	l := &load{d: d, queues: queues, shape: sh, set: set, share: set.backlog / int64(len(queues)),
		pending: make([]atomic.Int64, len(queues)), done: make([]atomic.Int64, len(queues))}
	count := l.claimCount()
	l.claimRoute = fmt.Sprintf("claim %d", count)
	l.batchRoute = fmt.Sprintf("complete %d+claim %d", count, count)
	return l
}

// finished counts n jobs completed (or extends made) on queue q.
func (l *load) finished(q int, n int64) {
	l.pending[q].Add(-n)
	l.done[q].Add(n)
	l.completed.Add(n)
}

// runShape runs producers and workers over queues for warmup + duration
// and measures completions and call latencies in the duration only.
// Producers take the queues in turn, each from its own starting point;
// workers are split between them (see servedBy).
func runShape(ctx context.Context, d driver, queues []string, sh shape, set settings) outcome {
	l := newLoad(d, queues, sh, set)
	var wg sync.WaitGroup
	for p := range set.producers {
		wg.Go(func() { l.produce(ctx, p*len(queues)/set.producers) })
	}
	for w := range set.workers {
		wg.Go(func() { l.work(ctx, servedBy(w, set.workers, len(queues))) })
	}
	time.Sleep(set.warmup)
	l.measuring.Store(true)
	start, before := time.Now(), l.completed.Load()
	time.Sleep(set.duration)
	done, elapsed := l.completed.Load()-before, time.Since(start)
	l.measuring.Store(false)
	l.stop(&wg)
	return l.outcome(float64(done) / elapsed.Seconds())
}

// outcome gathers what the finished run counted.
func (l *load) outcome(rate float64) outcome {
	out := outcome{jobsPerSec: rate, total: l.completed.Load(), calls: l.calls.Load(), routes: l.lat.stats(), errors: l.errs.Load()}
	for q := range l.done {
		out.perQueue = append(out.perQueue, l.done[q].Load())
	}
	if p := l.firstErr.Load(); p != nil {
		out.firstErr = *p
	}
	return out
}

// servedBy is the queues worker w of workers serves, of n: queue w mod n,
// so that every queue has workers and, with as many workers as queues or
// a multiple, each worker one queue to long-poll; with fewer workers than
// queues, worker w serves w, w+workers, w+2*workers and so on.
func servedBy(w, workers, n int) []int {
	if workers >= n {
		return []int{w % n}
	}
	var mine []int
	for q := w; q < n; q += workers {
		mine = append(mine, q)
	}
	return mine
}

// stop ends the run's loops and waits for their calls in flight to finish,
// so that no call lands after the queues are cleaned up.
func (l *load) stop(wg *sync.WaitGroup) {
	l.stopped.Store(true)
	wg.Wait()
}

// running reports whether the loops should go on.
func (l *load) running(ctx context.Context) bool {
	return !l.stopped.Load() && ctx.Err() == nil
}

// timed runs call, counting it and recording its latency under route while
// measuring; an error (other than the run ending) is counted and slows the
// caller a little, so a failing service is not hammered.
func (l *load) timed(ctx context.Context, lat latencies, route string, call func() error) bool {
	start := time.Now()
	err := call()
	l.calls.Add(1)
	if l.measuring.Load() {
		lat.add(route, time.Since(start))
	}
	if err == nil {
		return true
	}
	if ctx.Err() == nil && !errors.Is(err, context.Canceled) {
		l.errs.Add(1)
		l.firstErr.CompareAndSwap(nil, &err)
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// produce enqueues until the run ends, to the queues in turn from first,
// passing over a queue whose share of the backlog is full, so that a run
// measures a steady state, not a queue growing without end.
func (l *load) produce(ctx context.Context, first int) {
	lat := latencies{}
	defer l.lat.merge(lat)
	n, route := int64(1), "enqueue"
	if l.shape == batch {
		n, route = int64(l.set.enqueueBatch), fmt.Sprintf("enqueue %d", l.set.enqueueBatch)
	}
	for q := first; l.running(ctx); q = (q + 1) % len(l.queues) {
		var ok bool
		if q, ok = l.reserve(q, n); !ok {
			time.Sleep(time.Millisecond)
			continue
		}
		if !l.timed(ctx, lat, route, func() error { return l.d.enqueue(ctx, l.queues[q], int(n)) }) {
			l.pending[q].Add(-n)
		}
	}
}

// reserve counts n jobs as pending on the first queue from q on whose
// share of the backlog is not full, and returns it; false when none has
// room. It counts them before they are enqueued: counted after, every
// producer would see room on the same queue while their calls are in
// flight and all enqueue there at once.
func (l *load) reserve(q int, n int64) (int, bool) {
	for range l.queues {
		if l.pending[q].Add(n)-n <= l.share {
			return q, true
		}
		l.pending[q].Add(-n)
		q = (q + 1) % len(l.queues)
	}
	return 0, false
}

// work claims and completes on the queues of mine until the run ends, in
// the shape's way. It stays on a queue while its claim-next chain goes on
// and then moves to the next of mine; it long-polls only once a claim on
// each of them in turn found nothing (at once, with one queue).
func (l *load) work(ctx context.Context, mine []int) {
	lat := latencies{}
	defer l.lat.merge(lat)
	at, idle := 0, 0 // where in mine; claims in a row that found nothing
	for l.running(ctx) {
		q, wait := mine[at], time.Duration(0)
		if idle >= len(mine)-1 {
			wait = time.Second
		}
		held := l.claim(ctx, lat, q, wait)
		if len(held) > 0 {
			idle = 0
		} else {
			idle++
		}
		for len(held) > 0 && l.running(ctx) {
			held = l.finish(ctx, lat, q, held)
		}
		at = (at + 1) % len(mine)
	}
}

// claim leases jobs of queue q as the shape does: one, or a claim's count
// in the batch shape.
func (l *load) claim(ctx context.Context, lat latencies, q int, wait time.Duration) []ticket {
	var held []ticket
	l.timed(ctx, lat, l.claimRoute, func() (err error) {
		held, err = l.d.claim(ctx, l.queues[q], l.claimCount(), wait)
		return err
	})
	return held
}

func (l *load) claimCount() int {
	if l.shape == batch {
		return l.set.claimCount
	}
	return 1
}

// finish completes the jobs of queue q a worker holds, in the shape's way,
// and returns those it claimed in the same call (claim-next), if any.
func (l *load) finish(ctx context.Context, lat latencies, q int, held []ticket) []ticket {
	queue := l.queues[q]
	var got []ticket
	switch l.shape {
	case single:
		for _, t := range held {
			if l.timed(ctx, lat, "complete", func() error { _, err := l.d.complete(ctx, queue, t, 0); return err }) {
				l.finished(q, 1)
			}
		}
	case next:
		if l.timed(ctx, lat, "complete+claim 1", func() (err error) {
			got, err = l.d.complete(ctx, queue, held[0], 1)
			return err
		}) {
			l.finished(q, 1)
		}
	case batch:
		if l.timed(ctx, lat, l.batchRoute, func() (err error) {
			got, err = l.d.completeBatch(ctx, queue, held, l.claimCount())
			return err
		}) {
			l.finished(q, int64(len(held)))
		}
	}
	return got
}
