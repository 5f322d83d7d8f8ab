package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/admin"
	"github.com/echo-mq/echo_mq/internal/history"
	"github.com/echo-mq/echo_mq/internal/lease"
	"github.com/echo-mq/echo_mq/internal/metrics"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

func TestMain(m *testing.M) { os.Exit(redistest.Run(m)) }

// serverMillis is the Redis server's clock now, in the whole milliseconds
// the scripts time jobs by.
func serverMillis(t testing.TB, rdb redis.UniversalClient) int64 {
	t.Helper()
	now, err := rdb.Time(context.Background()).Result()
	if err != nil {
		t.Fatalf("TIME: %v", err)
	}
	return now.UnixMilli()
}

// depthOver reads depth from a real Redis under prefix, as cmd/api wires it.
func depthOver(rdb redis.UniversalClient, prefix string) metrics.DepthFunc {
	adm := admin.NewService(rdb, prefix)
	return metrics.WithLatency(func(ctx context.Context, limit int) ([]metrics.QueueDepth, error) {
		infos, err := adm.FirstQueues(ctx, limit+1)
		out := make([]metrics.QueueDepth, len(infos))
		for i, info := range infos {
			out[i] = metrics.QueueDepth{Queue: info.Name, Paused: info.Paused, Counts: info.Counts}
		}
		return out, err
	}, history.NewReader(rdb, prefix).Latency)
}

func TestQueueLatency(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	prefix := redistest.Queue(t) // the test's own queues set
	leases := lease.NewService(rdb, prefix)
	ctx := context.Background()
	enqueue := func(queue string, delay time.Duration) {
		t.Helper()
		if _, err := leases.Enqueue(ctx, queue, []lease.NewJob{{Payload: []byte(`{}`), Delay: delay}}); err != nil {
			t.Fatalf("Enqueue %s: %v", queue, err)
		}
	}
	// busy's only job is claimed, later's is delayed: neither has a
	// claimable job.
	enqueue("busy", 0)
	if c, err := leases.Claim(ctx, "busy", lease.ClaimParams{}); err != nil || len(c.Jobs) != 1 {
		t.Fatalf("Claim busy: %d jobs, %v; want 1", len(c.Jobs), err)
	}
	enqueue("later", time.Hour)
	before := serverMillis(t, rdb)
	enqueue("waiting", 0)
	enqueued := serverMillis(t, rdb)
	enqueue("waiting", 0) // a younger one does not count
	time.Sleep(300 * time.Millisecond)

	m := metrics.New(depthOver(rdb, prefix))
	scrapeFrom := serverMillis(t, rdb)
	fams := scrape(t, m)
	scrapeTo := serverMillis(t, rdb)

	assertSeries(t, fams, "emq_queue_depth_up", map[string]float64{"": 1})
	got := series(t, fams, "emq_queue_latency_seconds")
	if len(got) != 3 || got["queue=busy"] != 0 || got["queue=later"] != 0 {
		t.Errorf("emq_queue_latency_seconds = %v, want busy and later 0, and waiting", got)
	}
	// The oldest job was made between before and enqueued, and the scrape
	// read its age between scrapeFrom and scrapeTo, all on the server's clock.
	low, high := float64(scrapeFrom-enqueued)/1000, float64(scrapeTo-before)/1000
	if w := got["queue=waiting"]; w < low || w > high || w < 0.3 {
		t.Errorf("emq_queue_latency_seconds{queue=waiting} = %v, want within [%v, %v] and at least the 0.3 s slept", w, low, high)
	}
}

func TestJobWaitAndRun(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	queue := redistest.Queue(t)
	m := metrics.New(nil)
	leases := lease.NewService(rdb, "emqtest", lease.Observe(m))
	ctx := context.Background()
	mustClaim := func(n int) lease.Claimed {
		t.Helper()
		c, err := leases.Claim(ctx, queue, lease.ClaimParams{Count: n, Lease: time.Minute})
		if err != nil || len(c.Jobs) != n {
			t.Fatalf("Claim: %d jobs, %v; want %d", len(c.Jobs), err, n)
		}
		return c
	}
	jobs := make([]lease.NewJob, 3)
	for i := range jobs {
		jobs[i] = lease.NewJob{Payload: []byte(fmt.Sprintf(`{"n":%d}`, i))}
	}
	if _, err := leases.Enqueue(ctx, queue, jobs); err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	enqueued := serverMillis(t, rdb)
	time.Sleep(100 * time.Millisecond)

	// Claim a and b; complete a, claiming c next; fail b to be retried at
	// once, claim it again and fail it dead; complete c: four waits (a's
	// and b's first of at least 100 ms), four runs of at least 50 ms each.
	start := serverMillis(t, rdb)
	c := mustClaim(2)
	a, b := c.Jobs[0], c.Jobs[1]
	time.Sleep(50 * time.Millisecond)
	_, next, err := leases.Complete(ctx, queue, a.ID, a.Token, nil, &lease.ClaimParams{Lease: time.Minute})
	if err != nil || len(next) != 1 {
		t.Fatalf("Complete a: %d next, %v; want 1", len(next), err)
	}
	zero := time.Duration(0)
	if _, err := leases.Fail(ctx, queue, b.ID, lease.FailParams{Token: b.Token, RetryIn: &zero}); err != nil {
		t.Fatalf("Fail b: %v", err)
	}
	b = mustClaim(1).Jobs[0]
	time.Sleep(50 * time.Millisecond)
	if _, err := leases.Fail(ctx, queue, b.ID, lease.FailParams{Token: b.Token, Fatal: true}); err != nil {
		t.Fatalf("Fail b again: %v", err)
	}
	out, _, err := leases.CompleteBatch(ctx, queue, []lease.Completion{{ID: next[0].ID, Token: next[0].Token}}, nil)
	if err != nil || out[0].Err != nil {
		t.Fatalf("CompleteBatch c: %v, %v", err, out)
	}
	end := serverMillis(t, rdb)

	fams := scrape(t, m)
	assertSeries(t, fams, "emq_job_wait_seconds", map[string]float64{"queue=" + queue: 4})
	assertSeries(t, fams, "emq_job_run_seconds", map[string]float64{"queue=" + queue: 4})
	span := float64(end-enqueued) / 1000 // the longest any one of them can be
	assertSum(t, fams, "emq_job_wait_seconds", 2*float64(start-enqueued)/1000, 4*span)
	assertSum(t, fams, "emq_job_run_seconds", 0.2, 4*float64(end-start)/1000)
}

