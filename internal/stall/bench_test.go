package stall_test

import (
	"context"
	"fmt"
	"math"
	"strings"
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

// BenchmarkIdlePass is what a reaper's pass costs when nothing is due: on
// one node it reads one key; on a Cluster (three masters) it reads every
// slot's due index, 16,384 keys in one pipeline, whatever the number of
// queues. It reports redis-us/op, the CPU Redis spent (all masters), and
// ns/op is the service's wall time of a pass. Run it with
//
//	go test -run '^$' -bench IdlePass -benchtime 20x ./internal/stall
func BenchmarkIdlePass(b *testing.B) {
	for _, shape := range []string{"node", "cluster"} {
		b.Run(shape, func(b *testing.B) {
			var rdb redis.UniversalClient
			var nodes []*redis.Client
			if shape == "cluster" {
				c := redistest.SharedCluster(b)
				rdb = c.Client(b)
				for _, addr := range c.Addrs() {
					node := redis.NewClient(&redis.Options{Addr: addr})
					b.Cleanup(func() { node.Close() })
					nodes = append(nodes, node)
				}
			} else {
				node := redis.NewClient(&redis.Options{Addr: redistest.StartServer(b).Addr})
				b.Cleanup(func() { node.Close() })
				rdb, nodes = node, []*redis.Client{node}
			}
			r := stall.NewReaper(stall.NewService(rdb, "emqidle-"+redistest.Queue(b)), stall.ReaperConfig{ClusterEvery: time.Nanosecond})
			ctx := context.Background()
			if _, err := r.Pass(ctx); err != nil { // the audit
				b.Fatal(err)
			}
			cpu := func() float64 {
				total := 0.0
				for _, n := range nodes {
					info := n.Info(ctx, "cpu").Val()
					for _, f := range []string{"used_cpu_sys:", "used_cpu_user:"} {
						if i := strings.Index(info, f); i >= 0 {
							var v float64
							fmt.Sscan(info[i+len(f):], &v)
							total += v
						}
					}
				}
				return total
			}
			before := cpu()
			b.ResetTimer()
			for range b.N {
				if _, err := r.Pass(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric((cpu()-before)*1e6/float64(b.N), "redis-us/op")
		})
	}
}
