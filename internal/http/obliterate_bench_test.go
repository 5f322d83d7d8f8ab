package http_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/admin"
	"github.com/echo-mq/echo_mq/internal/lease"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

// BenchmarkObliterateMillion fills a queue with 1,000,000 pending jobs on a
// redis-server of its own, then obliterates it, and reports how long that
// took, the longest single Redis call meanwhile (from SLOWLOG), and the
// Redis memory a pending job costs. Run it with
//
//	go test -run '^$' -bench ObliterateMillion -benchtime 1x -timeout 30m ./internal/http
func BenchmarkObliterateMillion(b *testing.B) {
	const jobs = 1_000_000
	server := redistest.StartServer(b)
	rdb := redis.NewClient(&redis.Options{Addr: server.Addr})
	b.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	leases, adm := lease.NewService(rdb, "bench"), admin.NewService(rdb, "bench")
	for b.Loop() {
		b.StopTimer()
		base := usedMemory(b, rdb)
		fill(b, leases, "big", jobs)
		perJob := float64(usedMemory(b, rdb)-base) / jobs
		rdb.ConfigSet(ctx, "slowlog-log-slower-than", "1000") // µs
		rdb.ConfigSet(ctx, "slowlog-max-len", "100000")
		rdb.SlowLogReset(ctx)
		b.StartTimer()
		start := time.Now()
		n, err := adm.Obliterate(ctx, "big", false)
		took := time.Since(start)
		b.StopTimer()
		if err != nil || n != jobs {
			b.Fatalf("obliterated %d jobs (%v), want %d", n, err, jobs)
		}
		if keys := rdb.DBSize(ctx).Val(); keys > 1 { // the queues set is gone too; nothing else
			b.Fatalf("%d keys left after obliterate", keys)
		}
		b.ReportMetric(took.Seconds(), "obliterate-s")
		b.ReportMetric(ms(longestCall(b, rdb)), "longest-call-ms")
		b.ReportMetric(perJob, "bytes/pending-job")
		b.StartTimer()
	}
}

// fill enqueues n jobs with a 100-byte payload in batches of 1000.
func fill(tb testing.TB, leases *lease.Service, queue string, n int) {
	payload := []byte(`{"body":"` + strings.Repeat("x", 89) + `"}`) // 100 bytes
	batch := make([]lease.NewJob, 1000)
	for done := 0; done < n; done += len(batch) {
		for i := range batch {
			batch[i] = lease.NewJob{Payload: payload}
		}
		if _, err := leases.Enqueue(context.Background(), queue, batch); err != nil {
			tb.Fatal(err)
		}
	}
}

func usedMemory(tb testing.TB, rdb *redis.Client) int64 {
	var used int64
	info := rdb.InfoMap(context.Background(), "memory").Val()
	if _, err := fmt.Sscan(info["Memory"]["used_memory"], &used); err != nil {
		tb.Fatal(err)
	}
	return used
}

// longestCall is the longest command in the slow log.
func longestCall(tb testing.TB, rdb *redis.Client) time.Duration {
	entries, err := rdb.SlowLogGet(context.Background(), -1).Result()
	if err != nil {
		tb.Fatal(err)
	}
	var longest time.Duration
	for _, e := range entries {
		longest = max(longest, e.Duration)
	}
	return longest
}
