package metrics

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// LatencyFunc answers how long queue's oldest claimable pending job has
// waited, 0 when none is pending, as (*history.Reader).Latency does.
type LatencyFunc func(ctx context.Context, queue string) (time.Duration, error)

// latencyReaders bounds the latency reads one scrape has in flight. Each is
// one script call; MaxDepthQueues of them one after another could take
// most of the scrape's timeout on a distant Redis.
const latencyReaders = 8

// WithLatency is depth with each queue's Latency read through latency: one
// call per queue, for the first limit queues only (not the extra entries
// that say the list was cut), latencyReaders at a time. An error of either
// fails the read, as DepthFunc says.
func WithLatency(depth DepthFunc, latency LatencyFunc) DepthFunc {
	return func(ctx context.Context, limit int) ([]QueueDepth, error) {
		queues, err := depth(ctx, limit)
		if err != nil {
			return queues, err
		}
		return queues, readLatencies(ctx, queues[:min(len(queues), limit)], latency)
	}
}

// readLatencies sets the Latency of each of queues, stopping at the first
// error (a cancelled ctx among them), which it returns.
func readLatencies(ctx context.Context, queues []QueueDepth, latency LatencyFunc) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		next  atomic.Int64
		once  sync.Once
		first error
	)
	read := func(i int) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		d, err := latency(ctx, queues[i].Queue)
		queues[i].Latency = d
		return err
	}
	for range min(latencyReaders, len(queues)) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(queues); i = int(next.Add(1) - 1) {
				if err := read(i); err != nil {
					once.Do(func() { first = err })
					cancel()
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}
