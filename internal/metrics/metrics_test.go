package metrics_test

import (
	"bytes"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/echo-mq/echo_mq/internal/metrics"
)

// scrape serves GET /metrics from m and parses the text exposition.
func scrape(t testing.TB, m *metrics.Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Accept", "text/plain; version=0.0.4")
	m.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("scrape status = %d, want 200; body:\n%s", rec.Code, rec.Body)
	}
	if got := rec.Header().Get("Content-Type"); !strings.HasPrefix(got, "text/plain") {
		t.Fatalf("scrape Content-Type = %q, want text/plain", got)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("parse scrape: %v", err)
	}
	return fams
}

// series returns the values of family name keyed by their labels,
// "k=v,k=v" with labels sorted by name as the exposition has them; a histogram's value is its sample count.
func series(t testing.TB, fams map[string]*dto.MetricFamily, name string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	fam, ok := fams[name]
	if !ok {
		return out
	}
	for _, m := range fam.GetMetric() {
		var labels []string
		for _, l := range m.GetLabel() {
			labels = append(labels, l.GetName()+"="+l.GetValue())
		}
		key := strings.Join(labels, ",")
		switch fam.GetType() {
		case dto.MetricType_COUNTER:
			out[key] = m.GetCounter().GetValue()
		case dto.MetricType_GAUGE:
			out[key] = m.GetGauge().GetValue()
		case dto.MetricType_HISTOGRAM:
			out[key] = float64(m.GetHistogram().GetSampleCount())
		default:
			out[key] = m.GetUntyped().GetValue()
		}
	}
	return out
}

// assertSeries fails unless family name has exactly the series want.
func assertSeries(t testing.TB, fams map[string]*dto.MetricFamily, name string, want map[string]float64) {
	t.Helper()
	if got := series(t, fams, name); !maps.Equal(got, want) {
		t.Errorf("%s = %v, want %v", name, got, want)
	}
}

func TestObserveRequest(t *testing.T) {
	t.Parallel()
	m := metrics.New(nil)
	m.ObserveRequest(http.MethodPost, "/queues/{queue}/jobs/{id}/lease", 200, 20*time.Millisecond)
	m.ObserveRequest(http.MethodPost, "/queues/{queue}/jobs/{id}/lease", 409, 30*time.Millisecond)
	m.ObserveRequest(http.MethodPost, "/queues/{queue}/jobs/{id}/lease", 200, 3*time.Second)
	m.ObserveRequest(http.MethodGet, "", 404, time.Millisecond)
	m.ObserveRequest("BREW", "", 405, time.Millisecond)
	m.ObserveRequest(http.MethodGet, "/healthz", 0, time.Millisecond)

	fams := scrape(t, m)
	assertSeries(t, fams, "emq_http_requests_total", map[string]float64{
		"method=POST,route=/queues/{queue}/jobs/{id}/lease,status=200": 2,
		"method=POST,route=/queues/{queue}/jobs/{id}/lease,status=409": 1,
		"method=GET,route=unmatched,status=404":                        1,
		"method=OTHER,route=unmatched,status=405":                      1,
		"method=GET,route=/healthz,status=200":                         1,
	})
	assertSeries(t, fams, "emq_http_request_duration_seconds", map[string]float64{
		"method=POST,route=/queues/{queue}/jobs/{id}/lease": 3,
		"method=GET,route=unmatched":                        1,
		"method=OTHER,route=unmatched":                      1,
		"method=GET,route=/healthz":                         1,
	})
	buckets := 0
	for _, mt := range fams["emq_http_request_duration_seconds"].GetMetric() {
		if mt.GetLabel()[0].GetValue() != http.MethodPost {
			continue
		}
		if got, want := mt.GetHistogram().GetSampleSum(), 3.05; got < want-1e-9 || got > want+1e-9 {
			t.Errorf("lease duration sum = %v, want %v", got, want)
		}
		// 20 ms and 30 ms fall at or under 0.05 s; 3 s only under 5 s.
		for _, b := range mt.GetHistogram().GetBucket() {
			switch b.GetUpperBound() {
			case 0.05:
				buckets++
				if got := b.GetCumulativeCount(); got != 2 {
					t.Errorf("lease bucket le=0.05 = %d, want 2", got)
				}
			case 30: // the longest long poll has a bucket
				buckets++
				if got := b.GetCumulativeCount(); got != 3 {
					t.Errorf("lease bucket le=30 = %d, want 3", got)
				}
			}
		}
	}
	if buckets != 2 {
		t.Errorf("found %d of the buckets le=0.05 and le=30 of the POST lease series, want 2", buckets)
	}
}

func TestJobCounters(t *testing.T) {
	t.Parallel()
	m := metrics.New(nil)
	m.Transition("emails", "claimed", 3)
	m.Transition("emails", "claimed", 2)
	m.Transition("emails", "completed", 1)
	m.Transition("emails", "failed", 0)
	m.Transition("emails", "dead", -4)
	m.StaleRefusal("emails")
	m.StaleRefusal("emails")
	m.StaleRefusal("thumbs")
	m.Swept("emails", 2, 1, 0)
	m.Swept("emails", 1, 0, -1)
	m.Swept("thumbs", 0, 0, 5)
	m.RedisError()

	fams := scrape(t, m)
	assertSeries(t, fams, "emq_job_transitions_total", map[string]float64{
		"kind=claimed,queue=emails":   5,
		"kind=completed,queue=emails": 1,
	})
	assertSeries(t, fams, "emq_stale_refusals_total", map[string]float64{
		"queue=emails": 2,
		"queue=thumbs": 1,
	})
	assertSeries(t, fams, "emq_sweep_jobs_total", map[string]float64{
		"outcome=recovered,queue=emails": 3,
		"outcome=dead,queue=emails":      1,
		"outcome=cancelled,queue=thumbs": 5,
	})
	assertSeries(t, fams, "emq_redis_errors_total", map[string]float64{"": 1})
}

func TestNewWithoutDepth(t *testing.T) {
	t.Parallel()
	fams := scrape(t, metrics.New(nil))
	assertSeries(t, fams, "emq_redis_errors_total", map[string]float64{"": 0})
	for _, name := range []string{"go_goroutines", "go_memstats_alloc_bytes"} {
		if _, ok := fams[name]; !ok {
			t.Errorf("scrape lacks %s (Go collector); has %v", name, slices.Sorted(maps.Keys(fams)))
		}
	}
	for name := range fams {
		if strings.HasPrefix(name, "emq_queue_") {
			t.Errorf("scrape has %s with a nil DepthFunc", name)
		}
	}
}

func TestHandlerLogsGatherErrors(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	m := metrics.New(depthOf(metrics.QueueDepth{Queue: "bad\xff"}, metrics.QueueDepth{Queue: "good"}))
	m.SetLogger(slog.New(slog.NewTextHandler(&logs, nil)))
	m.RedisError()

	fams := scrape(t, m) // still 200 with the series that could be gathered
	assertSeries(t, fams, "emq_redis_errors_total", map[string]float64{"": 1})
	assertSeries(t, fams, "emq_queue_paused", map[string]float64{"queue=good": 0})
	if got, want := logs.String(), "Metrics gather failed"; !strings.Contains(got, want) {
		t.Errorf("log = %q, want it to contain %q", got, want)
	}
	// The handler counts a gather error after serving, so the next scrape shows it.
	assertSeries(t, scrape(t, m), "promhttp_metric_handler_errors_total", map[string]float64{
		"cause=encoding": 0, "cause=gathering": 1,
	})
}
