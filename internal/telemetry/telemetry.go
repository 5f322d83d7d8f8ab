// Package telemetry exports the service's traces over OTLP when the standard
// OpenTelemetry environment asks for it, and costs nothing when it does not.
//
// Tracing is on when OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set, unless OTEL_SDK_DISABLED=true or
// OTEL_TRACES_EXPORTER=none. The OTEL_* variables are a cross-language
// standard that the OpenTelemetry SDK reads itself (the exporter's headers,
// timeout and TLS, the batch processor's OTEL_BSP_*, the sampler's
// OTEL_TRACES_SAMPLER*, the resource's OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES), so this package reads the few that decide
// whether to start it rather than have cmd/api copy them into a config.
//
// Nothing here touches the OpenTelemetry globals: the tracer provider and the
// propagator live in the *Telemetry that Setup returns.
package telemetry

import (
	"context"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// Variables are the standard OpenTelemetry variables the service's tracing
// honours, as docs/observability.md lists them: the SDK and its exporters
// read them from the process's environment.
var Variables = []string{
	"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER",
	"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
	"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
	"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
	"OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_EXPORTER_OTLP_COMPRESSION",
	"OTEL_EXPORTER_OTLP_CERTIFICATE", "OTEL_EXPORTER_OTLP_INSECURE",
	"OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES",
	"OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG",
	"OTEL_BSP_SCHEDULE_DELAY", "OTEL_BSP_MAX_QUEUE_SIZE", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE",
}

// DefaultServiceName is the service.name of the exported resource when
// neither OTEL_SERVICE_NAME nor OTEL_RESOURCE_ATTRIBUTES names one.
const DefaultServiceName = "echo_mq"

// instrumentationName names this package as the tracer's instrumentation
// scope, as OpenTelemetry asks of an instrumentation library.
const instrumentationName = "github.com/echo-mq/echo_mq/internal/telemetry"

// Telemetry starts the service's spans. Its zero value, and a nil
// *Telemetry, is tracing turned off: every method is then a no-op that
// allocates nothing, so callers never check Enabled before calling.
type Telemetry struct {
	provider *sdktrace.TracerProvider
	tracer   trace.Tracer
	prop     propagation.TextMapPropagator
}

// Setup starts tracing when the environment asks for it (see the package
// doc) and returns a Telemetry that is off otherwise. version is the
// exported service.version. An unsupported OTEL_EXPORTER_OTLP_PROTOCOL,
// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or OTEL_TRACES_EXPORTER, or a variable
// the SDK cannot parse, is an error, so a misspelt setting fails the start
// rather than silently dropping every trace.
func Setup(ctx context.Context, version string) (*Telemetry, error) {
	on, err := wanted()
	if err != nil || !on {
		return &Telemetry{}, err
	}
	exp, err := newExporter(ctx)
	if err != nil {
		return nil, err
	}
	res, err := newResource(ctx, version)
	if err != nil {
		return nil, err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &Telemetry{
		provider: tp,
		tracer:   tp.Tracer(instrumentationName, trace.WithInstrumentationVersion(version)),
		prop:     propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
	}, nil
}

// Enabled reports whether spans are recorded and exported.
func (t *Telemetry) Enabled() bool {
	return t != nil && t.provider != nil
}

// Shutdown exports the spans still buffered and stops the exporter. Call it
// once, after the HTTP server and the background loops have stopped, with a
// context that bounds how long the last export may take.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if !t.Enabled() {
		return nil
	}
	if err := t.provider.Shutdown(ctx); err != nil {
		return fmt.Errorf("telemetry shutdown: %w", err)
	}
	return nil
}

// wanted reports whether the environment turns tracing on.
func wanted() (bool, error) {
	if strings.EqualFold(strings.TrimSpace(os.Getenv("OTEL_SDK_DISABLED")), "true") {
		return false, nil
	}
	switch exp := strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER")); exp {
	case "none":
		return false, nil
	case "", "otlp":
	default:
		return false, fmt.Errorf("telemetry: OTEL_TRACES_EXPORTER %q is not supported (want otlp or none)", exp)
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" ||
		os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "", nil
}

// newExporter makes the OTLP exporter of the configured protocol. Each
// exporter reads the rest of its OTEL_EXPORTER_OTLP_* settings itself.
func newExporter(ctx context.Context) (sdktrace.SpanExporter, error) {
	name, proto := protocol()
	switch proto {
	case "", "http/protobuf":
		return otlptracehttp.New(ctx)
	case "grpc":
		return otlptracegrpc.New(ctx)
	default:
		return nil, fmt.Errorf("telemetry: %s %q is not supported (want http/protobuf or grpc)", name, proto)
	}
}

// protocol returns the OTLP protocol asked for and the variable that asked,
// the traces-specific one first as the specification orders them.
func protocol() (name, value string) {
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if v := strings.TrimSpace(os.Getenv(name)); v != "" {
			return name, v
		}
	}
	return "", ""
}

// newResource describes this process: service.name DefaultServiceName and
// service.version version, which OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES override, plus the SDK's own attributes.
func newResource(ctx context.Context, version string) (*resource.Resource, error) {
	res, err := resource.New(ctx,
		resource.WithSchemaURL(semconv.SchemaURL),
		resource.WithAttributes(semconv.ServiceName(DefaultServiceName), semconv.ServiceVersion(version)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(),
	)
	if err != nil {
		return nil, fmt.Errorf("telemetry resource: %w", err)
	}
	return res, nil
}
