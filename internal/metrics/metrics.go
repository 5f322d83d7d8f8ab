package metrics

import (
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// UnmatchedRoute is the route label of a request that matched no route.
const UnmatchedRoute = "unmatched"

// durationBuckets cover quick calls up to the longest long poll (wait_ms is
// at most 30 s), so that waiting claims do not all fall into +Inf.
var durationBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

// jobBuckets cover a job's wait and run, from a few milliseconds (a claim
// that was already waiting; the times are whole milliseconds of the
// server's clock) to four hours (a backlog, a long batch job), 2 to 5
// times apart: 16 buckets per queue and histogram, a bound on their series.
var jobBuckets = []float64{.005, .01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 14400}

// Metrics holds the service's collectors on their own registry. Its methods
// are safe for concurrent use.
type Metrics struct {
	registry    *prometheus.Registry
	log         *slog.Logger
	requests    *prometheus.CounterVec
	durations   *prometheus.HistogramVec
	transitions *prometheus.CounterVec
	stale       *prometheus.CounterVec
	swept       *prometheus.CounterVec
	held        *prometheus.CounterVec
	ticks       *prometheus.CounterVec
	lateness    prometheus.Histogram
	redisErrors prometheus.Counter
	deliveries  *prometheus.CounterVec
	delivering  *prometheus.HistogramVec
	waits       *prometheus.HistogramVec
	runs        *prometheus.HistogramVec
	// maxQueues bounds the queues the per-queue series name (MaxQueues);
	// queues holds them, and seen each per-queue vector's other label
	// values.
	maxQueues int
	queues    *queueSet
	seen      struct {
		transitions, stale, swept, held, ticks, deliveries, delivering, waits, runs *family
	}
}

// New returns Metrics on a fresh registry that also holds the Go and process
// collectors. When depth is non-nil, each scrape reads queue depth through
// it (see DepthFunc); when nil, no depth series are exported.
func New(depth DepthFunc, opts ...Option) *Metrics {
	m := &Metrics{
		registry:  prometheus.NewRegistry(),
		log:       slog.New(slog.DiscardHandler),
		maxQueues: DefaultMaxQueues,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "emq_http_requests_total",
			Help: "HTTP requests answered, by method, route pattern and status.",
		}, []string{"method", "route", "status"}),
		durations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "emq_http_request_duration_seconds",
			Help:    "Time to answer HTTP requests, by method and route pattern.",
			Buckets: durationBuckets,
		}, []string{"method", "route"}),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "emq_job_transitions_total",
			Help: "Job state transitions, by queue and kind.",
		}, []string{"queue", "kind"}),
		stale: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "emq_stale_refusals_total",
			Help: "Calls refused because their token was stale (EMQSTALE), by queue.",
		}, []string{"queue"}),
		swept: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "emq_sweep_jobs_total",
			Help: "Lapsed jobs taken by the stalled sweep, by queue and outcome (recovered, dead, cancelled).",
		}, []string{"queue", "outcome"}),
		held: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "emq_claims_held_total",
			Help: "Claims that a flow control limit cut short, by queue and the limit (concurrency, rate_limit, group_concurrency, group_rate_limit, group_order, group_paused).",
		}, []string{"queue", "reason"}),
		ticks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "emq_schedule_ticks_total",
			Help: "Schedule ticks, by queue and outcome: fired (a job enqueued), skipped (overlap skip: the previous job had not finished), missed (no replica ran at the tick; misfire decided).",
		}, []string{"queue", "outcome"}),
		lateness: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "emq_schedule_tick_lateness_seconds",
			Help:    "How long after its tick a fired tick's job was enqueued, on the Redis server's clock.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}),
		redisErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "emq_redis_errors_total",
			Help: "Redis calls that failed.",
		}),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "emq_push_deliveries_total",
			Help: "Push deliveries, by queue and outcome: completed (a 2xx), accepted (202: the receiver reports), failed (another status), timeout, unreachable, late (answered after the attempt lost its lease).",
		}, []string{"queue", "outcome"}),
		delivering: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "emq_push_delivery_duration_seconds",
			Help:    "How long push deliveries took, from the POST to its answer reported, by queue.",
			Buckets: durationBuckets,
		}, []string{"queue"}),
		waits: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "emq_job_wait_seconds",
			Help:    "How long claimed jobs had been claimable before they started, by queue, on the Redis server's clock.",
			Buckets: jobBuckets,
		}, []string{"queue"}),
		runs: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "emq_job_run_seconds",
			Help:    "How long attempts ran, from their start to their holder's complete or fail, by queue, on the Redis server's clock.",
			Buckets: jobBuckets,
		}, []string{"queue"}),
	}
	for _, o := range opts {
		o(m)
	}
	m.queues = m.perQueue()
	m.registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.requests, m.durations, m.transitions, m.stale, m.swept, m.held, m.ticks, m.lateness, m.redisErrors,
		m.deliveries, m.delivering, m.waits, m.runs,
	)
	if depth != nil {
		m.registry.MustRegister(newDepthCollector(depth, m.maxQueues, m.redisErrors))
	}
	return m
}

