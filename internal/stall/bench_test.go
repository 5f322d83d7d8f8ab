package stall_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/lease"
	"github.com/echo-mq/echo_mq/internal/redistest"
	"github.com/echo-mq/echo_mq/internal/stall"
)

// BenchmarkSweep sweeps 100 lapsed leases among 1,000 and among 1,000,000
// live ones (an hour's lease): the sweep reads only the lapsed range of the
// active set, so both should cost the same. Each size is made once, on a
// redis-server of its own. Each iteration claims the 100 recovered jobs
// again with a 1 ms lease and waits 2 ms, timer stopped. It reports x-ping,
// ns/op over a PING round trip of the same client, and for the big set
// x-active1000, ns/op over the small set's of the same run. Run it with
//
//	go test -run '^$' -bench Sweep -benchtime 2000x ./internal/stall
func BenchmarkSweep(b *testing.B) {
	const lapsed = 100
	var small float64
	for _, active := range []int{1000, 1_000_000} {
		b.Run(fmt.Sprintf("active=%d", active), func(b *testing.B) {
			rdb := redis.NewClient(&redis.Options{Addr: redistest.StartServer(b).Addr})
			b.Cleanup(func() { rdb.Close() })
			leases, sweeper, queue := lease.NewService(rdb, prefix), stall.NewService(rdb, prefix), redistest.Queue(b)
			ctx := context.Background()
			enqueue(b, leases, queue, active+lapsed)
			for left := active; left > 0; left -= 1000 {
				if _, err := leases.Claim(ctx, queue, lease.ClaimParams{Count: min(left, 1000), Lease: time.Hour}); err != nil {
					b.Fatal(err)
				}
			}
			p := stall.SweepParams{MaxStalled: math.MaxInt32} // never dead-lettered
			for b.Loop() {
				b.StopTimer()
				c, err := leases.Claim(ctx, queue, lease.ClaimParams{Count: lapsed, Lease: time.Millisecond})
				if err != nil || len(c.Jobs) != lapsed {
					b.Fatalf("claim: %v, %d jobs", err, len(c.Jobs))
				}
				time.Sleep(2 * time.Millisecond)
				b.StartTimer()
				s, err := sweeper.Sweep(ctx, queue, p)
				if err != nil || len(s.Recovered) != lapsed {
					b.Fatalf("sweep: %v, %d recovered", err, len(s.Recovered))
				}
			}
			perOp := float64(b.Elapsed()) / float64(b.N)
			b.ReportMetric(perOp/pingNanos(b, rdb), "x-ping")
			if active == 1000 {
				small = perOp
			} else if small > 0 {
				b.ReportMetric(perOp/small, "x-active1000")
			}
		})
	}
}

// enqueue adds n jobs in batches of 1000.
func enqueue(b *testing.B, leases *lease.Service, queue string, n int) {
	b.Helper()
	for done := 0; done < n; {
		batch := make([]lease.NewJob, min(n-done, 1000))
		for i := range batch {
			batch[i] = lease.NewJob{Payload: []byte(`{"n":1}`)}
		}
		if _, err := leases.Enqueue(context.Background(), queue, batch); err != nil {
			b.Fatal(err)
		}
		done += len(batch)
	}
}

// pingNanos is a PING round trip on rdb, averaged over a thousand.
func pingNanos(b *testing.B, rdb redis.UniversalClient) float64 {
	b.Helper()
	const pings = 1000
	start := time.Now()
	for range pings {
		if err := rdb.Ping(context.Background()).Err(); err != nil {
			b.Fatal(err)
		}
	}
	return float64(time.Since(start)) / pings
}
