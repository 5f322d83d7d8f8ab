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
// one script call; MaxQueues of them one after another could take
// most of the scrape's timeout on a distant Redis.
const latencyReaders = 8

// WithLatency is depth with each queue's Latency read through latency: one
// call per queue, for the first limit queues only (not the extra entries
// that say the list was cut), latencyReaders at a time. An error of depth
// fails the read, as DepthFunc says; a queue whose latency cannot be read
// (an error, the scrape's time up) is marked NoLatency, and the others'
// gauges are served.
func WithLatency(depth DepthFunc, latency LatencyFunc) DepthFunc {
	return func(ctx context.Context, limit int) ([]QueueDepth, error) {
		queues, err := depth(ctx, limit)
		if err != nil {
			return queues, err
		}
		readLatencies(ctx, queues[:min(len(queues), limit)], latency)
		return queues, nil
	}
}

// readLatencies sets the Latency of each of queues, or its NoLatency when
// it cannot be read.
func readLatencies(ctx context.Context, queues []QueueDepth, latency LatencyFunc) {
	var (
		wg   sync.WaitGroup
		next atomic.Int64
	)
	for range min(latencyReaders, len(queues)) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(queues); i = int(next.Add(1) - 1) {
				q := &queues[i]
				if ctx.Err() != nil { // the scrape's time is up: the rest unread
					q.NoLatency = true
					continue
				}
				d, err := latency(ctx, q.Queue)
				q.Latency, q.NoLatency = d, err != nil
			}
		})
	}
	wg.Wait()
}
