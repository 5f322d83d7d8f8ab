package client

import "context"

// traceparentKey is the context key of ContextWithTraceparent's value.
type traceparentKey struct{}

// ContextWithTraceparent returns a copy of ctx that carries traceparent,
// the W3C Trace Context traceparent header of the producer's span (such
// as "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"). Every
// call made with the returned context sends it as its traceparent header,
// and the service keeps it with the jobs an Enqueue or EnqueueBatch adds
// (every job of a batch gets the same), and answers it as Job.Traceparent
// on a claim, on Job and in push deliveries, so that the worker can
// continue the producer's trace (see the package doc, "Tracing"). The
// service ignores a traceparent that is not valid; "" sends none.
//
// An http.Client given to WithHTTPClient whose transport injects trace
// context itself (such as otelhttp's) overwrites the header with its own
// span's, a child of the producer's: the trace is the same.
func ContextWithTraceparent(ctx context.Context, traceparent string) context.Context {
	return context.WithValue(ctx, traceparentKey{}, traceparent)
}

// traceparentOf is the traceparent ctx carries; "" when none.
func traceparentOf(ctx context.Context) string {
	tp, _ := ctx.Value(traceparentKey{}).(string)
	return tp
}
