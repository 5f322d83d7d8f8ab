package metrics_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/echo-mq/echo_mq/internal/metrics"
)

// perQueueFamilies are the families of series the service keeps per queue.
var perQueueFamilies = []string{
	"emq_job_transitions_total", "emq_stale_refusals_total", "emq_sweep_jobs_total", "emq_claims_held_total",
	"emq_schedule_ticks_total", "emq_push_deliveries_total", "emq_push_delivery_duration_seconds",
	"emq_job_wait_seconds", "emq_job_run_seconds",
}

// touchAll updates every per-queue series family for queue.
func touchAll(m *metrics.Metrics, queue string) {
	m.Transition(queue, "enqueued", 1)
	m.StaleRefusal(queue)
	m.Swept(queue, 1, 1, 0)
	m.Reaped(queue, "expired", 1)
	m.ClaimHeld(queue, "concurrency")
	m.ScheduleTicks(queue, 1, 0, 1, nil)
	m.PushDelivery(queue, "completed", time.Millisecond)
	m.JobWait(queue, time.Second)
	m.JobRun(queue, time.Second)
}

// queuesOf is the queues each per-queue family names, by family.
func queuesOf(t testing.TB, fams map[string]*dto.MetricFamily) map[string]map[string]bool {
	t.Helper()
	out := map[string]map[string]bool{}
	for _, name := range perQueueFamilies {
		out[name] = map[string]bool{}
		for _, m := range fams[name].GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "queue" {
					out[name][l.GetValue()] = true
				}
			}
		}
	}
	return out
}

// TestQueueSeriesBounded: with MaxQueues(3), each per-queue family names at
// most 3 queues, the 3 updated last; the evicted queues' series are gone,
// and a queue that comes back starts again from zero.
func TestQueueSeriesBounded(t *testing.T) {
	t.Parallel()
	m := metrics.New(nil, metrics.MaxQueues(3))
	for i := range 10 {
		touchAll(m, fmt.Sprintf("q%d", i))
	}
	touchAll(m, "q7") // q7 again: q8, q9 and q7 are the latest
	touchAll(m, "q7")
	fams := scrape(t, m)
	for name, queues := range queuesOf(t, fams) {
		if len(queues) != 3 || !queues["q7"] || !queues["q8"] || !queues["q9"] {
			t.Errorf("%s names %v, want q7, q8 and q9", name, queues)
		}
	}
	assertSeries(t, fams, "emq_stale_refusals_total", map[string]float64{"queue=q7": 3, "queue=q8": 1, "queue=q9": 1})
	touchAll(m, "q0") // back after its eviction: from zero
	fams = scrape(t, m)
	if got := series(t, fams, "emq_stale_refusals_total")["queue=q0"]; got != 1 {
		t.Errorf("q0's stale refusals after it came back = %v, want 1", got)
	}
	if got := series(t, fams, "emq_stale_refusals_total")["queue=q8"]; got != 0 {
		t.Errorf("q8 (the least recently updated) kept its series: %v", got)
	}
}

// TestForgetQueue: ForgetQueue deletes every series naming the queue and
// leaves the others.
func TestForgetQueue(t *testing.T) {
	t.Parallel()
	m := metrics.New(nil)
	touchAll(m, "gone")
	touchAll(m, "stays")
	m.Transition("gone", "claimed", 2)
	m.ForgetQueue("gone")
	m.ForgetQueue("never-seen")
	for name, queues := range queuesOf(t, scrape(t, m)) {
		if queues["gone"] || !queues["stays"] {
			t.Errorf("%s names %v after ForgetQueue(gone), want only stays", name, queues)
		}
	}
	m.Transition("gone", "enqueued", 1)
	assertSeries(t, scrape(t, m), "emq_job_transitions_total", map[string]float64{
		"kind=enqueued,queue=gone": 1, "kind=enqueued,queue=stays": 1,
	})
}

// TestQueueSeriesBoundedConcurrently: updates of many queues at once, with
// evictions and forgets among them, never leave more queues named than the
// bound (run with -race).
func TestQueueSeriesBoundedConcurrently(t *testing.T) {
	t.Parallel()
	const bound = 5
	m := metrics.New(nil, metrics.MaxQueues(bound))
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 300 {
				q := fmt.Sprintf("q%d", (i*7+w)%40)
				touchAll(m, q)
				if i%50 == 0 {
					m.ForgetQueue(q)
				}
			}
		})
	}
	wg.Wait()
	for name, queues := range queuesOf(t, scrape(t, m)) {
		if len(queues) > bound {
			t.Errorf("%s names %d queues, more than the bound %d", name, len(queues), bound)
		}
	}
}

// TestDepthLimitIsMaxQueues: a scrape reads the depth of MaxQueues queues,
// and says when there were more.
func TestDepthLimitIsMaxQueues(t *testing.T) {
	t.Parallel()
	var asked int
	m := metrics.New(func(_ context.Context, limit int) ([]metrics.QueueDepth, error) {
		asked = limit
		return []metrics.QueueDepth{{Queue: "a"}, {Queue: "b"}, {Queue: "c"}}, nil
	}, metrics.MaxQueues(2))
	fams := scrape(t, m)
	if asked != 2 {
		t.Errorf("the depth read was asked for %d queues, want 2", asked)
	}
	assertSeries(t, fams, "emq_queue_paused", map[string]float64{"queue=a": 0, "queue=b": 0})
	assertSeries(t, fams, "emq_queue_depth_truncated", map[string]float64{"": 1})
	if n := strings.Count(fmt.Sprint(series(t, fams, "emq_queue_jobs")), "queue=c"); n != 0 {
		t.Errorf("queue c beyond the bound has %d depth series", n)
	}
}

// BenchmarkTransition is the cost of counting one transition of a queue
// that has its series, from many goroutines at once: what the worker plane
// pays per call.
func BenchmarkTransition(b *testing.B) {
	m := metrics.New(nil)
	queues := make([]string, 64)
	for i := range queues {
		queues[i] = fmt.Sprintf("q%d", i)
		m.Transition(queues[i], "claimed", 1)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			m.Transition(queues[i%len(queues)], "claimed", 1)
			i++
		}
	})
}
