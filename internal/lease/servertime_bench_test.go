package lease_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/internal/lease"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

// BenchmarkServerTime reports what each hot script costs Redis itself:
// server-µs/op is the time Redis spent running the script calls of the
// loop (INFO commandstats, commands run inside scripts included), over the
// calls. It is measured on a redis-server of its own, so no other test's
// calls count, and it leaves out the round trip, so it moves with the
// scripts and not with the machine's network stack. Run it with
//
//	go test -run '^$' -bench ServerTime -benchtime 2000x ./internal/lease
func BenchmarkServerTime(b *testing.B) {
	ctx := context.Background()
	next1 := &lease.ClaimParams{Count: 1, Lease: time.Hour}
	next16 := &lease.ClaimParams{Count: 16, Lease: time.Hour}
	for _, bc := range []struct {
		name string
		jobs int // jobs per call, for server-µs/job
		// setup makes what n calls need; run makes call i.
		run func(b *testing.B, f fixture, n int) func(i int)
	}{
		{"enqueue", 1, func(b *testing.B, f fixture, n int) func(int) {
			return func(int) { must(b, enqueueErr(f, 1)) }
		}},
		{"enqueue-100", 100, func(b *testing.B, f fixture, n int) func(int) {
			return func(int) { must(b, enqueueErr(f, 100)) }
		}},
		{"claim", 1, func(b *testing.B, f fixture, n int) func(int) {
			f.fill(b, n+100, nil)
			return func(int) {
				_, err := f.leases.Claim(ctx, f.queue, lease.ClaimParams{Count: 1, Lease: time.Hour})
				must(b, err)
			}
		}},
		{"claim-empty", 0, func(b *testing.B, f fixture, n int) func(int) {
			return func(int) {
				_, err := f.leases.Claim(ctx, f.queue, lease.ClaimParams{Count: 1, Lease: time.Hour})
				must(b, err)
			}
		}},
		{"complete", 1, func(b *testing.B, f fixture, n int) func(int) {
			held := hold(b, f, n)
			return func(i int) {
				_, _, err := f.leases.Complete(ctx, f.queue, held[i].ID, held[i].Token, nil, nil)
				must(b, err)
			}
		}},
		{"complete-next", 1, func(b *testing.B, f fixture, n int) func(int) {
			f.fill(b, n+100, nil)
			j := f.claimOne(b, time.Hour)
			return func(int) {
				_, claimed, err := f.leases.Complete(ctx, f.queue, j.ID, j.Token, nil, next1)
				must(b, err)
				j = claimed[0]
			}
		}},
		{"complete-16-next-16", 16, func(b *testing.B, f fixture, n int) func(int) {
			f.fill(b, 16*n+100, nil)
			c, err := f.leases.Claim(ctx, f.queue, *next16)
			must(b, err)
			held := c.Jobs
			return func(int) {
				batch := make([]lease.Completion, len(held))
				for k, h := range held {
					batch[k] = lease.Completion{ID: h.ID, Token: h.Token}
				}
				_, claimed, err := f.leases.CompleteBatch(ctx, f.queue, batch, next16)
				must(b, err)
				held = claimed
			}
		}},
		{"extend", 1, func(b *testing.B, f fixture, n int) func(int) {
			j := hold(b, f, 1)[0]
			return func(int) {
				_, err := f.leases.Extend(ctx, f.queue, j.ID, lease.ExtendParams{Token: j.Token, Lease: time.Hour})
				must(b, err)
			}
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			srv := redistest.StartServer(b, "--hash-max-listpack-value", "1024")
			rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
			b.Cleanup(func() { rdb.Close() })
			f := fixture{leases: lease.NewService(rdb, prefix), rdb: rdb, queue: "bench"}
			run := bc.run(b, f, b.N)
			// The first call on a server loads the library (and runs by
			// EVAL meanwhile): not what is measured.
			_, _ = f.leases.Cancellation(ctx, "warm", "up", 1)
			must(b, rdb.ConfigResetStat(ctx).Err())
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				run(i)
			}
			b.StopTimer()
			usec := scriptUsec(b, rdb)
			b.ReportMetric(usec/float64(b.N), "server-µs/op")
			if bc.jobs > 0 {
				b.ReportMetric(usec/float64(b.N*bc.jobs), "server-µs/job")
			}
		})
	}
}

// hold enqueues n jobs and claims them for an hour.
func hold(b *testing.B, f fixture, n int) []job.Job {
	b.Helper()
	f.fill(b, n, nil)
	var held []job.Job
	for len(held) < n {
		c, err := f.leases.Claim(context.Background(), f.queue, lease.ClaimParams{Count: min(100, n-len(held)), Lease: time.Hour})
		must(b, err)
		held = append(held, c.Jobs...)
	}
	return held
}

func enqueueErr(f fixture, n int) error {
	batch := make([]lease.NewJob, n)
	for i := range batch {
		batch[i] = lease.NewJob{Payload: payload100}
	}
	_, err := f.leases.Enqueue(context.Background(), f.queue, batch)
	return err
}

func must(b *testing.B, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}

// scriptUsec is the time Redis spent in script calls (FCALL, EVALSHA,
// EVAL) since the last CONFIG RESETSTAT, in µs.
func scriptUsec(b *testing.B, rdb *redis.Client) float64 {
	b.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	total := 0.0
	for _, line := range strings.Split(info, "\n") {
		name, stats, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || (name != "cmdstat_fcall" && name != "cmdstat_evalsha" && name != "cmdstat_eval") {
			continue
		}
		for _, kv := range strings.Split(stats, ",") {
			if v, ok := strings.CutPrefix(kv, "usec="); ok {
				n, _ := strconv.ParseFloat(v, 64)
				total += n
			}
		}
	}
	return total
}
