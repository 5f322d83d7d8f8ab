package telemetry

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/telemetry/otlptest"
)

// wait is how long a test waits for the batch processor to export.
const wait = 5 * time.Second

// otelVars are the variables a test starts without, so that the machine's
// own environment cannot turn tracing on or off under it.
var otelVars = []string{
	"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES",
	"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
	"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
	"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
	"OTEL_EXPORTER_OTLP_INSECURE", "OTEL_EXPORTER_OTLP_TRACES_INSECURE",
	"OTEL_EXPORTER_OTLP_COMPRESSION", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION",
	"OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG", "OTEL_BSP_SCHEDULE_DELAY",
}

// cleanEnv unsets otelVars for the test (t.Setenv restores them after), and
// sets a short batch delay so that spans are exported within milliseconds.
func cleanEnv(t *testing.T) {
	t.Helper()
	for _, k := range otelVars {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "10")
}

// setup runs Setup in the current environment and shuts the result down
// when the test ends.
func setup(t *testing.T) *Telemetry {
	t.Helper()
	tel, err := Setup(context.Background(), "1.2.3")
	if err != nil {
		t.Fatalf("Setup: %v", err)
	}
	t.Cleanup(func() {
		if err := tel.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return tel
}

// traced starts a receiver, points the OTLP/HTTP exporter at it and returns
// a Telemetry that is on.
func traced(t *testing.T) (*Telemetry, *otlptest.Receiver) {
	t.Helper()
	cleanEnv(t)
	rcv := otlptest.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.Endpoint())
	tel := setup(t)
	if !tel.Enabled() {
		t.Fatal("Enabled() = false with OTEL_EXPORTER_OTLP_ENDPOINT set")
	}
	return tel, rcv
}

// waitNamed waits for a span called name and returns the first one.
func waitNamed(t *testing.T, rcv *otlptest.Receiver, name string) otlptest.Span {
	t.Helper()
	spans := rcv.WaitFor(t, func(s []otlptest.Span) bool { return len(otlptest.Named(s, name)) > 0 }, wait)
	return otlptest.Named(spans, name)[0]
}

// Remote trace context of a caller, as a traceparent carries it.
const (
	callerTrace  = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpan   = "00f067aa0ba902b7"
	callerHeader = "00-" + callerTrace + "-" + callerSpan + "-01"
)
