package http_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/redis/go-redis/v9"

	emqhttp "github.com/echo-mq/echo_mq/internal/http"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

// scrapeMetrics reads GET /metrics of every replica in the text format and
// adds them up as a Prometheus sum() would: counters and histograms of the
// same labels are summed; echo_mq's gauges, read from Redis, must be the
// same on every replica, and are kept once.
func (h *harness) scrapeMetrics(tb testing.TB) map[string]*dto.MetricFamily {
	tb.Helper()
	var sum map[string]*dto.MetricFamily
	for _, replica := range h.replicas {
		fams := scrapeReplica(tb, replica)
		if sum == nil {
			sum = fams
			continue
		}
		for _, diff := range addFamilies(sum, fams) {
			tb.Errorf("replicas disagree on a gauge read from Redis: %s", diff)
		}
	}
	return sum
}

func scrapeReplica(tb testing.TB, replica http.Handler) map[string]*dto.MetricFamily {
	tb.Helper()
	req := httptest.NewRequest("GET", "/metrics", nil)
	req.Header.Set("Accept", "text/plain; version=0.0.4")
	rec := httptest.NewRecorder()
	replica.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		tb.Fatalf("GET /metrics: %d %s", rec.Code, rec.Body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(rec.Body)
	if err != nil {
		tb.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// addFamilies adds src's counters and histogram counts into sum, and
// lists src's emq_ gauges (read from Redis) whose values differ from sum's;
// the process's own gauges (go_, process_) differ, as they should.
func addFamilies(sum, src map[string]*dto.MetricFamily) []string {
	var differ []string
	for name, fam := range src {
		into, ok := sum[name]
		if !ok {
			sum[name] = fam
			continue
		}
		for _, m := range fam.GetMetric() {
			same := sameLabels(into, m)
			switch {
			case same == nil:
				into.Metric = append(into.Metric, m)
			case fam.GetType() == dto.MetricType_COUNTER:
				*same.Counter.Value += m.GetCounter().GetValue()
			case fam.GetType() == dto.MetricType_HISTOGRAM:
				*same.Histogram.SampleCount += m.GetHistogram().GetSampleCount()
			case fam.GetType() == dto.MetricType_GAUGE && strings.HasPrefix(name, "emq_") &&
				same.GetGauge().GetValue() != m.GetGauge().GetValue():
				differ = append(differ, fmt.Sprintf("%s{%s} = %v and %v", name, labelKey(m),
					same.GetGauge().GetValue(), m.GetGauge().GetValue()))
			}
		}
	}
	return differ
}

// sameLabels is fam's metric with m's labels, or nil.
func sameLabels(fam *dto.MetricFamily, m *dto.Metric) *dto.Metric {
	for _, have := range fam.GetMetric() {
		if labelKey(have) == labelKey(m) {
			return have
		}
	}
	return nil
}

func labelKey(m *dto.Metric) string {
	var labels []string
	for _, l := range m.GetLabel() {
		labels = append(labels, l.GetName()+"="+l.GetValue())
	}
	return strings.Join(labels, ",")
}

// metricSeries is family name's values keyed by their labels, "k=v,k=v"
// in label-name order; a histogram's value is its count.
func metricSeries(fams map[string]*dto.MetricFamily, name string) map[string]float64 {
	out := map[string]float64{}
	fam, ok := fams[name]
	if !ok {
		return out
	}
	for _, m := range fam.GetMetric() {
		key := labelKey(m)
		switch fam.GetType() {
		case dto.MetricType_COUNTER:
			out[key] = m.GetCounter().GetValue()
		case dto.MetricType_GAUGE:
			out[key] = m.GetGauge().GetValue()
		case dto.MetricType_HISTOGRAM:
			out[key] = float64(m.GetHistogram().GetSampleCount())
		}
	}
	return out
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "job-7f3a9c", "job-b2", "job-c3")
		held := h.claim(t, q, `{"count":2}`)
		must[jobView](t, h.complete(t, q, "job-7f3a9c", held[0].Token, ""), http.StatusOK)
		wantProblem(t, h.complete(t, q, "job-b2", held[1].Token+1, ""), 409, "EMQSTALE")
		h.get(t, q, "job-b2")
		wantProblem(t, h.do(t, "GET", "/nope/job-c3", nil), 404, "EMQNOTFOUND")
		fams := h.scrapeMetrics(t)

		requests := metricSeries(fams, "emq_http_requests_total")
		for key, want := range map[string]float64{
			"method=POST,route=/queues/{queue}/jobs,status=201":               3,
			"method=POST,route=/queues/{queue}/claim,status=200":              1,
			"method=POST,route=/queues/{queue}/jobs/{id}/complete,status=200": 1,
			"method=POST,route=/queues/{queue}/jobs/{id}/complete,status=409": 1,
			"method=GET,route=/queues/{queue}/jobs/{id},status=200":           1,
			"method=GET,route=unmatched,status=404":                           1,
		} {
			if got := requests[key]; got != want {
				t.Errorf("emq_http_requests_total{%s} = %v, want %v", key, got, want)
			}
		}
		if n := metricSeries(fams, "emq_http_request_duration_seconds")["method=POST,route=/queues/{queue}/jobs/{id}/complete"]; n != 2 {
			t.Errorf("emq_http_request_duration_seconds count for complete = %v, want 2", n)
		}
		for name, fam := range fams {
			for _, m := range fam.GetMetric() {
				for _, l := range m.GetLabel() {
					if strings.Contains(l.GetValue(), "job-") || (l.GetName() == "route" && strings.Contains(l.GetValue(), q)) {
						t.Errorf("%s has label %s=%q: a raw path, not a route pattern", name, l.GetName(), l.GetValue())
					}
				}
			}
		}

		transitions := metricSeries(fams, "emq_job_transitions_total")
		for kind, want := range map[string]float64{"enqueued": 3, "claimed": 2, "completed": 1} {
			if got := transitions["kind="+kind+",queue="+q]; got != want {
				t.Errorf("emq_job_transitions_total{kind=%q} = %v, want %v", kind, got, want)
			}
		}
		if got := metricSeries(fams, "emq_stale_refusals_total")["queue="+q]; got != 1 {
			t.Errorf("emq_stale_refusals_total{queue=%q} = %v, want 1", q, got)
		}

		depth := metricSeries(fams, "emq_queue_jobs")
		for state, want := range map[string]float64{"pending": 1, "active": 1, "completed": 1, "delayed": 0, "dead": 0, "cancelled": 0} {
			key := "queue=" + q + ",state=" + state
			if got, ok := depth[key]; !ok || got != want {
				t.Errorf("emq_queue_jobs{%s} = %v (present: %v), want %v", key, got, ok, want)
			}
		}
		if got := metricSeries(fams, "emq_queue_depth_up")[""]; got != 1 {
			t.Errorf("emq_queue_depth_up = %v, want 1", got)
		}
		must[queueView](t, h.operate(t, q, "pause"), http.StatusOK)
		if got := metricSeries(h.scrapeMetrics(t), "emq_queue_paused")["queue="+q]; got != 1 {
			t.Errorf("emq_queue_paused{queue=%q} = %v after a pause, want 1", q, got)
		}
	}, withMetrics())
}

