package main

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// extendLoad holds jobs leases and renews them at a fixed total rate, as
// many workers checkpointing long jobs would: the extend figure is its
// latency at that rate, not a throughput.
type extendLoad struct {
	jobs, goroutines int
	rate             float64 // extends per second, all goroutines together
	warmup, duration time.Duration
}

// runExtend enqueues and claims e.jobs jobs, split evenly over queues,
// then extends their leases round-robin at e.rate for warmup + duration,
// and measures the duration.
func runExtend(ctx context.Context, d driver, queues []string, e extendLoad) (outcome, error) {
	held, err := holdEach(ctx, d, queues, e.jobs)
	if err != nil {
		return outcome{}, err
	}
	l := newLoad(d, queues, "extend", settings{})
	var wg sync.WaitGroup
	interval := time.Duration(float64(time.Second) * float64(e.goroutines) / e.rate)
	for g := range e.goroutines {
		mine := held[g*len(held)/e.goroutines : (g+1)*len(held)/e.goroutines]
		wg.Go(func() { l.extendEvery(ctx, mine, interval) })
	}
	time.Sleep(e.warmup)
	l.measuring.Store(true)
	start := time.Now()
	time.Sleep(e.duration)
	l.measuring.Store(false)
	elapsed := time.Since(start)
	l.stop(&wg)
	out := l.outcome(0)
	for _, r := range out.routes {
		out.jobsPerSec = float64(r.calls) / elapsed.Seconds() // extends/s achieved
	}
	return out, nil
}

// heldJob is a leased job and the index of its queue.
type heldJob struct {
	queue int
	t     ticket
}

// holdEach holds n jobs in all, an even part of them on each queue. Every
// job is then extended as often as any other, so the queues share the
// load evenly too.
func holdEach(ctx context.Context, d driver, queues []string, n int) ([]heldJob, error) {
	var held []heldJob
	for q, queue := range queues {
		got, err := holdJobs(ctx, d, queue, n*(q+1)/len(queues)-n*q/len(queues))
		if err != nil {
			return nil, err
		}
		for _, t := range got {
			held = append(held, heldJob{queue: q, t: t})
		}
	}
	return held, nil
}

// holdJobs enqueues n jobs and claims every one of them with a long lease.
func holdJobs(ctx context.Context, d driver, queue string, n int) ([]ticket, error) {
	for left := n; left > 0; left -= 100 {
		if err := d.enqueue(ctx, queue, min(left, 100)); err != nil {
			return nil, err
		}
	}
	var held []ticket
	for len(held) < n {
		got, err := d.claim(ctx, queue, min(n-len(held), 100), time.Second)
		if err != nil {
			return nil, err
		}
		if len(got) == 0 {
			return nil, fmt.Errorf("claimed %d of %d jobs, then none", len(held), n)
		}
		held = append(held, got...)
	}
	return held, nil
}

// extendEvery renews the leases of held, one per tick, round-robin.
func (l *load) extendEvery(ctx context.Context, held []heldJob, interval time.Duration) {
	lat := latencies{}
	defer l.lat.merge(lat)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for i := 0; l.running(ctx); i++ {
		<-tick.C
		h := held[i%len(held)]
		if l.timed(ctx, lat, "extend", func() error { return l.d.extend(ctx, l.queues[h.queue], h.t, time.Minute) }) {
			l.finished(h.queue, 1)
		}
	}
}
