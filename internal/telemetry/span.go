package telemetry

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// noEnd is the end function of a span that was not started. It is one
// shared value, so that handing it out allocates nothing.
var noEnd = func(error) {}

// StartScript starts a client span "emq.script <script>" for one call of a
// Lua script, as a child of the span in ctx, and returns the context that
// carries it and the function that ends it. Pass the call's error to that
// function: an error other than redis.Nil (a script's "nothing there")
// marks the span as failed.
//
// It is a function of ctx, not a method of Telemetry: the span in ctx (a
// request's, a delivery's) knows the tracer provider that started it, so
// the script runner, which every service shares, needs no Telemetry of its
// own. A call outside any recorded span (a reaper's sweep, a scheduler's
// tick, any call when tracing is off) starts no span: each would be a trace
// of its own, and a loop that runs every second would bury the request
// traces under them. StartScript then returns ctx and a shared no-op,
// allocating nothing.
func StartScript(ctx context.Context, script string) (context.Context, func(error)) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, noEnd
	}
	ctx, span := parent.TracerProvider().Tracer(instrumentationName).Start(ctx, "emq.script "+script,
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(semconv.DBSystemNameRedis, semconv.DBOperationName(script)),
	)
	return ctx, endFunc(span)
}

// StartDelivery starts a client span "emq.push <queue>" for one push
// delivery, the POST of job jobID to its queue's webhook. Its parent is the
// trace the producer sent with the job, traceparent, when that is a valid
// W3C traceparent (see ValidTraceparent), and the span in ctx otherwise, so
// that a delivery shows up in the trace of the request that enqueued it.
// Call Inject with the returned context to pass the trace on to the webhook,
// and the returned function with the delivery's error to end the span. When
// tracing is off it returns ctx and a shared no-op.
func (t *Telemetry) StartDelivery(ctx context.Context, traceparent, queue, jobID string) (context.Context, func(error)) {
	if !t.Enabled() {
		return ctx, noEnd
	}
	if ValidTraceparent(traceparent) {
		carrier := propagation.MapCarrier{"traceparent": traceparent}
		ctx = propagation.TraceContext{}.Extract(ctx, carrier)
	}
	ctx, span := t.tracer.Start(ctx, "emq.push "+queue,
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			semconv.MessagingOperationName("push"),
			semconv.MessagingDestinationName(queue),
			semconv.MessagingMessageID(jobID),
		),
	)
	return ctx, endFunc(span)
}

// endFunc returns the function that records err on span and ends it.
func endFunc(span trace.Span) func(error) {
	return func(err error) {
		if err != nil && !errors.Is(err, redis.Nil) {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}
}
