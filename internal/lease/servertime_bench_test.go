package lease_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/batch"
	"github.com/echo-mq/echo_mq/internal/flow"
	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/internal/lease"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

// BenchmarkServerTime reports what each hot script costs Redis itself:
// server-µs/op is the time Redis spent running the script calls of the
// loop (INFO commandstats, commands run inside scripts included), over the
// calls. It is measured on a redis-server of its own, so no other test's
// calls count, and it leaves out the round trip. On a shared machine that
// time is noisy (another process's turn on the core counts); bench/instructions
// runs the benchmark against a redis-server under valgrind's callgrind
// instead, and then it also reports instr/op: the instructions Redis ran
// for the loop's calls, the same on every run of the same code. Run it with
//
//	go test -run '^$' -bench ServerTime -benchtime 2000x ./internal/lease
//	bench/instructions
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
		// Admission and lifetimes (docs/admission.md): a job with a dedupe
		// key (its own), an expiry and a timeout, enqueued, claimed and
		// extended.
		{"enqueue-admitted", 1, func(b *testing.B, f fixture, n int) func(int) {
			return func(i int) {
				_, err := f.leases.Enqueue(ctx, f.queue, []lease.NewJob{admitted(i)})
				must(b, err)
			}
		}},
		{"claim-admitted", 1, func(b *testing.B, f fixture, n int) func(int) {
			for i := 0; i < n+100; i++ {
				_, err := f.leases.Enqueue(ctx, f.queue, []lease.NewJob{admitted(i)})
				must(b, err)
			}
			return func(int) {
				_, err := f.leases.Claim(ctx, f.queue, lease.ClaimParams{Count: 1, Lease: time.Hour})
				must(b, err)
			}
		}},
		{"extend-timeout", 1, func(b *testing.B, f fixture, n int) func(int) {
			_, err := f.leases.Enqueue(ctx, f.queue, []lease.NewJob{admitted(0)})
			must(b, err)
			j := f.claimOne(b, time.Hour)
			return func(int) {
				_, err := f.leases.Extend(ctx, f.queue, j.ID, lease.ExtendParams{Token: j.Token, Lease: time.Minute})
				must(b, err)
			}
		}},
		{"claim", 1, func(b *testing.B, f fixture, n int) func(int) {
			f.fill(b, n+100, nil)
			return func(int) {
				_, err := f.leases.Claim(ctx, f.queue, lease.ClaimParams{Count: 1, Lease: time.Hour})
				must(b, err)
			}
		}},
		// A push delivery's claim (docs/push.md): capped by the queue's
		// active jobs (claim.lua's max_active), a cap that does not bind.
		{"claim-push", 1, func(b *testing.B, f fixture, n int) func(int) {
			f.fill(b, n+100, nil)
			return func(int) {
				_, err := f.leases.Claim(ctx, f.queue, lease.ClaimParams{Count: 1, Lease: time.Hour, MaxActive: 1_000_000})
				must(b, err)
			}
		}},
		// Flow control (docs/flow-control.md): limits that do not bind, and
		// a claim over 10 or 10,000 groups, which costs O(log groups).
		{"claim-limits", 1, func(b *testing.B, f fixture, n int) func(int) {
			f.flowFill(b, n+100, 0, flow.Settings{Concurrency: intp(1_000_000), RateLimit: &flow.Rate{Limit: 1_000_000, WindowMS: 1000}})
			return func(int) {
				_, err := f.leases.Claim(ctx, f.queue, lease.ClaimParams{Count: 1, Lease: time.Hour})
				must(b, err)
			}
		}},
		{"claim-groups-10", 1, func(b *testing.B, f fixture, n int) func(int) {
			f.flowFill(b, n+100, 10, flow.Settings{})
			return func(int) {
				_, err := f.leases.Claim(ctx, f.queue, lease.ClaimParams{Count: 1, Lease: time.Hour})
				must(b, err)
			}
		}},
		{"claim-groups-10000", 1, func(b *testing.B, f fixture, n int) func(int) {
			f.flowFill(b, n+10_000, 10_000, flow.Settings{})
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
		// Batches and dependencies (docs/batches.md): 100 jobs added to an
		// open batch; a complete of a job of a batch; a complete that
		// releases the one job waiting for it.
		{"enqueue-100-batched", 100, func(b *testing.B, f fixture, n int) func(int) {
			bs := batch.NewService(f.rdb, prefix, f.leases)
			_, _, _, err := bs.Create(ctx, f.queue, "bench", nil, true, batch.Callback{When: batch.WhenComplete})
			must(b, err)
			return func(int) {
				jobs := make([]lease.NewJob, 100)
				for k := range jobs {
					jobs[k] = lease.NewJob{Payload: payload100}
				}
				_, _, err := bs.Add(ctx, f.queue, "bench", jobs)
				must(b, err)
			}
		}},
		{"complete-batched", 1, func(b *testing.B, f fixture, n int) func(int) {
			bs := batch.NewService(f.rdb, prefix, f.leases)
			_, _, _, err := bs.Create(ctx, f.queue, "bench", nil, true, batch.Callback{When: batch.WhenComplete})
			must(b, err)
			for done := 0; done < n; done += 1000 {
				jobs := make([]lease.NewJob, min(1000, n-done))
				for k := range jobs {
					jobs[k] = lease.NewJob{Payload: payload100}
				}
				_, _, err := bs.Add(ctx, f.queue, "bench", jobs)
				must(b, err)
			}
			held := holdAll(b, f, n)
			return func(i int) {
				_, _, err := f.leases.Complete(ctx, f.queue, held[i].ID, held[i].Token, nil, nil)
				must(b, err)
			}
		}},
		{"complete-releasing", 1, func(b *testing.B, f fixture, n int) func(int) {
			f.fill(b, n, func(i int) string { return fmt.Sprintf("d%d", i) })
			for done := 0; done < n; done += 1000 {
				jobs := make([]lease.NewJob, min(1000, n-done))
				for k := range jobs {
					jobs[k] = lease.NewJob{ID: fmt.Sprintf("w%d", done+k), Payload: payload100,
						DependsOn: []string{fmt.Sprintf("d%d", done+k)}}
				}
				_, err := f.leases.Enqueue(ctx, f.queue, jobs)
				must(b, err)
			}
			held := holdAll(b, f, n)
			return func(i int) {
				_, _, err := f.leases.Complete(ctx, f.queue, held[i].ID, held[i].Token, nil, nil)
				must(b, err)
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
			rdb, counter := benchRedis(b)
			f := fixture{leases: lease.NewService(rdb, prefix), rdb: rdb, queue: "bench"}
			run := bc.run(b, f, b.N)
			// The first call on a server loads the library (and runs by
			// EVAL meanwhile): not what is measured.
			_, _ = f.leases.Cancellation(ctx, "warm", "up", 1)
			must(b, rdb.ConfigResetStat(ctx).Err())
			counter.zero(b)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				run(i)
			}
			b.StopTimer()
			per := func(v float64, unit string) {
				b.ReportMetric(v/float64(b.N), unit+"/op")
				if bc.jobs > 0 {
					b.ReportMetric(v/float64(b.N*bc.jobs), unit+"/job")
				}
			}
			per(redistest.ScriptMicros(b, rdb), "server-µs")
			if instr, ok := counter.read(b); ok {
				per(instr, "instr")
			}
		})
	}
}

