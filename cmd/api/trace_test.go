package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/echo-mq/echo_mq/internal/redistest"
	"github.com/echo-mq/echo_mq/internal/telemetry"
	"github.com/echo-mq/echo_mq/internal/telemetry/otlptest"
)

// tracedEnv points the process's OTLP exporter at rcv (the OpenTelemetry
// SDK reads OTEL_* from the process, not from run's getenv) with a short
// batch delay, so that spans arrive within milliseconds; the machine's
// own OTEL_* variables are unset for the test.
func tracedEnv(t *testing.T, rcv *otlptest.Receiver) {
	for _, k := range telemetry.Variables {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.Endpoint())
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "10")
}

// peer is a program of the test's own (a producer, a worker) that traces
// with the OpenTelemetry SDK into the same receiver as the service.
func peer(t *testing.T, rcv *otlptest.Receiver, name string) trace.Tracer {
	t.Helper()
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(rcv.Endpoint()+"/v1/traces"))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp),
		sdktrace.WithResource(resource.NewSchemaless(semconv.ServiceName(name))))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp.Tracer(name)
}

// postTraced POSTs body to url with ctx's trace on its headers and
// decodes the answer into out.
func postTraced(t *testing.T, ctx context.Context, url, body string, status int, out any) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != status {
		t.Fatalf("POST %s: status %d, want %d", url, resp.StatusCode, status)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatal(err)
	}
}

// TestATraceFromProducerToWorker: a producer's span, the service's spans
// of its enqueue, and the span of the worker that claims the job are one
// trace, exported over OTLP to a receiver the test starts: the worker
// continues the trace from the job's traceparent, and its complete is a
// child of its own span.
func TestATraceFromProducerToWorker(t *testing.T) {
	rcv := otlptest.Start(t)
	tracedEnv(t, rcv)
	base, _, stop := startService(t, map[string]string{
		"EMQ_REDIS_URL": "redis://" + redistest.Addr(), "EMQ_PREFIX": "trace"})
	q := base + "/queues/" + redistest.Queue(t)

	ctx, checkout := peer(t, rcv, "producer").Start(context.Background(), "checkout")
	var enqueued struct{ Traceparent string }
	postTraced(t, ctx, q+"/jobs", `{"id":"receipt-1","payload":{}}`, http.StatusCreated, &enqueued)
	checkout.End()
	sent := "00-" + checkout.SpanContext().TraceID().String() + "-" + checkout.SpanContext().SpanID().String() + "-01"
	if enqueued.Traceparent != sent {
		t.Fatalf("the job's traceparent is %q, want the producer's %q", enqueued.Traceparent, sent)
	}

	var claimed struct {
		Jobs []struct {
			Token       int64
			Traceparent string
		}
	}
	postTraced(t, context.Background(), q+"/claim", `{"lease_ms":30000}`, http.StatusOK, &claimed)
	if len(claimed.Jobs) != 1 || claimed.Jobs[0].Traceparent != sent {
		t.Fatalf("claimed %+v, want receipt-1 with traceparent %s", claimed.Jobs, sent)
	}
	carrier := propagation.MapCarrier{"traceparent": claimed.Jobs[0].Traceparent}
	wctx, work := peer(t, rcv, "worker").Start(propagation.TraceContext{}.Extract(context.Background(), carrier), "send receipt")
	var done, stale map[string]any
	postTraced(t, wctx, q+"/jobs/receipt-1/complete",
		`{"token":`+jsonInt(claimed.Jobs[0].Token)+`}`, http.StatusOK, &done)
	postTraced(t, wctx, q+"/jobs/receipt-1/complete", // a stale token: an answer, not a failure
		`{"token":`+jsonInt(claimed.Jobs[0].Token+1)+`}`, http.StatusConflict, &stale)
	work.End()
	for _, path := range []string{"/healthz", "/readyz", "/metrics", "/ui/"} { // probes, scrapes: no traces
		mustCall(t, http.MethodGet, base+path, "", http.StatusOK, nil)
	}
	if err := stop(); err != nil { // the service exports what it buffered as it stops
		t.Fatal(err)
	}

	traceID := checkout.SpanContext().TraceID().String()
	spans := rcv.WaitFor(t, func(s []otlptest.Span) bool {
		return len(inTrace(s, traceID, "emq.script complete")) == 2
	}, 10*time.Second)
	enqueue := onlySpan(t, spans, traceID, "POST /queues/{queue}/jobs")
	wantChild(t, enqueue, checkout.SpanContext().SpanID().String(), "echo_mq")
	wantChild(t, onlySpan(t, spans, traceID, "emq.script enqueue"), enqueue.SpanID, "echo_mq")
	worker := onlySpan(t, spans, traceID, "send receipt")
	wantChild(t, worker, checkout.SpanContext().SpanID().String(), "worker")
	completes := map[string]bool{}
	for _, complete := range inTrace(spans, traceID, "POST /queues/{queue}/jobs/{id}/complete") {
		wantChild(t, complete, worker.SpanID, "echo_mq")
		completes[complete.SpanID] = true
	}
	for _, script := range inTrace(spans, traceID, "emq.script complete") {
		if !completes[script.ParentSpanID] || script.Status != codes.Unset {
			t.Errorf("emq.script complete: parent %s (the completes: %v), status %v; want a complete's child, and a stale token no error",
				script.ParentSpanID, completes, script.Status)
		}
	}
	if len(completes) != 2 {
		t.Errorf("%d complete spans in the trace, want the worker's 2", len(completes))
	}
	if got := inTrace(spans, traceID, "POST /queues/{queue}/claim"); len(got) != 0 {
		t.Errorf("the claim, sent without a trace, is in the producer's trace: %v", got)
	}
	if got := otlptest.Named(spans, "POST /queues/{queue}/claim"); len(got) != 1 || got[0].ParentSpanID != "" {
		t.Errorf("the claim is %v, want one span, the root of a trace of its own", got)
	}
	for _, s := range spans {
		if strings.HasPrefix(s.Name, "GET /") && !strings.HasPrefix(s.Name, "GET /queues") {
			t.Errorf("a probe, scrape or dashboard file was traced: %s", s.Name)
		}
	}
}

