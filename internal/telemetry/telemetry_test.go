package telemetry

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/echo-mq/echo_mq/internal/telemetry/otlptest"
)

func TestSetupOff(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
	}{
		{"nothing set", nil},
		{"sdk disabled", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_SDK_DISABLED": "true"}},
		{"sdk disabled upper case", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:1", "OTEL_SDK_DISABLED": "TRUE"}},
		{"exporter none", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_TRACES_EXPORTER": "none"}},
		{"only a protocol", map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cleanEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			tel := setup(t)
			if tel.Enabled() {
				t.Fatal("Enabled() = true, want false")
			}
			router := chi.NewRouter()
			if got := tel.Middleware(router); got != http.Handler(router) {
				t.Errorf("Middleware returned %T, want the router itself", got)
			}
		})
	}
}

func TestSetupSDKDisabledFalseIsOn(t *testing.T) {
	cleanEnv(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	t.Setenv("OTEL_SDK_DISABLED", "false")
	if tel := setup(t); !tel.Enabled() {
		t.Fatal("Enabled() = false with OTEL_SDK_DISABLED=false and an endpoint")
	}
}

func TestSetupErrors(t *testing.T) {
	tests := []struct {
		name, key, value string
	}{
		{"bad protocol", "OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"},
		{"bad traces protocol", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "thrift"},
		{"unsupported exporter", "OTEL_TRACES_EXPORTER", "zipkin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cleanEnv(t)
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
			t.Setenv(tt.key, tt.value)
			tel, err := Setup(context.Background(), "1.2.3")
			if err == nil {
				tel.Shutdown(context.Background())
				t.Fatalf("Setup with %s=%s: no error", tt.key, tt.value)
			}
			if !strings.Contains(err.Error(), tt.key) || !strings.Contains(err.Error(), tt.value) {
				t.Errorf("error %q does not name %s and %q", err, tt.key, tt.value)
			}
		})
	}
}

// exportOne serves one request through tel and returns its exported span.
func exportOne(t *testing.T, tel *Telemetry, rcv *otlptest.Receiver) otlptest.Span {
	t.Helper()
	router := chi.NewRouter()
	router.Use(tel.Middleware)
	router.Get("/ping", func(http.ResponseWriter, *http.Request) {})
	serve(t, router, http.MethodGet, "/ping", nil)
	return waitNamed(t, rcv, "GET /ping")
}

func TestSetupResource(t *testing.T) {
	tel, rcv := traced(t)
	s := exportOne(t, tel, rcv)
	if got, want := s.Resource["service.name"], DefaultServiceName; got != want {
		t.Errorf("service.name = %q, want %q", got, want)
	}
	if got, want := s.Resource["service.version"], "1.2.3"; got != want {
		t.Errorf("service.version = %q, want %q", got, want)
	}
	if got := s.Resource["telemetry.sdk.language"]; got != "go" {
		t.Errorf("telemetry.sdk.language = %q, want go", got)
	}
}

func TestSetupResourceFromEnv(t *testing.T) {
	cleanEnv(t)
	rcv := otlptest.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.Endpoint())
	t.Setenv("OTEL_SERVICE_NAME", "emq-eu")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment.name=staging")
	s := exportOne(t, setup(t), rcv)
	if got := s.Resource["service.name"]; got != "emq-eu" {
		t.Errorf("service.name = %q, want emq-eu", got)
	}
	if got := s.Resource["deployment.environment.name"]; got != "staging" {
		t.Errorf("deployment.environment.name = %q, want staging", got)
	}
}

func TestSetupTracesEndpointAndHeaders(t *testing.T) {
	cleanEnv(t)
	rcv := otlptest.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", rcv.Endpoint()+"/v1/traces")
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20t0ken")
	exportOne(t, setup(t), rcv)
	if got := rcv.Header("Authorization"); got != "Bearer t0ken" {
		t.Errorf("Authorization on the export = %q, want %q", got, "Bearer t0ken")
	}
}

func TestSetupTracesProtocolWins(t *testing.T) {
	cleanEnv(t)
	rcv := otlptest.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.Endpoint())
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "bogus")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf")
	exportOne(t, setup(t), rcv)
}

func TestSetupGRPC(t *testing.T) {
	cleanEnv(t)
	rcv := otlptest.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.GRPCEndpoint())
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-tenant=acme")
	s := exportOne(t, setup(t), rcv)
	if s.Resource["service.name"] != DefaultServiceName {
		t.Errorf("service.name = %q over gRPC, want %q", s.Resource["service.name"], DefaultServiceName)
	}
	if got := rcv.Header("x-tenant"); got != "acme" {
		t.Errorf("x-tenant metadata = %q, want acme", got)
	}
}

func TestShutdownFlushes(t *testing.T) {
	cleanEnv(t)
	rcv := otlptest.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.Endpoint())
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "600000") // ten minutes: only Shutdown exports
	tel, err := Setup(context.Background(), "1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	router := chi.NewRouter()
	router.Use(tel.Middleware)
	router.Get("/ping", func(http.ResponseWriter, *http.Request) {})
	serve(t, router, http.MethodGet, "/ping", nil)
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if got := otlptest.Named(rcv.Spans(), "GET /ping"); len(got) != 1 {
		t.Fatalf("after Shutdown the receiver holds %d spans GET /ping, want 1", len(got))
	}
}

func TestOffAllocatesNothing(t *testing.T) {
	ctx := context.Background()
	h := http.Header{}
	for name, tel := range map[string]*Telemetry{"nil": nil, "zero": {}} {
		t.Run(name, func(t *testing.T) {
			allocs := testing.AllocsPerRun(100, func() {
				c, end := StartScript(ctx, "claim")
				end(nil)
				c, end = tel.StartDelivery(c, callerHeader, "q", "j")
				end(nil)
				tel.Inject(c, h)
				_ = tel.Middleware(http.NotFoundHandler())
			})
			if allocs != 0 {
				t.Errorf("off: %v allocations per call, want 0", allocs)
			}
			if c, _ := StartScript(ctx, "claim"); c != ctx {
				t.Error("off: StartScript returned a new context")
			}
			if len(h) != 0 {
				t.Errorf("off: Inject set headers %v", h)
			}
		})
	}
}

func TestSetupCompression(t *testing.T) {
	cleanEnv(t)
	rcv := otlptest.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.Endpoint())
	t.Setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")
	exportOne(t, setup(t), rcv)
	if got := rcv.Header("Content-Encoding"); got != "gzip" {
		t.Errorf("Content-Encoding of the export = %q, want gzip", got)
	}
}
