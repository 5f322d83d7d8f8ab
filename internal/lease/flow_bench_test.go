package lease_test

import (
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/flow"
	"github.com/echo-mq/echo_mq/internal/lease"
)

// BenchmarkClaimByGroups claims one job at a time from a queue whose jobs
// are spread over 10 or 10,000 groups, and from queues without groups,
// with and without limits. Besides ns/op it reports redis-µs/op: the Redis
// server's own time per claim (INFO commandstats), which the round trip
// does not blur. The claim of a grouped queue costs O(log groups):
//
//	go test -run '^$' -bench ClaimByGroups -count 3 ./internal/lease
func BenchmarkClaimByGroups(b *testing.B) {
	cases := []struct {
		name     string
		groups   int // 0: no groups
		settings flow.Settings
	}{
		{"plain", 0, flow.Settings{}},
		{"limits", 0, flow.Settings{Concurrency: intp(100_000), RateLimit: &flow.Rate{Limit: 1_000_000, WindowMS: 1000}}},
		{"groups=10", 10, flow.Settings{}},
		{"groups=10000", 10_000, flow.Settings{}},
		{"groups=10000,limits", 10_000, flow.Settings{GroupConcurrency: intp(100_000), GroupRateLimit: &flow.Rate{Limit: 1_000_000, WindowMS: 1000}}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			f := newFixture(b)
			ctx := context.Background()
			if !c.settings.None() {
				f.setSettings(b, c.settings)
			}
			jobs := max(b.N, c.groups, 1)
			batch := make([]lease.NewJob, 0, 1000)
			for i := 0; i < jobs; i++ {
				nj := lease.NewJob{Payload: json.RawMessage(`{"n":1}`)}
				if c.groups > 0 {
					nj.Group = "g" + strconv.Itoa(i%c.groups)
				}
				if batch = append(batch, nj); len(batch) == cap(batch) || i == jobs-1 {
					if _, err := f.leases.Enqueue(ctx, f.queue, batch); err != nil {
						b.Fatal(err)
					}
					batch = batch[:0]
				}
			}
			before := fcallStats(b, f.rdb)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				got, err := f.leases.Claim(ctx, f.queue, lease.ClaimParams{Lease: time.Hour})
				if err != nil || len(got.Jobs) != 1 {
					b.Fatalf("claim %d: %v, %d jobs", i, err, len(got.Jobs))
				}
			}
			b.StopTimer()
			after := fcallStats(b, f.rdb)
			if calls := after.calls - before.calls; calls > 0 {
				b.ReportMetric(float64(after.usec-before.usec)/float64(calls), "redis-µs/op")
			}
		})
	}
}

type callStats struct{ calls, usec int64 }

var fcallLine = regexp.MustCompile(`cmdstat_(?:fcall|evalsha):calls=(\d+),usec=(\d+)`)

// fcallStats sums the server's script calls and their time so far.
func fcallStats(b *testing.B, rdb redis.UniversalClient) callStats {
	b.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	var s callStats
	for _, m := range fcallLine.FindAllStringSubmatch(info, -1) {
		calls, _ := strconv.ParseInt(m[1], 10, 64)
		usec, _ := strconv.ParseInt(m[2], 10, 64)
		s.calls, s.usec = s.calls+calls, s.usec+usec
	}
	return s
}
