package lease_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/admin"
	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/internal/lease"
	"github.com/echo-mq/echo_mq/internal/redistest"
	"github.com/echo-mq/echo_mq/internal/stall"
	"github.com/echo-mq/echo_mq/lua"
)

// The cost of each worker-plane script, one Service call per iteration. Each
// benchmark also reports x-ping: its ns/op over a PING round trip timed on
// the same client right after its loop, so that the figures of different
// machines compare. Setup (the jobs to claim, complete or cancel) is made a
// hundred at a time with the timer stopped. Run them with
//
//	go test -run '^$' -bench 'Script|Backlog' -benchtime 2000x ./internal/lease
//	go test -run '^$' -bench MemoryPerJob -benchtime 1x ./internal/lease

// payload100 is a 100-byte JSON payload.
var payload100 = json.RawMessage(`{"body":"` + strings.Repeat("x", 89) + `"}`)

// BenchmarkScriptEnqueue enqueues one job per call.
func BenchmarkScriptEnqueue(b *testing.B) {
	f := newFixture(b)
	ctx := context.Background()
	for b.Loop() {
		if _, err := f.leases.Enqueue(ctx, f.queue, []lease.NewJob{{Payload: payload100}}); err != nil {
			b.Fatal(err)
		}
	}
	reportVsPing(b, f.rdb)
}