// assertSum fails unless the one histogram of family name sums to within
// [low, high] (ms rounding aside).
func assertSum(t testing.TB, fams map[string]*dto.MetricFamily, name string, low, high float64) {
	t.Helper()
	ms := fams[name].GetMetric()
	if len(ms) != 1 {
		t.Fatalf("%s has %d series, want 1", name, len(ms))
	}
	if sum := ms[0].GetHistogram().GetSampleSum(); sum < low-0.001 || sum > high+0.001 {
		t.Errorf("%s sum = %v, want within [%v, %v]", name, sum, low, high)
	}
}

func TestWithLatencyReadsTheFirstLimit(t *testing.T) {
	t.Parallel()
	queues := make([]metrics.QueueDepth, metrics.DefaultMaxQueues+1)
	for i := range queues {
		queues[i] = metrics.QueueDepth{Queue: fmt.Sprintf("q%04d", i)}
	}
	var (
		mu             sync.Mutex
		read           = map[string]int{}
		inFlight, most int
	)
	m := metrics.New(metrics.WithLatency(depthOf(queues...), func(ctx context.Context, queue string) (time.Duration, error) {
		mu.Lock()
		read[queue]++
		inFlight++
		most = max(most, inFlight)
		mu.Unlock()
		time.Sleep(100 * time.Microsecond)
		mu.Lock()
		inFlight--
		mu.Unlock()
		return 2 * time.Second, nil
	}))

	fams := scrape(t, m)
	mu.Lock()
	defer mu.Unlock()
	if len(read) != metrics.DefaultMaxQueues || read[queues[metrics.DefaultMaxQueues].Queue] != 0 {
		t.Errorf("latency read for %d queues (the one beyond the limit %d times), want the first %d once each",
			len(read), read[queues[metrics.DefaultMaxQueues].Queue], metrics.DefaultMaxQueues)
	}
	for q, n := range read {
		if n != 1 {
			t.Errorf("latency of %s read %d times, want once", q, n)
		}
	}
	if most < 1 || most > 8 {
		t.Errorf("at most %d latency reads in flight, want 1 to 8", most)
	}
	got := series(t, fams, "emq_queue_latency_seconds")
	if len(got) != metrics.DefaultMaxQueues || got["queue=q0000"] != 2 || got[fmt.Sprintf("queue=q%04d", metrics.DefaultMaxQueues-1)] != 2 {
		t.Errorf("emq_queue_latency_seconds has %d series (first %v, last %v), want %d of 2",
			len(got), got["queue=q0000"], got[fmt.Sprintf("queue=q%04d", metrics.DefaultMaxQueues-1)], metrics.DefaultMaxQueues)
	}
}

func TestWithLatencyError(t *testing.T) {
	t.Parallel()
	queues := make([]metrics.QueueDepth, 50)
	for i := range queues {
		queues[i] = metrics.QueueDepth{Queue: fmt.Sprintf("q%02d", i)}
	}
	m := metrics.New(metrics.WithLatency(depthOf(queues...), func(ctx context.Context, queue string) (time.Duration, error) {
		if queue == "q10" {
			return 0, errors.New("i/o timeout")
		}
		return time.Second, ctx.Err()
	}))

	fams := scrape(t, m)
	assertSeries(t, fams, "emq_queue_depth_up", map[string]float64{"": 1})
	latencies := series(t, fams, "emq_queue_latency_seconds")
	if _, ok := latencies["queue=q10"]; ok || len(latencies) != len(queues)-1 || latencies["queue=q11"] != 1 {
		t.Errorf("emq_queue_latency_seconds after q10's read failed: %d series (q10 %v, q11 %v), want every other queue's",
			len(latencies), latencies["queue=q10"], latencies["queue=q11"])
	}
	if got := len(series(t, fams, "emq_queue_jobs")); got != len(queues)*7 {
		t.Errorf("emq_queue_jobs has %d series after one latency read failed, want every queue's %d", got, len(queues)*7)
	}
	// The gather reads the counter beside the depth collector, which adds
	// to it: the next scrape shows the first one's error.
	if got := series(t, scrape(t, m), "emq_redis_errors_total")[""]; got < 1 {
		t.Errorf("emq_redis_errors_total = %v after a latency read failed, want at least 1", got)
	}
	// The depth read failing first is not read further.
	calls := 0
	m = metrics.New(metrics.WithLatency(func(context.Context, int) ([]metrics.QueueDepth, error) {
		return queues, errors.New("connection refused")
	}, func(context.Context, string) (time.Duration, error) { calls++; return 0, nil }))
	assertSeries(t, scrape(t, m), "emq_queue_depth_up", map[string]float64{"": 0})
	if calls != 0 {
		t.Errorf("latency read %d times after a failed depth read, want 0", calls)
	}
}
