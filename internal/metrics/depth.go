package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// depthTimeout bounds the time one scrape spends reading queue depth.
const depthTimeout = 2 * time.Second

// states are the job states exported by emq_queue_jobs, in order.
var states = []string{"pending", "active", "delayed", "waiting", "completed", "dead", "cancelled"}

// QueueDepth is the depth of one queue.
type QueueDepth struct {
	Queue  string
	Paused bool
	// Counts are the queue's jobs keyed by state: pending, active, delayed,
	// waiting, completed, dead, cancelled. A missing state is exported as 0, an
	// unknown one is ignored.
	Counts map[string]int64
	// Latency is how long the queue's oldest claimable pending job has
	// waited, 0 when none is pending (see WithLatency).
	Latency time.Duration
	// NoLatency says the queue's latency could not be read: its gauge is
	// left out, the queue's other gauges are not.
	NoLatency bool
}

// DepthFunc reads the depth of at most limit queues (the bound of MaxQueues;
// cmd/api reads the most recently active). To tell that there are
// more, it returns more than limit entries (limit+1 is enough; only the
// presence of the extra entries counts, not their contents): the first limit
// are exported and emq_queue_depth_truncated is 1. ctx carries the scrape's
// timeout. An error makes the scrape export emq_queue_depth_up 0 and count a
// Redis error.
type DepthFunc func(ctx context.Context, limit int) ([]QueueDepth, error)

// depthCollector reads queue depth on each scrape.
type depthCollector struct {
	depth       DepthFunc
	limit       int // the queues one scrape reads; beyond it, emq_queue_depth_truncated is 1
	redisErrors prometheus.Counter
	jobs        *prometheus.Desc
	paused      *prometheus.Desc
	up          *prometheus.Desc
	truncated   *prometheus.Desc
	latency     *prometheus.Desc
}

func newDepthCollector(depth DepthFunc, limit int, redisErrors prometheus.Counter) *depthCollector {
	return &depthCollector{
		depth:       depth,
		limit:       limit,
		redisErrors: redisErrors,
		jobs: prometheus.NewDesc("emq_queue_jobs",
			"Jobs in a queue, by state, read at scrape time.", []string{"queue", "state"}, nil),
		paused: prometheus.NewDesc("emq_queue_paused",
			"Whether a queue is paused (1) or not (0), read at scrape time.", []string{"queue"}, nil),
		up: prometheus.NewDesc("emq_queue_depth_up",
			"Whether the last read of queue depth succeeded (1) or failed (0).", nil, nil),
		truncated: prometheus.NewDesc("emq_queue_depth_truncated",
			"Whether queues beyond the per-scrape limit were left out (1) or not (0).", nil, nil),
		latency: prometheus.NewDesc("emq_queue_latency_seconds",
			"How long a queue's oldest claimable pending job has waited (0 when none), read at scrape time on the Redis server's clock.",
			[]string{"queue"}, nil),
	}
}

// Describe sends the collector's descriptors.
func (c *depthCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.jobs
	ch <- c.paused
	ch <- c.up
	ch <- c.truncated
	ch <- c.latency
}

// Collect reads queue depth and sends its gauges. A failed read is reported
// by emq_queue_depth_up 0, never by failing the scrape.
func (c *depthCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), depthTimeout)
	defer cancel()
	queues, err := c.depth(ctx, c.limit)
	if err != nil {
		c.redisErrors.Inc()
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	truncated := len(queues) > c.limit
	if truncated {
		queues = queues[:c.limit]
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1)
	ch <- prometheus.MustNewConstMetric(c.truncated, prometheus.GaugeValue, boolValue(truncated))
	seen := make(map[string]bool, len(queues))
	unread := false
	for _, q := range queues {
		if seen[q.Queue] { // a duplicate would fail the whole gather
			continue
		}
		seen[q.Queue] = true
		unread = unread || q.NoLatency
		c.collectQueue(ch, q)
	}
	if unread {
		c.redisErrors.Inc()
	}
}

// collectQueue sends one queue's gauges.
func (c *depthCollector) collectQueue(ch chan<- prometheus.Metric, q QueueDepth) {
	ch <- gauge(c.paused, boolValue(q.Paused), q.Queue)
	if !q.NoLatency {
		ch <- gauge(c.latency, q.Latency.Seconds(), q.Queue)
	}
	for _, state := range states {
		ch <- gauge(c.jobs, float64(q.Counts[state]), q.Queue, state)
	}
}

// gauge is a gauge of desc, or, when a label value is not valid UTF-8, an
// invalid metric: the gather reports it and serves the rest, where
// MustNewConstMetric would panic.
func gauge(desc *prometheus.Desc, v float64, labels ...string) prometheus.Metric {
	m, err := prometheus.NewConstMetric(desc, prometheus.GaugeValue, v, labels...)
	if err != nil {
		return prometheus.NewInvalidMetric(desc, err)
	}
	return m
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