// BenchmarkScriptEnqueueBatch enqueues 100 jobs per call and reports ns/job
// too. The queue is drained every 10,000 jobs, timer stopped.
func BenchmarkScriptEnqueueBatch(b *testing.B) {
	f := newFixture(b)
	ctx := context.Background()
	batch := make([]lease.NewJob, 100)
	for i := range batch {
		batch[i] = lease.NewJob{Payload: payload100}
	}
	for i := 1; b.Loop(); i++ {
		if _, err := f.leases.Enqueue(ctx, f.queue, batch); err != nil {
			b.Fatal(err)
		}
		if i%100 == 0 {
			b.StopTimer()
			if _, err := f.admin.Drain(ctx, f.queue, admin.Actor{}); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	}
	reportVsPing(b, f.rdb)
	b.ReportMetric(nsPerOp(b)/100, "ns/job")
}

// BenchmarkScriptClaim claims 1 and 16 jobs per call from about 1,000
// pending.
func BenchmarkScriptClaim(b *testing.B) {
	for _, count := range []int{1, 16} {
		b.Run(fmt.Sprintf("count=%d", count), func(b *testing.B) {
			f := newFixture(b)
			f.fill(b, 1000, nil)
			benchClaim(b, f, count)
		})
	}
}

// BenchmarkScriptExtend extends one held job's lease per call.
func BenchmarkScriptExtend(b *testing.B) { benchExtend(b, newFixture(b)) }

// BenchmarkScriptCancellation checks one held job for a cancel request.
func BenchmarkScriptCancellation(b *testing.B) {
	f := newFixture(b)
	j := f.supply(b, true)()
	ctx := context.Background()
	for b.Loop() {
		if _, err := f.leases.Cancellation(ctx, f.queue, j.ID, j.Token); err != nil {
			b.Fatal(err)
		}
	}
	reportVsPing(b, f.rdb)
}

// BenchmarkScriptComplete completes one held job per call.
func BenchmarkScriptComplete(b *testing.B) { benchComplete(b, newFixture(b)) }

// BenchmarkScriptCompleteNext completes one job and claims the next in the
// same call, the one-request worker loop; each call's claimed job is the
// next call's to complete.
func BenchmarkScriptCompleteNext(b *testing.B) {
	f := newFixture(b)
	f.fill(b, 1000, nil)
	j, refill := f.claimOne(b, time.Hour), f.refill(b, 100)
	next := &lease.ClaimParams{Count: 1, Lease: time.Hour}
	ctx := context.Background()
	for b.Loop() {
		_, claimed, err := f.leases.Complete(ctx, f.queue, j.ID, j.Token, nil, next)
		if err != nil || len(claimed) != 1 {
			b.Fatalf("complete: %v, %d claimed", err, len(claimed))
		}
		j = claimed[0]
		refill(1)
	}
	reportVsPing(b, f.rdb)
}

// BenchmarkScriptCompleteBatch completes 16 jobs and claims the next 16 in
// one call, and reports ns/job too.
func BenchmarkScriptCompleteBatch(b *testing.B) {
	const n = 16
	f := newFixture(b)
	f.fill(b, 1000, nil)
	ctx := context.Background()
	next := &lease.ClaimParams{Count: n, Lease: time.Hour}
	c, err := f.leases.Claim(ctx, f.queue, *next)
	if err != nil {
		b.Fatal(err)
	}
	held, batch, refill := c.Jobs, make([]lease.Completion, n), f.refill(b, 100)
	for b.Loop() {
		for i, j := range held {
			batch[i] = lease.Completion{ID: j.ID, Token: j.Token}
		}
		results, claimed, err := f.leases.CompleteBatch(ctx, f.queue, batch, next)
		if err != nil || len(claimed) != n || results[0].Err != nil || results[n-1].Err != nil {
			b.Fatalf("complete batch: %v, %d claimed, %+v", err, len(claimed), results)
		}
		held = claimed
		refill(n)
	}
	reportVsPing(b, f.rdb)
	b.ReportMetric(nsPerOp(b)/n, "ns/job")
}

// BenchmarkScriptFail fails one held job per call on the retry path: it
// goes to delayed for an hour.
func BenchmarkScriptFail(b *testing.B) {
	f := newFixture(b)
	next, retryIn := f.supply(b, true), time.Hour
	ctx := context.Background()
	for b.Loop() {
		j := next()
		got, err := f.leases.Fail(ctx, f.queue, j.ID, lease.FailParams{Token: j.Token, Error: "boom", RetryIn: &retryIn})
		if err != nil || got.State != job.StateDelayed {
			b.Fatalf("fail: %v, state %s", err, got.State)
		}
	}
	reportVsPing(b, f.rdb)
}

// BenchmarkScriptCancel cancels a pending job (cancelled at once) and an
// active one (the holder is asked to stop).
func BenchmarkScriptCancel(b *testing.B) {
	for _, state := range []string{job.StatePending, job.StateActive} {
		b.Run("state="+state, func(b *testing.B) {
			f, active := newFixture(b), state == job.StateActive
			next := f.supply(b, active)
			ctx := context.Background()
			for b.Loop() {
				_, requested, err := f.leases.Cancel(ctx, f.queue, next().ID, lease.CancelParams{Reason: "bench"})
				if err != nil || requested != active {
					b.Fatalf("cancel: %v, requested %t", err, requested)
				}
			}
			reportVsPing(b, f.rdb)
		})
	}
}

// BenchmarkBacklog claims, extends and completes with 1,000 and with
// 1,000,000 jobs pending: the costs should not depend on the backlog. Each
// backlog is filled once, on a redis-server of its own, and kept within
// about a hundred jobs of its size. The big backlog's figures also report
// x-backlog1000, their ns/op over the small one's in the same run.
func BenchmarkBacklog(b *testing.B) {
	verbs := []struct {
		name string
		run  func(*testing.B, fixture)
	}{
		{"claim", func(b *testing.B, f fixture) { benchClaim(b, f, 1) }},
		{"extend", benchExtend},
		{"complete", benchComplete},
	}
	small := map[string]float64{}
	for _, backlog := range []int{1000, 1_000_000} {
		b.Run(fmt.Sprintf("backlog=%d", backlog), func(b *testing.B) {
			f := privateFixture(b)
			f.fill(b, backlog, nil)
			for _, v := range verbs {
				b.Run(v.name, func(b *testing.B) {
					v.run(b, f)
					if backlog == 1000 {
						small[v.name] = nsPerOp(b)
					} else if small[v.name] > 0 {
						b.ReportMetric(nsPerOp(b)/small[v.name], "x-backlog1000")
					}
				})
			}
		})
	}
}

// BenchmarkMemoryPerJob enqueues 100,000 jobs with a 100-byte JSON payload
// on a fresh redis-server and reports used_memory's growth per job,
// bytes/job: under the default hash-max-listpack-value (64, so a row that
// holds the payload is a hashtable) and under 1024 (rows stay listpacks),
// each with server-made UUIDv7 ids and with 12-character client ids
// ("order-000001"). The event stream, capped near 10,000 entries, is
// counted in. Its ns/op is one more enqueue into the full queue.
func BenchmarkMemoryPerJob(b *testing.B) {
	const n = 100_000
	ids := []struct {
		name string
		id   func(int) string
	}{
		{"uuid7", nil},
		{"client12", func(i int) string { return fmt.Sprintf("order-%06d", i) }},
	}
	for _, config := range []struct{ name, listpackValue string }{{"default", ""}, {"listpack1024", "1024"}} {
		for _, ids := range ids {
			b.Run(config.name+"/ids="+ids.name, func(b *testing.B) {
				f := privateFixture(b)
				// The keys a user would have: the default prefix and a
				// short queue name (a key's length is part of its cost).
				f.leases, f.queue = lease.NewService(f.rdb, "emq"), "emails"
				if config.listpackValue != "" {
					setConfig(b, f.rdb, "hash-max-listpack-value", config.listpackValue)
				}
				ctx := context.Background()
				if err := f.rdb.ScriptLoad(ctx, lua.Enqueue.Source()).Err(); err != nil {
					b.Fatal(err) // the script cache is not the jobs' memory
				}
				before := usedMemory(b, f.rdb)
				f.fill(b, n, ids.id)
				perJob := float64(usedMemory(b, f.rdb)-before) / n
				for i := n; b.Loop(); i++ {
					one := []lease.NewJob{{ID: idOf(ids.id, i), Payload: payload100}}
					if _, err := f.leases.Enqueue(ctx, f.queue, one); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(perJob, "bytes/job")
			})
		}
	}
}

// benchClaim claims count jobs per call with an hour's lease, enqueueing as
// many as it took every hundred, timer stopped.
func benchClaim(b *testing.B, f fixture, count int) {
	ctx := context.Background()
	refill := f.refill(b, 100)
	for b.Loop() {
		c, err := f.leases.Claim(ctx, f.queue, lease.ClaimParams{Count: count, Lease: time.Hour})
		if err != nil || len(c.Jobs) != count {
			b.Fatalf("claim: %v, %d jobs", err, len(c.Jobs))
		}
		refill(count)
	}
	reportVsPing(b, f.rdb)
}

// benchExtend extends one held job's lease by an hour per call.
func benchExtend(b *testing.B, f fixture) {
	j := f.supply(b, true)()
	ctx := context.Background()
	for b.Loop() {
		if _, err := f.leases.Extend(ctx, f.queue, j.ID, lease.ExtendParams{Token: j.Token, Lease: time.Hour}); err != nil {
			b.Fatal(err)
		}
	}
	reportVsPing(b, f.rdb)
}

// benchComplete completes one held job per call.
func benchComplete(b *testing.B, f fixture) {
	next := f.supply(b, true)
	ctx := context.Background()
	for b.Loop() {
		j := next()
		if _, _, err := f.leases.Complete(ctx, f.queue, j.ID, j.Token, nil, nil); err != nil {
			b.Fatal(err)
		}
	}
	reportVsPing(b, f.rdb)
}

// privateFixture is a fixture on a redis-server of the benchmark's own, for
// keyspaces too big to leave on the shared one or that must start empty.
func privateFixture(b *testing.B) fixture {
	b.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: redistest.StartServer(b).Addr})
	b.Cleanup(func() { rdb.Close() })
	return fixture{leases: lease.NewService(rdb, prefix), stall: stall.NewService(rdb, prefix),
		admin: admin.NewService(rdb, prefix), rdb: rdb, queue: redistest.Queue(b)}
}

