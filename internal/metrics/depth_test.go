package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/metrics"
)

// depthOf is a DepthFunc that answers queues.
func depthOf(queues ...metrics.QueueDepth) metrics.DepthFunc {
	return func(context.Context, int) ([]metrics.QueueDepth, error) { return queues, nil }
}

func TestDepthGauges(t *testing.T) {
	t.Parallel()
	var (
		mu          sync.Mutex
		gotLimit    int
		gotDeadline time.Duration
	)
	depth := func(ctx context.Context, limit int) ([]metrics.QueueDepth, error) {
		mu.Lock()
		defer mu.Unlock()
		gotLimit = limit
		if d, ok := ctx.Deadline(); ok {
			gotDeadline = time.Until(d)
		}
		return []metrics.QueueDepth{
			{Queue: "emails", Counts: map[string]int64{
				"pending": 4, "active": 2, "delayed": 1, "waiting": 6, "completed": 90, "dead": 3, "cancelled": 5,
				"bogus": 7, // not a state: left out
			}, Latency: 1500 * time.Millisecond},
			{Queue: "thumbs", Paused: true, Counts: map[string]int64{"pending": 12}},
			{Queue: "emails", Counts: map[string]int64{"pending": 99}}, // a duplicate: left out
		}, nil
	}
	m := metrics.New(depth)

	fams := scrape(t, m)
	assertSeries(t, fams, "emq_queue_jobs", map[string]float64{
		"queue=emails,state=pending":   4,
		"queue=emails,state=active":    2,
		"queue=emails,state=delayed":   1,
		"queue=emails,state=waiting":   6,
		"queue=emails,state=completed": 90,
		"queue=emails,state=dead":      3,
		"queue=emails,state=cancelled": 5,
		"queue=thumbs,state=pending":   12,
		"queue=thumbs,state=active":    0,
		"queue=thumbs,state=delayed":   0,
		"queue=thumbs,state=waiting":   0,
		"queue=thumbs,state=completed": 0,
		"queue=thumbs,state=dead":      0,
		"queue=thumbs,state=cancelled": 0,
	})
	assertSeries(t, fams, "emq_queue_paused", map[string]float64{"queue=emails": 0, "queue=thumbs": 1})
	assertSeries(t, fams, "emq_queue_latency_seconds", map[string]float64{"queue=emails": 1.5, "queue=thumbs": 0})
	assertSeries(t, fams, "emq_queue_depth_up", map[string]float64{"": 1})
	assertSeries(t, fams, "emq_queue_depth_truncated", map[string]float64{"": 0})
	assertSeries(t, fams, "emq_redis_errors_total", map[string]float64{"": 0})
	// A gather error (as a duplicate queue would cause) shows in the next scrape.
	assertSeries(t, scrape(t, m), "promhttp_metric_handler_errors_total", map[string]float64{
		"cause=encoding": 0, "cause=gathering": 0,
	})

	mu.Lock()
	defer mu.Unlock()
	if gotLimit != metrics.DefaultMaxQueues {
		t.Errorf("depth limit = %d, want %d", gotLimit, metrics.DefaultMaxQueues)
	}
	if gotDeadline <= 0 || gotDeadline > 2*time.Second {
		t.Errorf("depth ctx deadline in %v, want within (0, 2s]", gotDeadline)
	}
}

func TestDepthTruncated(t *testing.T) {
	t.Parallel()
	queues := make([]metrics.QueueDepth, metrics.DefaultMaxQueues+1)
	for i := range queues {
		queues[i] = metrics.QueueDepth{Queue: fmt.Sprintf("q%04d", i), Counts: map[string]int64{"pending": 1}}
	}
	m := metrics.New(depthOf(queues...))

	fams := scrape(t, m)
	assertSeries(t, fams, "emq_queue_depth_truncated", map[string]float64{"": 1})
	assertSeries(t, fams, "emq_queue_depth_up", map[string]float64{"": 1})
	paused := series(t, fams, "emq_queue_paused")
	if got, want := len(paused), metrics.DefaultMaxQueues; got != want {
		t.Errorf("emq_queue_paused has %d series, want %d", got, want)
	}
	last := fmt.Sprintf("queue=q%04d", metrics.DefaultMaxQueues)
	if _, ok := paused[last]; ok {
		t.Errorf("emq_queue_paused has %s, the queue beyond the limit", last)
	}
	if got, want := len(series(t, fams, "emq_queue_latency_seconds")), metrics.DefaultMaxQueues; got != want {
		t.Errorf("emq_queue_latency_seconds has %d series, want %d", got, want)
	}
	if got, want := len(series(t, fams, "emq_queue_jobs")), 7*metrics.DefaultMaxQueues; got != want {
		t.Errorf("emq_queue_jobs has %d series, want %d", got, want)
	}
}

func TestDepthError(t *testing.T) {
	t.Parallel()
	m := metrics.New(func(context.Context, int) ([]metrics.QueueDepth, error) {
		return nil, errors.New("dial tcp: connection refused")
	})
	m.RedisError() // one from elsewhere

	fams := scrape(t, m)
	assertSeries(t, fams, "emq_queue_depth_up", map[string]float64{"": 0})
	// A scrape gathers collectors concurrently: the counter may be read
	// before or after this scrape's failure adds to it.
	if got := series(t, fams, "emq_redis_errors_total")[""]; got != 1 && got != 2 {
		t.Errorf("emq_redis_errors_total = %v after one failed scrape, want 1 or 2", got)
	}
	for _, name := range []string{"emq_queue_jobs", "emq_queue_paused", "emq_queue_latency_seconds", "emq_queue_depth_truncated"} {
		if _, ok := fams[name]; ok {
			t.Errorf("scrape has %s after a failed depth read", name)
		}
	}
	if _, ok := fams["go_goroutines"]; !ok {
		t.Error("scrape lacks go_goroutines: a failed depth read must not fail the scrape")
	}

	// Each scrape reads depth again and counts its own failure: after a
	// third, the first two have certainly been counted.
	scrape(t, m)
	if got := series(t, scrape(t, m), "emq_redis_errors_total")[""]; got < 3 {
		t.Errorf("emq_redis_errors_total = %v after three failed scrapes, want at least 3", got)
	}
}