func TestMetricsOperatorTransitions(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "a", "b", "c")
		h.enqueue(t, q, `{"id":"d","payload":1,"delay_ms":60000}`)
		must[jobView](t, h.cancel(t, q, "a", nil), http.StatusOK)
		must[jobView](t, h.do(t, "POST", jobPath(q, "a", "retry"), nil), http.StatusOK)
		must[jobView](t, h.do(t, "POST", jobPath(q, "d", "promote"), nil), http.StatusOK)
		must[map[string]int](t, h.do(t, "DELETE", jobPath(q, "b"), nil), http.StatusOK)
		must[map[string]int](t, h.operate(t, q, "drain"), http.StatusOK) // a, c, d
		transitions := metricSeries(h.scrapeMetrics(t), "emq_job_transitions_total")
		for kind, want := range map[string]float64{"retried": 1, "promoted": 1, "removed": 1, "drained": 3} {
			if got := transitions["kind="+kind+",queue="+q]; got != want {
				t.Errorf("emq_job_transitions_total{kind=%q} = %v, want %v", kind, got, want)
			}
		}
	}, withMetrics())
}

func TestMetricsOff(t *testing.T) {
	t.Parallel()
	h := newHarness(t, redistest.Client(t))
	wantProblem(t, h.do(t, "GET", "/metrics", nil), 404, "EMQNOTFOUND")
}