// benchRedis is the redis-server a ServerTime benchmark runs on: one of
// its own, or the one bench/instructions runs under callgrind
// (EMQ_BENCH_REDIS, emptied first), with its instruction counter.
func benchRedis(b *testing.B) (*redis.Client, callgrind) {
	b.Helper()
	addr, cg := os.Getenv("EMQ_BENCH_REDIS"), callgrind{pid: os.Getenv("EMQ_BENCH_CALLGRIND_PID"), out: os.Getenv("EMQ_BENCH_CALLGRIND_OUT"), keep: os.Getenv("EMQ_BENCH_CALLGRIND_KEEP")}
	if addr == "" {
		addr, cg = redistest.StartServer(b, "--hash-max-listpack-value", "1024").Addr, callgrind{}
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	b.Cleanup(func() { rdb.Close() })
	if cg.pid != "" {
		must(b, rdb.FlushAll(context.Background()).Err())
	}
	return rdb, cg
}

// callgrind is valgrind's instruction counter of a redis-server (none when
// pid is ""). With keep set, each benchmark's dump is copied there as
// <benchmark>.cg, for callgrind_annotate.
type callgrind struct{ pid, out, keep string }

func (c callgrind) zero(b *testing.B) {
	if c.pid != "" {
		c.control(b, "-z")
	}
}

// read dumps the counts and answers the instructions since zero.
func (c callgrind) read(b *testing.B) (float64, bool) {
	if c.pid == "" {
		return 0, false
	}
	c.control(b, "-d")
	dumps, _ := filepath.Glob(c.out + ".*")
	newest, at := "", time.Time{}
	for _, d := range dumps {
		if st, err := os.Stat(d); err == nil && st.ModTime().After(at) {
			newest, at = d, st.ModTime()
		}
	}
	text, err := os.ReadFile(newest)
	if err != nil {
		b.Fatal(err)
	}
	if c.keep != "" {
		name := strings.TrimPrefix(b.Name(), "BenchmarkServerTime/")
		if err := os.WriteFile(filepath.Join(c.keep, name+".cg"), text, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for _, line := range strings.Split(string(text), "\n") {
		if v, ok := strings.CutPrefix(line, "summary: "); ok {
			n, err := strconv.ParseFloat(strings.Fields(v)[0], 64)
			if err != nil {
				b.Fatal(err)
			}
			return n, true
		}
	}
	b.Fatalf("no summary line in %s", newest)
	return 0, false
}

func (c callgrind) control(b *testing.B, flag string) {
	if out, err := exec.Command("callgrind_control", flag, c.pid).CombinedOutput(); err != nil {
		b.Fatalf("callgrind_control %s: %v: %s", flag, err, out)
	}
}

// hold enqueues n jobs and claims them for an hour.
func hold(b *testing.B, f fixture, n int) []job.Job {
	b.Helper()
	f.fill(b, n, nil)
	return holdAll(b, f, n)
}

// holdAll claims n jobs of f's queue, which has them pending.
func holdAll(b *testing.B, f fixture, n int) []job.Job {
	b.Helper()
	var held []job.Job
	for len(held) < n {
		c, err := f.leases.Claim(context.Background(), f.queue, lease.ClaimParams{Count: min(100, n-len(held)), Lease: time.Hour})
		must(b, err)
		held = append(held, c.Jobs...)
	}
	return held
}

// admitted is job i with every admission option: a dedupe key of its
// own (until_done), an expiry of an hour and a timeout of ten minutes.
func admitted(i int) lease.NewJob {
	return lease.NewJob{Payload: payload100, Dedupe: lease.Dedupe{Key: "key-" + strconv.Itoa(i), Mode: lease.DedupeUntilDone},
		ExpiresIn: time.Hour, Timeout: 10 * time.Minute}
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
