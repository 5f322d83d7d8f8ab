package http_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/redistest"
)

// The long-poll figures. Run them with
//
//	go test -run '^$' -bench LongPollWake -benchtime 200x ./internal/http
//	go test -run '^$' -bench LongPollIdle -benchtime 1x ./internal/http
//
// BenchmarkLongPollWake reports the time from an enqueue's answer to the
// waiting claimer's answer (p50, p99), next to the PING round trip of the
// same run as the baseline. BenchmarkLongPollIdle holds 2,000 claimers
// waiting on empty queues for 5 s and reports the CPU they cost (% of one
// core) and the Redis connections open and in use meanwhile, on go-redis's
// default pool (10 per core), as the service runs.

func BenchmarkLongPollWake(b *testing.B) {
	rdb := redistest.Client(b)
	h := newHarness(b, rdb)
	q := redistest.Queue(b)
	ctx := context.Background()
	var wake, ping []time.Duration
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		poll := h.pollAsync(b, q, `{"wait_ms":10000}`)
		time.Sleep(5 * time.Millisecond) // let it register and find nothing
		start := time.Now()
		if err := rdb.Ping(ctx).Err(); err != nil {
			b.Fatal(err)
		}
		ping = append(ping, time.Since(start))
		b.StartTimer()
		h.enqueue(b, q, map[string]any{"id": fmt.Sprint("j", i), "payload": i})
		enqueued := time.Now()
		if a := await(b, poll, 10*time.Second); a.Status != 200 || len(decode[jobList](b, a.reply).Jobs) != 1 {
			b.Fatalf("the poll answered %s, want the job", a.reply)
		}
		wake = append(wake, time.Since(enqueued))
	}
	b.ReportMetric(ms(percentile(wake, 50)), "wake-p50-ms")
	b.ReportMetric(ms(percentile(wake, 99)), "wake-p99-ms")
	b.ReportMetric(ms(percentile(ping, 50)), "ping-p50-ms")
}

func BenchmarkLongPollIdle(b *testing.B) {
	const waiters, idleFor = 2000, 5 * time.Second
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Addr()}) // the service's default pool
	b.Cleanup(func() { rdb.Close() })
	h := newHarness(b, rdb)
	for b.Loop() {
		var wg sync.WaitGroup
		for i := range waiters {
			wg.Add(1)
			go func() {
				defer wg.Done()
				h.do(b, "POST", fmt.Sprintf("/queues/idle-%d/claim", i%100), `{"wait_ms":30000}`)
			}()
		}
		time.Sleep(time.Second) // every claimer has found nothing and waits
		before := cpuTime()
		time.Sleep(idleFor)
		b.ReportMetric(100*float64(cpuTime()-before)/float64(idleFor), "cpu-%-of-core")
		stats := rdb.PoolStats()
		b.ReportMetric(float64(stats.TotalConns), "redis-conns-open")
		b.ReportMetric(float64(stats.TotalConns-stats.IdleConns), "redis-conns-in-use")
		h.stop()
		wg.Wait()
	}
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func percentile(d []time.Duration, p int) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