// kindsOf are the kinds of entries, in order.
func kindsOf(entries []map[string]string) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e["kind"]
	}
	return out
}

// statesOf are the states of entries, in order.
func statesOf(entries []map[string]string) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e["state"]
	}
	return out
}

func TestEventsOfAJobsLife(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "a")
		c1 := h.claim(t, q, `{"worker":"w1"}`)[0]
		must[extended](t, h.extend(t, q, "a", c1.Token, 30_000, `{"pct":50}`), http.StatusOK)
		must[extended](t, h.extend(t, q, "a", c1.Token, 30_000, ""), http.StatusOK) // no progress, no event
		must[jobView](t, h.fail(t, q, "a", c1.Token, `,"error":"boom","retry_in_ms":0`), http.StatusOK)
		c2 := h.claimOne(t, q, "a", 30_000)
		must[jobView](t, h.complete(t, q, "a", c2.Token, `,"result":1`), http.StatusOK)

		entries := entriesOf(h.streamEntries(t, q), "", "a")
		wantKinds := []string{"enqueued", "claimed", "progress", "failed", "claimed", "completed"}
		wantStates := []string{"pending", "active", "active", "pending", "active", "completed"}
		if got := kindsOf(entries); !slices.Equal(got, wantKinds) {
			t.Fatalf("event kinds %v, want %v", got, wantKinds)
		}
		if got := statesOf(entries); !slices.Equal(got, wantStates) {
			t.Errorf("event states %v, want %v", got, wantStates)
		}
		if entries[3]["error"] != "boom" {
			t.Errorf("failed event %v, want error boom", entries[3])
		}
		if entries[1]["worker"] != "w1" {
			t.Errorf("claimed event %v, want worker w1", entries[1])
		}
		for _, e := range entries {
			if strings.Contains(fmt.Sprint(e), fmt.Sprint(c1.Token)) || strings.Contains(fmt.Sprint(e), fmt.Sprint(c2.Token)) {
				t.Errorf("event %v shows a token", e)
			}
		}
	})
}

func TestEventsOfRetriesAndDeath(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "b")
		c := h.claimOne(t, q, "b", 30_000)
		j := must[jobView](t, h.fail(t, q, "b", c.Token, `,"error":"later","retry_in_ms":100`), http.StatusOK)
		waitPast(t, j.RunAt)
		c = h.claimOne(t, q, "b", 30_000)
		must[jobView](t, h.fail(t, q, "b", c.Token, `,"error":"fatal","fatal":true`), http.StatusOK)
		entries := entriesOf(h.streamEntries(t, q), "", "b")
		wantKinds := []string{"enqueued", "claimed", "failed", "due", "claimed", "dead"}
		wantStates := []string{"pending", "active", "delayed", "pending", "active", "dead"}
		if got := kindsOf(entries); !slices.Equal(got, wantKinds) {
			t.Fatalf("event kinds %v, want %v", got, wantKinds)
		}
		if got := statesOf(entries); !slices.Equal(got, wantStates) {
			t.Errorf("event states %v, want %v", got, wantStates)
		}
		if entries[5]["error"] != "fatal" {
			t.Errorf("dead event %v, want error fatal", entries[5])
		}
	})
}

