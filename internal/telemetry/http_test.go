package telemetry

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-chi/chi/v5"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/echo-mq/echo_mq/internal/telemetry/otlptest"
)

// serve sends one request with the given headers to h over a real HTTP
// server and returns the answer's status.
func serve(t *testing.T, h http.Handler, method, path string, header http.Header) int {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	req, err := http.NewRequest(method, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// claimRouter is a chi router with a claim route that runs one script
// under the request's span.
func claimRouter(tel *Telemetry) *chi.Mux {
	r := chi.NewRouter()
	r.Use(tel.Middleware)
	r.Post("/queues/{queue}/claim", func(w http.ResponseWriter, r *http.Request) {
		_, end := StartScript(r.Context(), "claim")
		end(nil)
		w.WriteHeader(http.StatusOK)
	})
	return r
}

func TestMiddlewareContinuesTrace(t *testing.T) {
	tel, rcv := traced(t)
	status := serve(t, claimRouter(tel), http.MethodPost, "/queues/emails/claim",
		http.Header{"Traceparent": {callerHeader}})
	if status != http.StatusOK {
		t.Fatalf("status = %d, want 200", status)
	}
	srv := waitNamed(t, rcv, "POST /queues/{queue}/claim")
	if srv.TraceID != callerTrace || srv.ParentSpanID != callerSpan {
		t.Errorf("server span trace/parent = %s/%s, want %s/%s", srv.TraceID, srv.ParentSpanID, callerTrace, callerSpan)
	}
	if srv.Kind != trace.SpanKindServer {
		t.Errorf("server span kind = %v, want server", srv.Kind)
	}
	wantAttrs(t, srv, map[string]string{
		"http.request.method":       "POST",
		"http.route":                "/queues/{queue}/claim",
		"http.response.status_code": "200",
		"url.path":                  "/queues/emails/claim",
	})
	if srv.Status != codes.Unset {
		t.Errorf("server span status = %v, want unset", srv.Status)
	}

	script := waitNamed(t, rcv, "emq.script claim")
	if script.TraceID != callerTrace || script.ParentSpanID != srv.SpanID {
		t.Errorf("script span trace/parent = %s/%s, want %s/%s", script.TraceID, script.ParentSpanID, callerTrace, srv.SpanID)
	}
	if script.Kind != trace.SpanKindClient {
		t.Errorf("script span kind = %v, want client", script.Kind)
	}
	wantAttrs(t, script, map[string]string{"db.system.name": "redis", "db.operation.name": "claim"})
}

func TestMiddlewareAroundRouter(t *testing.T) {
	tel, rcv := traced(t)
	r := chi.NewRouter()
	r.Route("/queues/{queue}", func(r chi.Router) {
		r.Get("/jobs/{id}", func(http.ResponseWriter, *http.Request) {})
	})
	serve(t, tel.Middleware(r), http.MethodGet, "/queues/q/jobs/7", nil)
	s := waitNamed(t, rcv, "GET /queues/{queue}/jobs/{id}")
	wantAttrs(t, s, map[string]string{"http.route": "/queues/{queue}/jobs/{id}"})
	if s.ParentSpanID != "" {
		t.Errorf("parent = %q without a traceparent, want a root span", s.ParentSpanID)
	}
}

func TestMiddlewareUnmatched(t *testing.T) {
	tel, rcv := traced(t)
	status := serve(t, claimRouter(tel), http.MethodGet, "/nowhere", nil)
	if status != http.StatusNotFound {
		t.Fatalf("status = %d, want 404", status)
	}
	s := waitNamed(t, rcv, "GET unmatched")
	wantAttrs(t, s, map[string]string{"http.response.status_code": "404"})
	if route, ok := s.Attributes["http.route"]; ok {
		t.Errorf("http.route = %q on an unmatched request, want none", route)
	}
	if s.Status != codes.Unset {
		t.Errorf("status = %v for a 404, want unset (a client error is not the server's)", s.Status)
	}
}

func TestMiddlewareInvalidTraceparent(t *testing.T) {
	tel, rcv := traced(t)
	bad := "00-" + callerTrace + "-0000000000000000-01"
	serve(t, claimRouter(tel), http.MethodPost, "/queues/q/claim", http.Header{"Traceparent": {bad}})
	s := waitNamed(t, rcv, "POST /queues/{queue}/claim")
	if s.TraceID == callerTrace || s.ParentSpanID != "" {
		t.Errorf("trace/parent = %s/%q from an invalid traceparent, want a new root", s.TraceID, s.ParentSpanID)
	}
}

func TestMiddlewareServerError(t *testing.T) {
	tel, rcv := traced(t)
	r := chi.NewRouter()
	r.Use(tel.Middleware)
	r.Get("/down", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
	serve(t, r, http.MethodGet, "/down", nil)
	s := waitNamed(t, rcv, "GET /down")
	if s.Status != codes.Error {
		t.Errorf("status = %v for a 503, want error", s.Status)
	}
	wantAttrs(t, s, map[string]string{"http.response.status_code": "503", "error.type": "503"})
}

func TestMiddlewarePanic(t *testing.T) {
	tel, rcv := traced(t)
	r := chi.NewRouter()
	r.Use(tel.Middleware)
	r.Get("/boom", func(http.ResponseWriter, *http.Request) { panic("boom") })
	func() {
		defer func() {
			if v := recover(); v != "boom" {
				t.Errorf("recovered %v, want the handler's panic passed on", v)
			}
		}()
		r.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/boom", nil))
	}()
	s := waitNamed(t, rcv, "GET /boom")
	if s.Status != codes.Error || s.Attributes["http.response.status_code"] != "500" {
		t.Errorf("status %v, code %q after a panic, want error and 500", s.Status, s.Attributes["http.response.status_code"])
	}
}

func TestMethodOf(t *testing.T) {
	tests := []struct {
		method, name, attr, original string
	}{
		{"GET", "GET", "GET", ""},
		{"DELETE", "DELETE", "DELETE", ""},
		{"PURGE", "HTTP", "_OTHER", "PURGE"},
		{"get", "HTTP", "_OTHER", "get"},
	}
	for _, tt := range tests {
		name, attrs := methodOf(tt.method)
		got := map[string]string{}
		for _, kv := range attrs {
			got[string(kv.Key)] = kv.Value.AsString()
		}
		if name != tt.name || got["http.request.method"] != tt.attr || got["http.request.method_original"] != tt.original {
			t.Errorf("methodOf(%q) = %q, %v; want %q, method %q, original %q", tt.method, name, got, tt.name, tt.attr, tt.original)
		}
	}
}

// wantAttrs fails the test for each of want that s lacks or holds otherwise.
func wantAttrs(t *testing.T, s otlptest.Span, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got, ok := s.Attributes[k]; !ok || got != v {
			t.Errorf("span %q: %s = %q (present %v), want %q", s.Name, k, got, ok, v)
		}
	}
}