// SetLogger sets the logger of the errors met while gathering a scrape. By
// default they are discarded (and counted in
// promhttp_metric_handler_errors_total). Call it before Handler.
func (m *Metrics) SetLogger(log *slog.Logger) {
	if log != nil {
		m.log = log
	}
}

// Handler serves the registry in the Prometheus exposition formats. An error
// met while gathering is logged and counted, and the metrics that could be
// gathered are served; it never panics.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{
		ErrorLog:      errorLog{m.log},
		ErrorHandling: promhttp.ContinueOnError,
		Registry:      m.registry,
	})
}

// ObserveRequest records one answered request. route is the chi route
// pattern, such as "/queues/{queue}/jobs/{id}", never the request path; an
// empty route is recorded as UnmatchedRoute. A status of 0 (the handler
// wrote nothing, which net/http answers 200) is recorded as 200.
func (m *Metrics) ObserveRequest(method, route string, status int, took time.Duration) {
	method = methodLabel(method)
	if route == "" {
		route = UnmatchedRoute
	}
	if status == 0 {
		status = http.StatusOK
	}
	m.requests.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
	m.durations.WithLabelValues(method, route).Observe(took.Seconds())
}

// Transition counts n jobs of queue that made a transition of kind (such as
// "enqueued", "claimed", "completed"). kind must come from a fixed set of
// words. n <= 0 records nothing.
func (m *Metrics) Transition(queue, kind string, n int) {
	if n <= 0 {
		return
	}
	defer m.queues.leave(m.queues.enter(queue))
	m.seen.transitions.note(kind)
	m.transitions.WithLabelValues(queue, kind).Add(float64(n))
}

// StaleRefusal counts one call on queue refused with EMQSTALE.
func (m *Metrics) StaleRefusal(queue string) {
	defer m.queues.leave(m.queues.enter(queue))
	m.stale.WithLabelValues(queue).Inc()
}

// Swept counts the jobs one sweep of queue recovered to pending,
// dead-lettered and cancelled. Counts <= 0 record nothing.
func (m *Metrics) Swept(queue string, recovered, dead, cancelled int) {
	m.Reaped(queue, "recovered", recovered)
	m.Reaped(queue, "dead", dead)
	m.Reaped(queue, "cancelled", cancelled)
}

// Reaped counts n jobs of queue the reaper (or a sweep) moved with outcome:
// also "timed_out" (an attempt failed at its timeout and retried) and
// "expired" (cancelled before it started). n <= 0 records nothing.
func (m *Metrics) Reaped(queue, outcome string, n int) {
	if n <= 0 {
		return
	}
	defer m.queues.leave(m.queues.enter(queue))
	m.seen.swept.note(outcome)
	m.swept.WithLabelValues(queue, outcome).Add(float64(n))
}