func TestEventsOfCancelAndSweep(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "p")
		must[jobView](t, h.cancel(t, q, "p", `{"reason":"r1"}`), http.StatusOK)

		h.add(t, q, "x")
		cx := h.claimOne(t, q, "x", 30_000)
		must[jobView](t, h.cancel(t, q, "x", `{"reason":"r2"}`), http.StatusAccepted)
		must[jobView](t, h.fail(t, q, "x", cx.Token, `,"error":"stopped"`), http.StatusOK)

		h.add(t, q, "s")
		h.claimOne(t, q, "s", 100)
		h.sweepUntil(t, q, `{"max_stalled":2}`, "s")
		h.claimOne(t, q, "s", 100)
		h.sweepUntil(t, q, `{"max_stalled":2}`, "s")

		h.add(t, q, "y")
		h.claimOne(t, q, "y", 100)
		must[jobView](t, h.cancel(t, q, "y", nil), http.StatusAccepted)
		h.sweepUntil(t, q, nil, "y")

		entries := h.streamEntries(t, q)
		for _, tc := range []struct {
			id     string
			kinds  []string
			states []string
		}{
			{"p", []string{"enqueued", "cancelled"}, []string{"pending", "cancelled"}},
			{"x", []string{"enqueued", "claimed", "cancel_requested", "cancelled"}, []string{"pending", "active", "active", "cancelled"}},
			{"s", []string{"enqueued", "claimed", "recovered", "claimed", "dead"}, []string{"pending", "active", "pending", "active", "dead"}},
			{"y", []string{"enqueued", "claimed", "cancel_requested", "cancelled"}, []string{"pending", "active", "active", "cancelled"}},
		} {
			got := entriesOf(entries, "", tc.id)
			if !slices.Equal(kindsOf(got), tc.kinds) || !slices.Equal(statesOf(got), tc.states) {
				t.Errorf("job %s: events %v in states %v, want %v in %v", tc.id, kindsOf(got), statesOf(got), tc.kinds, tc.states)
			}
		}
		for _, want := range []struct{ id, kind, field, value string }{
			{"p", "cancelled", "reason", "r1"},
			{"x", "cancel_requested", "reason", "r2"},
			{"x", "cancelled", "error", "stopped"},
			{"s", "dead", "error", "stalled"},
			{"y", "cancelled", "error", "stalled"},
		} {
			e := entriesOf(entries, want.kind, want.id)
			if len(e) != 1 || e[0][want.field] != want.value {
				t.Errorf("%s event of %s = %v, want %s %q", want.kind, want.id, e, want.field, want.value)
			}
		}
	})
}