// TestAPushDeliveryJoinsTheProducersTrace: a pushed job's delivery is a
// span of the producer's trace, and the receiver is handed the trace on
// the POST's traceparent header, its parent the delivery's span.
func TestAPushDeliveryJoinsTheProducersTrace(t *testing.T) {
	rcv := otlptest.Start(t)
	tracedEnv(t, rcv)
	var mu sync.Mutex
	var header, field string
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct{ Traceparent string }
		_ = json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		header, field = r.Header.Get("traceparent"), body.Traceparent
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(hook.Close)
	base, _, stop := startService(t, map[string]string{
		"EMQ_REDIS_URL": "redis://" + redistest.Addr(), "EMQ_PREFIX": "trace",
		"EMQ_PUSH_ALLOW": strings.TrimPrefix(hook.URL, "http://")})
	q := base + "/queues/" + redistest.Queue(t)
	mustCall(t, http.MethodPut, q+"/push", `{"url":"`+hook.URL+`/"}`, http.StatusOK, nil)

	ctx, checkout := peer(t, rcv, "producer").Start(context.Background(), "checkout")
	var enqueued map[string]any
	postTraced(t, ctx, q+"/jobs", `{"id":"pushed-1","payload":{}}`, http.StatusCreated, &enqueued)
	checkout.End()
	traceID := checkout.SpanContext().TraceID().String()
	eventually(t, 10*time.Second, "the delivery", func() bool {
		var j struct{ State string }
		mustCall(t, http.MethodGet, q+"/jobs/pushed-1", "", http.StatusOK, &j)
		return j.State == "completed"
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	spans := rcv.WaitFor(t, func(s []otlptest.Span) bool {
		return len(inTrace(s, traceID, "emq.script complete")) > 0
	}, 10*time.Second)
	delivery := onlySpan(t, spans, traceID, "emq.push "+strings.TrimPrefix(q, base+"/queues/"))
	wantChild(t, delivery, checkout.SpanContext().SpanID().String(), "echo_mq")
	wantChild(t, onlySpan(t, spans, traceID, "emq.script complete"), delivery.SpanID, "echo_mq")
	mu.Lock()
	defer mu.Unlock()
	if want := "00-" + traceID + "-" + delivery.SpanID + "-01"; header != want {
		t.Errorf("the receiver was sent traceparent %q, want %q (the delivery's span)", header, want)
	}
	if want := "00-" + traceID + "-" + checkout.SpanContext().SpanID().String() + "-01"; field != want {
		t.Errorf("the pushed job's traceparent is %q, want the producer's %q", field, want)
	}
}

// inTrace is the spans of trace traceID called name.
func inTrace(spans []otlptest.Span, traceID, name string) []otlptest.Span {
	var out []otlptest.Span
	for _, s := range otlptest.Named(spans, name) {
		if s.TraceID == traceID {
			out = append(out, s)
		}
	}
	return out
}

// onlySpan is the one span of trace traceID called name.
func onlySpan(t *testing.T, spans []otlptest.Span, traceID, name string) otlptest.Span {
	t.Helper()
	got := inTrace(spans, traceID, name)
	if len(got) != 1 {
		var names bytes.Buffer
		for _, s := range spans {
			names.WriteString("\n  " + s.TraceID + " " + s.Name)
		}
		t.Fatalf("%d spans %q in trace %s, want 1; received:%s", len(got), name, traceID, names.String())
	}
	return got[0]
}

// wantChild checks that s is a child of parent, sent by service.
func wantChild(t *testing.T, s otlptest.Span, parent, service string) {
	t.Helper()
	if s.ParentSpanID != parent {
		t.Errorf("%s: parent %s, want %s", s.Name, s.ParentSpanID, parent)
	}
	if got := s.Resource["service.name"]; got != service {
		t.Errorf("%s: service.name %q, want %q", s.Name, got, service)
	}
}

// jsonInt writes n as a JSON integer.
func jsonInt(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