// fill enqueues n jobs with payload100 in batches of 1000. Job i's id is
// id(i), or made by the server (a UUIDv7) when id is nil.
func (f fixture) fill(tb testing.TB, n int, id func(int) string) {
	tb.Helper()
	for done := 0; done < n; {
		batch := make([]lease.NewJob, min(n-done, 1000))
		for i := range batch {
			batch[i] = lease.NewJob{ID: idOf(id, done+i), Payload: payload100}
		}
		if _, err := f.leases.Enqueue(context.Background(), f.queue, batch); err != nil {
			tb.Fatal(err)
		}
		done += len(batch)
	}
}

// idOf is id(i), or "" (made by the server) when id is nil.
func idOf(id func(int) string, i int) string {
	if id == nil {
		return ""
	}
	return id(i)
}

// refill returns a func that a loop calls with how many pending jobs each
// iteration took; once batch were taken it enqueues as many, timer
// stopped, so the pending count stays within batch of where it began.
func (f fixture) refill(b *testing.B, batch int) func(taken int) {
	taken := 0
	return func(n int) {
		if taken += n; taken >= batch {
			b.StopTimer()
			f.fill(b, taken, nil)
			taken = 0
			b.StartTimer()
		}
	}
}

// supply returns a func that hands out jobs, held (claimed for an hour) or
// pending. It makes them a hundred at a time, timer stopped, enqueueing a
// hundred before it claims as many, so that a backlog keeps its size.
func (f fixture) supply(b *testing.B, held bool) func() job.Job {
	var stock []job.Job
	return func() job.Job {
		if len(stock) == 0 {
			b.StopTimer()
			stock = f.make100(b, held)
			b.StartTimer()
		}
		j := stock[0]
		stock = stock[1:]
		return j
	}
}