func TestCORS(t *testing.T) {
	t.Parallel()
	preflight := func(h *harness, origin string) http.Header {
		req := httptest.NewRequest("OPTIONS", "/queues/q/jobs", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "Content-Type, Authorization, Prefer")
		rec := httptest.NewRecorder()
		h.handler.ServeHTTP(rec, req)
		return rec.Header()
	}
	get := func(h *harness, origin string) (int, http.Header) {
		req := httptest.NewRequest("GET", "/queues/q", nil)
		req.Header.Set("Origin", origin)
		rec := httptest.NewRecorder()
		h.handler.ServeHTTP(rec, req)
		return rec.Code, rec.Header()
	}
	t.Run("allowed origin", func(t *testing.T) {
		t.Parallel()
		forEachBackend(t, func(t *testing.T, h *harness) {
			hd := preflight(h, "https://dash.example")
			if got := hd.Get("Access-Control-Allow-Origin"); got != "https://dash.example" {
				t.Errorf("preflight Access-Control-Allow-Origin = %q, want https://dash.example", got)
			}
			if got := hd.Get("Access-Control-Allow-Methods"); !strings.Contains(got, "POST") {
				t.Errorf("preflight Access-Control-Allow-Methods = %q, want POST in it", got)
			}
			if !listHas(hd, "Access-Control-Allow-Headers", "Prefer") {
				t.Errorf("preflight Access-Control-Allow-Headers = %q, want Prefer in it", hd.Values("Access-Control-Allow-Headers"))
			}
			status, hd := get(h, "https://dash.example")
			if status != http.StatusOK || hd.Get("Access-Control-Allow-Origin") != "https://dash.example" {
				t.Errorf("GET from the dashboard: %d, Access-Control-Allow-Origin %q", status, hd.Get("Access-Control-Allow-Origin"))
			}
			for _, name := range []string{"Preference-Applied", "Retry-After"} {
				if !listHas(hd, "Access-Control-Expose-Headers", name) {
					t.Errorf("GET from the dashboard: Access-Control-Expose-Headers = %q, want %s in it",
						hd.Values("Access-Control-Expose-Headers"), name)
				}
			}
		}, withCORS("https://dash.example"))
	})
	t.Run("other origin", func(t *testing.T) {
		t.Parallel()
		forEachBackend(t, func(t *testing.T, h *harness) {
			if got := preflight(h, "https://evil.example").Get("Access-Control-Allow-Origin"); got != "" {
				t.Errorf("preflight from another origin got Access-Control-Allow-Origin %q, want none", got)
			}
			if _, hd := get(h, "https://evil.example"); hd.Get("Access-Control-Allow-Origin") != "" {
				t.Errorf("GET from another origin got Access-Control-Allow-Origin %q", hd.Get("Access-Control-Allow-Origin"))
			}
		}, withCORS("https://dash.example"))
	})
	t.Run("off by default", func(t *testing.T) {
		t.Parallel()
		forEachBackend(t, func(t *testing.T, h *harness) {
			for name, hd := range map[string]http.Header{
				"preflight": preflight(h, "https://dash.example"),
				"GET":       func() http.Header { _, hd := get(h, "https://dash.example"); return hd }(),
			} {
				for k := range hd {
					if strings.HasPrefix(k, "Access-Control-") {
						t.Errorf("%s with CORS off answered header %s: %v", name, k, hd[k])
					}
				}
			}
		})
	})
}

// lockedBuffer is a bytes.Buffer safe for the handler's concurrent logging.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// records are the JSON log lines written so far.
func (b *lockedBuffer) records(tb testing.TB) []map[string]any {
	tb.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b.buf.Bytes()))
	for sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			tb.Fatalf("log line %q: %v", sc.Text(), err)
		}
		out = append(out, rec)
	}
	return out
}

// TestAuditLog: every operator action is logged with who asked, what and on
// what, besides its event in the stream.
func TestAuditLog(t *testing.T) {
	t.Parallel()
	var logs lockedBuffer
	h := newHarness(t, redistest.Client(t), withConfig(func(c *emqhttp.Config) {
		c.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}))
	q := redistest.Queue(t)
	h.add(t, q, "a", "b", "c")
	h.enqueue(t, q, `{"id":"d","payload":1,"delay_ms":60000}`)
	must[jobView](t, h.cancel(t, q, "a", nil), http.StatusOK)
	must[queueView](t, h.operate(t, q, "pause"), http.StatusOK)
	must[queueView](t, h.operate(t, q, "resume"), http.StatusOK)
	must[jobView](t, h.do(t, "POST", jobPath(q, "a", "retry"), nil), http.StatusOK)
	must[jobView](t, h.do(t, "POST", jobPath(q, "d", "promote"), nil), http.StatusOK)
	must[map[string]int](t, h.do(t, "DELETE", jobPath(q, "b"), nil), http.StatusOK)
	must[map[string]int](t, h.operate(t, q, "drain"), http.StatusOK)
	must[map[string]int](t, h.do(t, "DELETE", "/queues/"+q, nil), http.StatusOK)
	wantProblem(t, h.do(t, "POST", jobPath(q, "nope", "retry"), nil), 404, "EMQGONE")

	var actions []string
	for _, rec := range logs.records(t) {
		if rec["msg"] != "Operator action" {
			continue
		}
		actions = append(actions, fmt.Sprint(rec["action"]))
		if rec["actor"] != "anonymous" || rec["role"] != "admin" || rec["queue"] != q {
			t.Errorf("audit record %v, want actor anonymous, role admin, queue %s", rec, q)
		}
		attrs := map[string]map[string]any{
			"retry": {"job": "a"}, "promote": {"job": "d"}, "remove": {"job": "b"},
			"drain": {"removed": 3.0}, "obliterate": {"removed": 0.0, "force": false},
		}[fmt.Sprint(rec["action"])]
		for k, v := range attrs {
			if rec[k] != v {
				t.Errorf("audit record %v, want %s = %v", rec, k, v)
			}
		}
	}
	want := []string{"pause", "resume", "retry", "promote", "remove", "drain", "obliterate"}
	if !slices.Equal(actions, want) {
		t.Errorf("audited actions %v, want %v (a refused one is not an action)", actions, want)
	}
}