// PushDelivery counts one push delivery of queue with outcome (a push
// outcome word), which took took.
func (m *Metrics) PushDelivery(queue, outcome string, took time.Duration) {
	defer m.queues.leave(m.queues.enter(queue))
	m.seen.deliveries.note(outcome)
	m.deliveries.WithLabelValues(queue, outcome).Inc()
	m.delivering.WithLabelValues(queue).Observe(took.Seconds())
}

// JobWait observes that a job of queue started after being claimable for
// wait.
func (m *Metrics) JobWait(queue string, wait time.Duration) {
	defer m.queues.leave(m.queues.enter(queue))
	m.waits.WithLabelValues(queue).Observe(wait.Seconds())
}

// JobRun observes that an attempt of a job of queue ran for run, from its
// start to its holder's report.
func (m *Metrics) JobRun(queue string, run time.Duration) {
	defer m.queues.leave(m.queues.enter(queue))
	m.runs.WithLabelValues(queue).Observe(run.Seconds())
}

// ClaimHeld counts one claim of queue that the flow control limit reason
// (a flow.Held* word) cut short.
func (m *Metrics) ClaimHeld(queue, reason string) {
	defer m.queues.leave(m.queues.enter(queue))
	m.seen.held.note(reason)
	m.held.WithLabelValues(queue, reason).Inc()
}

// ScheduleTicks counts what one fire of queue's due ticks did, and how
// late each fired tick was.
func (m *Metrics) ScheduleTicks(queue string, fired, skipped, missed int, lateness []time.Duration) {
	if fired+skipped+missed > 0 {
		m.countTicks(queue, fired, skipped, missed)
	}
	for _, late := range lateness {
		m.lateness.Observe(late.Seconds())
	}
}

// countTicks counts one fire's ticks of queue by outcome.
func (m *Metrics) countTicks(queue string, fired, skipped, missed int) {
	defer m.queues.leave(m.queues.enter(queue))
	for _, o := range []struct {
		outcome string
		n       int
	}{{"fired", fired}, {"skipped", skipped}, {"missed", missed}} {
		if o.n > 0 {
			m.seen.ticks.note(o.outcome)
			m.ticks.WithLabelValues(queue, o.outcome).Add(float64(o.n))
		}
	}
}

// ForgetQueue deletes every series of queue the service keeps (its queue
// was obliterated or forgotten); the next update of queue starts them
// again from zero.
func (m *Metrics) ForgetQueue(queue string) {
	m.queues.drop(queue)
}

// perQueue is the set of queues with series over the per-queue vectors.
func (m *Metrics) perQueue() *queueSet {
	f := func(v *prometheus.MetricVec) *family { return &family{vec: v} }
	seen := &m.seen
	seen.transitions, seen.stale, seen.swept = f(m.transitions.MetricVec), f(m.stale.MetricVec), f(m.swept.MetricVec)
	seen.held, seen.ticks, seen.deliveries = f(m.held.MetricVec), f(m.ticks.MetricVec), f(m.deliveries.MetricVec)
	seen.delivering, seen.waits, seen.runs = f(m.delivering.MetricVec), f(m.waits.MetricVec), f(m.runs.MetricVec)
	for _, one := range []*family{seen.stale, seen.delivering, seen.waits, seen.runs} {
		one.note("") // the vectors with no label but queue
	}
	return newQueueSet(m.maxQueues, seen.transitions, seen.stale, seen.swept, seen.held, seen.ticks,
		seen.deliveries, seen.delivering, seen.waits, seen.runs)
}

// RedisError counts one failed Redis call.
func (m *Metrics) RedisError() {
	m.redisErrors.Inc()
}

// methodLabel keeps the method label bounded: net/http accepts any token as a
// method, so anything but the standard methods becomes "OTHER".
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return method
	}
	return "OTHER"
}

// errorLog is promhttp's error log over slog.
type errorLog struct{ log *slog.Logger }

// Println logs a scrape error.
func (l errorLog) Println(v ...any) {
	l.log.Warn("Metrics gather failed", "error", fmt.Sprint(v...))
}
