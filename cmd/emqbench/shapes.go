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
	jobsPerSec  float64
	total       int64   // jobs completed (extends made) in the whole run, warm-up too
	redisPerJob float64 // Redis's CPU µs per job over the whole run (0: unknown)
	routes      []routeStats
	errors      int64
	firstErr    error
}

// load is one run in progress: producers and workers on one queue at once.
type load struct {
	d         driver
	queue     string
	shape     shape
	set       settings
	enqueued  atomic.Int64
	completed atomic.Int64
	measuring atomic.Bool
	stopped   atomic.Bool // loops stop at their next call; calls in flight finish
	errs      atomic.Int64
	firstErr  atomic.Pointer[error]
	lat       merged
}

// runShape runs producers and workers for warmup + duration and measures
// completions and call latencies in the duration only.
func runShape(ctx context.Context, d driver, queue string, sh shape, set settings) outcome {
	l := &load{d: d, queue: queue, shape: sh, set: set}
	var wg sync.WaitGroup
	for range set.producers {
		wg.Go(func() { l.produce(ctx) })
	}
	for range set.workers {
		wg.Go(func() { l.work(ctx) })
	}
	time.Sleep(set.warmup)
	l.measuring.Store(true)
	start, before := time.Now(), l.completed.Load()
	time.Sleep(set.duration)
	done, elapsed := l.completed.Load()-before, time.Since(start)
	l.measuring.Store(false)
	l.stop(&wg)
	out := outcome{jobsPerSec: float64(done) / elapsed.Seconds(), total: l.completed.Load(),
		routes: l.lat.stats(), errors: l.errs.Load()}
	if p := l.firstErr.Load(); p != nil {
		out.firstErr = *p
	}
	return out
}

// stop ends the run's loops and waits for their calls in flight to finish,
// so that no call lands after the queue is cleaned up.
func (l *load) stop(wg *sync.WaitGroup) {
	l.stopped.Store(true)
	wg.Wait()
}

// running reports whether the loops should go on.
func (l *load) running(ctx context.Context) bool {
	return !l.stopped.Load() && ctx.Err() == nil
}

// timed runs call, recording its latency under route while measuring; an
// error (other than the run ending) is counted and slows the caller a
// little, so a failing service is not hammered.
func (l *load) timed(ctx context.Context, lat latencies, route string, call func() error) bool {
	start := time.Now()
	err := call()
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

// produce enqueues until the run ends, holding the backlog under its cap
// so that a run measures a steady state, not a queue growing without end.
func (l *load) produce(ctx context.Context) {
	lat := latencies{}
	defer l.lat.merge(lat)
	n, route := 1, "enqueue"
	if l.shape == batch {
		n, route = l.set.enqueueBatch, fmt.Sprintf("enqueue %d", l.set.enqueueBatch)
	}
	for l.running(ctx) {
		if l.enqueued.Load()-l.completed.Load() > l.set.backlog {
			time.Sleep(time.Millisecond)
			continue
		}
		if l.timed(ctx, lat, route, func() error { return l.d.enqueue(ctx, l.queue, n) }) {
			l.enqueued.Add(int64(n))
		}
	}
}

// work claims and completes until the run ends, in the shape's way.
func (l *load) work(ctx context.Context) {
	lat := latencies{}
	defer l.lat.merge(lat)
	count := 1
	if l.shape == batch {
		count = l.set.claimCount
	}
	claimRoute := fmt.Sprintf("claim %d", count)
	batchRoute := fmt.Sprintf("complete %d+claim %d", count, count)
	var held []ticket
	for l.running(ctx) {
		if len(held) == 0 {
			l.timed(ctx, lat, claimRoute, func() (err error) {
				held, err = l.d.claim(ctx, l.queue, count, time.Second)
				return err
			})
			continue
		}
		switch l.shape {
		case single:
			for _, t := range held {
				if l.timed(ctx, lat, "complete", func() error { _, err := l.d.complete(ctx, l.queue, t, 0); return err }) {
					l.completed.Add(1)
				}
			}
			held = nil
		case next:
			var got []ticket
			if l.timed(ctx, lat, "complete+claim 1", func() (err error) {
				got, err = l.d.complete(ctx, l.queue, held[0], 1)
				return err
			}) {
				l.completed.Add(1)
			}
			held = got
		case batch:
			var got []ticket
			if l.timed(ctx, lat, batchRoute, func() (err error) {
				got, err = l.d.completeBatch(ctx, l.queue, held, count)
				return err
			}) {
				l.completed.Add(int64(len(held)))
			}
			held = got
		}
	}
}