// make100 enqueues a hundred jobs and returns them, or claims as many
// (the oldest pending) for an hour and returns those.
func (f fixture) make100(tb testing.TB, held bool) []job.Job {
	tb.Helper()
	ctx := context.Background()
	batch := make([]lease.NewJob, 100)
	for i := range batch {
		batch[i] = lease.NewJob{Payload: payload100}
	}
	enqueued, err := f.leases.Enqueue(ctx, f.queue, batch)
	if err != nil {
		tb.Fatal(err)
	}
	if !held {
		jobs := make([]job.Job, len(enqueued))
		for i, e := range enqueued {
			jobs[i] = e.Job
		}
		return jobs
	}
	c, err := f.leases.Claim(ctx, f.queue, lease.ClaimParams{Count: 100, Lease: time.Hour})
	if err != nil || len(c.Jobs) != 100 {
		tb.Fatalf("claim: %v, %d jobs", err, len(c.Jobs))
	}
	return c.Jobs
}

// reportVsPing reports x-ping: the benchmark's ns/op over a PING round trip
// timed on the same client now, the baseline of the same run.
func reportVsPing(b *testing.B, rdb redis.UniversalClient) {
	b.Helper()
	const pings = 1000
	start := time.Now()
	for range pings {
		if err := rdb.Ping(context.Background()).Err(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(nsPerOp(b)/(float64(time.Since(start))/pings), "x-ping")
}

func nsPerOp(b *testing.B) float64 { return float64(b.Elapsed()) / float64(b.N) }

// setConfig sets a redis-server parameter until the test or benchmark ends.
func setConfig(tb testing.TB, rdb redis.UniversalClient, name, value string) {
	tb.Helper()
	ctx := context.Background()
	old, err := rdb.ConfigGet(ctx, name).Result()
	if err != nil {
		tb.Fatal(err)
	}
	if err := rdb.ConfigSet(ctx, name, value).Err(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { rdb.ConfigSet(ctx, name, old[name]) })
}

// usedMemory is INFO memory's used_memory, in bytes.
func usedMemory(tb testing.TB, rdb redis.UniversalClient) int64 {
	tb.Helper()
	var used int64
	info := rdb.InfoMap(context.Background(), "memory").Val()
	if _, err := fmt.Sscan(info["Memory"]["used_memory"], &used); err != nil {
		tb.Fatal(err)
	}
	return used
}