func TestRemoveWritesEvent(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "r")
		must[map[string]int](t, h.do(t, "DELETE", jobPath(q, "r"), nil), http.StatusOK)
		e := onlyEntry(t, entriesOf(h.streamEntries(t, q), "removed", "r"), "one remove")
		wantActor(t, e)
	})
}

// TestOperatorEventsInOrder: every operator action writes its kind to the
// stream, in the order they happened, each naming who asked.
func TestOperatorEventsInOrder(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "a")
		h.enqueue(t, q, `{"id":"d","payload":1,"delay_ms":60000}`)
		must[queueView](t, h.operate(t, q, "pause"), http.StatusOK)
		must[queueView](t, h.operate(t, q, "resume"), http.StatusOK)
		must[jobView](t, h.do(t, "POST", jobPath(q, "d", "promote"), nil), http.StatusOK)
		must[jobView](t, h.cancel(t, q, "a", nil), http.StatusOK)
		must[jobView](t, h.do(t, "POST", jobPath(q, "a", "retry"), nil), http.StatusOK)
		must[map[string]int](t, h.do(t, "DELETE", jobPath(q, "a"), nil), http.StatusOK)
		must[map[string]int](t, h.operate(t, q, "drain"), http.StatusOK)
		var operator []string
		for _, e := range h.streamEntries(t, q) {
			if e["actor"] != "" || e["role"] != "" {
				wantActor(t, e)
				operator = append(operator, e["kind"])
			}
		}
		want := []string{"paused", "resumed", "promoted", "retried", "removed", "drained"}
		if !slices.Equal(operator, want) {
			t.Errorf("operator events %v, want %v", operator, want)
		}
	})
}

// TestClientThatLeavesIsNotAServerError: a client that gives up while its
// call waits on Redis is counted and logged as 499 (nginx's "client closed
// request"), not as a 503 warning that would page someone about Redis.
func TestClientThatLeavesIsNotAServerError(t *testing.T) {
	t.Parallel()
	server := redistest.StartServer(t)
	rdb := closeLater(t, redis.NewClient(&redis.Options{Addr: server.Addr, MaxRetries: -1}))
	var logs lockedBuffer
	h := newHarness(t, rdb, withMetrics(), withConfig(func(c *emqhttp.Config) {
		c.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}))
	q := redistest.Queue(t)
	// Redis holds every command for 2 s; the client leaves after 100 ms.
	if err := rdb.Do(context.Background(), "CLIENT", "PAUSE", 2000, "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req := httptest.NewRequestWithContext(ctx, "POST", jobsPath(q), strings.NewReader(`{"payload":1}`))
	req.Header.Set("Content-Type", "application/json")
	h.handler.ServeHTTP(httptest.NewRecorder(), req)
	if err := rdb.Do(context.Background(), "CLIENT", "UNPAUSE").Err(); err != nil {
		t.Fatal(err)
	}

	requests := metricSeries(h.scrapeMetrics(t), "emq_http_requests_total")
	if got := requests["method=POST,route=/queues/{queue}/jobs,status=499"]; got != 1 {
		t.Errorf("requests counted %v, want one POST with status 499", requests)
	}
	for _, rec := range logs.records(t) {
		if rec["level"] == "WARN" || rec["level"] == "ERROR" {
			t.Errorf("a client leaving logged %v", rec)
		}
	}
}
