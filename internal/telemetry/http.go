package telemetry

import (
	"context"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// unmatched stands for the route pattern of a request that chi routed to no
// route, so that a scan of unknown paths makes one span name, not one each.
const unmatched = "unmatched"

// Middleware starts a server span for each request, continuing the trace of
// an incoming traceparent header, and puts it in the request's context so
// that the handlers' own spans (StartScript) become its children. The span
// is named "<METHOD> <route pattern>", as OpenTelemetry's HTTP conventions
// ask; chi knows the pattern only once it has routed, so the name is set
// after next returns. A 5xx answer marks the span as an error.
//
// Middleware works both inside a chi router (r.Use) and around one. When
// tracing is off it returns next itself.
func (t *Telemetry) Middleware(next http.Handler) http.Handler {
	if !t.Enabled() {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.serveTraced(next, w, r)
	})
}

// serveTraced serves one request inside its server span.
func (t *Telemetry) serveTraced(next http.Handler, w http.ResponseWriter, r *http.Request) {
	ctx := t.prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	rctx := chi.RouteContext(ctx)
	if rctx == nil {
		// Around a router: give chi the routing context it would make, so
		// that the pattern it matched can be read back here.
		rctx = chi.NewRouteContext()
		ctx = context.WithValue(ctx, chi.RouteCtxKey, rctx)
	}
	method, methodAttrs := methodOf(r.Method)
	ctx, span := t.tracer.Start(ctx, method,
		trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(methodAttrs...),
		trace.WithAttributes(semconv.URLPath(r.URL.Path), semconv.URLScheme(scheme(r))),
	)
	ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
	defer func() {
		if v := recover(); v != nil {
			endServer(span, method, rctx.RoutePattern(), http.StatusInternalServerError)
			panic(v)
		}
	}()
	next.ServeHTTP(ww, r.WithContext(ctx))
	endServer(span, method, rctx.RoutePattern(), ww.Status())
}

// endServer names the server span after its route and records the answer.
func endServer(span trace.Span, method, pattern string, status int) {
	if pattern == "" {
		span.SetName(method + " " + unmatched)
	} else {
		span.SetName(method + " " + pattern)
		span.SetAttributes(semconv.HTTPRoute(pattern))
	}
	if status == 0 {
		status = http.StatusOK // the handler wrote nothing: net/http sends 200
	}
	span.SetAttributes(semconv.HTTPResponseStatusCode(status))
	if status >= 500 {
		span.SetAttributes(semconv.ErrorTypeKey.String(strconv.Itoa(status)))
		span.SetStatus(codes.Error, http.StatusText(status))
	}
	span.End()
}

// knownMethods are the request methods OpenTelemetry names as they are; any
// other is recorded as "_OTHER" so that a client cannot grow the set of span
// names and attribute values without bound.
var knownMethods = map[string]attribute.KeyValue{
	http.MethodConnect: semconv.HTTPRequestMethodConnect,
	http.MethodDelete:  semconv.HTTPRequestMethodDelete,
	http.MethodGet:     semconv.HTTPRequestMethodGet,
	http.MethodHead:    semconv.HTTPRequestMethodHead,
	http.MethodOptions: semconv.HTTPRequestMethodOptions,
	http.MethodPatch:   semconv.HTTPRequestMethodPatch,
	http.MethodPost:    semconv.HTTPRequestMethodPost,
	http.MethodPut:     semconv.HTTPRequestMethodPut,
	http.MethodTrace:   semconv.HTTPRequestMethodTrace,
}

// methodOf returns the method as a span name starts with it and its
// attributes: "HTTP" with http.request.method_original for an unknown one.
func methodOf(m string) (string, []attribute.KeyValue) {
	if kv, ok := knownMethods[m]; ok {
		return m, []attribute.KeyValue{kv}
	}
	return "HTTP", []attribute.KeyValue{semconv.HTTPRequestMethodOther, semconv.HTTPRequestMethodOriginal(m)}
}

// scheme is the URL scheme the request came in on.
func scheme(r *http.Request) string {
	if r.TLS != nil {
		return "https"
	}
	return "http"
}

// Inject puts the trace context of ctx (traceparent, and baggage when there
// is some) on the headers of an outgoing request, so that the receiver can
// continue the trace. It does nothing when tracing is off.
func (t *Telemetry) Inject(ctx context.Context, h http.Header) {
	if !t.Enabled() {
		return
	}
	t.prop.Inject(ctx, propagation.HeaderCarrier(h))
}
