// Package otlptest runs a real OTLP trace receiver for tests: an HTTP server
// that accepts POST /v1/traces as OTLP/HTTP protobuf, and a gRPC server of
// the OTLP TraceService, both keeping every span they are sent. A test points
// OTEL_EXPORTER_OTLP_ENDPOINT at Endpoint (or GRPCEndpoint with
// OTEL_EXPORTER_OTLP_PROTOCOL=grpc) and asserts on the spans the service
// exported, through the same exporter and wire format a collector sees.
package otlptest

import (
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
)

// Span is one received span, reduced to what tests assert on. IDs are
// lowercase hex, as in a traceparent header; ParentSpanID is "" for a root.
type Span struct {
	Name         string
	TraceID      string
	SpanID       string
	ParentSpanID string
	Kind         trace.SpanKind
	Attributes   map[string]string
	// Resource holds the attributes of the resource the span came with,
	// such as service.name.
	Resource      map[string]string
	Status        codes.Code
	StatusMessage string
}

// Receiver is a running OTLP receiver. Its methods are safe to call from
// any goroutine.
type Receiver struct {
	http *httptest.Server
	grpc *grpc.Server
	addr string // the gRPC listener's host:port

	mu     sync.Mutex
	spans  []Span
	header http.Header // of the last export request
}

// Start starts a receiver on loopback ports and stops it when the test ends.
func Start(t testing.TB) *Receiver {
	t.Helper()
	r := &Receiver{header: http.Header{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", r.handleTraces)
	r.http = httptest.NewServer(mux)
	t.Cleanup(r.http.Close)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("otlptest: listen: %v", err)
	}
	r.addr = ln.Addr().String()
	r.grpc = grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(r.grpc, &traceService{r: r})
	go r.grpc.Serve(ln) // returns when Stop closes ln
	t.Cleanup(r.grpc.Stop)
	return r
}

// Endpoint is the base URL of the OTLP/HTTP receiver, for
// OTEL_EXPORTER_OTLP_ENDPOINT (the exporter adds /v1/traces).
func (r *Receiver) Endpoint() string {
	return r.http.URL
}

// GRPCEndpoint is the URL of the OTLP/gRPC receiver, for
// OTEL_EXPORTER_OTLP_ENDPOINT with OTEL_EXPORTER_OTLP_PROTOCOL=grpc; its
// http scheme tells the exporter to connect without TLS.
func (r *Receiver) GRPCEndpoint() string {
	return "http://" + r.addr
}

// Spans returns a copy of every span received so far, in arrival order.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.spans)
}

// Header returns the value of the named header (gRPC metadata for the gRPC
// receiver) on the last export request, so that a test can check that
// OTEL_EXPORTER_OTLP_HEADERS reached the wire.
func (r *Receiver) Header(name string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.header.Get(name)
}

// WaitFor polls the received spans until done accepts them, and returns
// them; after timeout it fails the test, listing what did arrive. Exporters
// send in batches on their own schedule, so a test waits rather than
// reading Spans once.
func (r *Receiver) WaitFor(t testing.TB, done func([]Span) bool, timeout time.Duration) []Span {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		spans := r.Spans()
		if done(spans) {
			return spans
		}
		if time.Now().After(deadline) {
			t.Fatalf("otlptest: after %v the spans received do not satisfy the condition: %s", timeout, describe(spans))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Named returns the spans called name, a common first filter for WaitFor
// conditions and assertions.
func Named(spans []Span, name string) []Span {
	var out []Span
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// keep stores the spans of one export request and the request's headers.
func (r *Receiver) keep(req *coltracepb.ExportTraceServiceRequest, h http.Header) {
	spans := decode(req)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.spans = append(r.spans, spans...)
	r.header = h
}
