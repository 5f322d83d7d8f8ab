package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// callerContext is a context carrying the caller's remote span.
func callerContext(t *testing.T) context.Context {
	t.Helper()
	tid, _ := trace.TraceIDFromHex(callerTrace)
	sid, _ := trace.SpanIDFromHex(callerSpan)
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true})
	return trace.ContextWithRemoteSpanContext(context.Background(), sc)
}

func TestStartScriptEnd(t *testing.T) {
	tests := []struct {
		name    string
		err     error
		status  codes.Code
		message string
	}{
		{"ok", nil, codes.Unset, ""},
		{"nil reply is no failure", fmt.Errorf("claim: %w", redis.Nil), codes.Unset, ""},
		{"error", errors.New("EMQSTALE lease"), codes.Error, "EMQSTALE lease"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tel, rcv := traced(t)
			ctx, request := tel.tracer.Start(callerContext(t), "request")
			_, end := StartScript(ctx, "extend_lease")
			end(tt.err)
			request.End()
			s := waitNamed(t, rcv, "emq.script extend_lease")
			if s.Status != tt.status || s.StatusMessage != tt.message {
				t.Errorf("status %v %q, want %v %q", s.Status, s.StatusMessage, tt.status, tt.message)
			}
			if want := request.SpanContext().SpanID().String(); s.TraceID != callerTrace || s.ParentSpanID != want {
				t.Errorf("trace/parent = %s/%s, want %s/%s", s.TraceID, s.ParentSpanID, callerTrace, want)
			}
		})
	}
}

// TestStartScriptOutsideTrace: without a recorded span in ctx (none at
// all, or only a caller's remote one) a script starts no span.
func TestStartScriptOutsideTrace(t *testing.T) {
	tel, rcv := traced(t)
	for _, ctx := range []context.Context{context.Background(), callerContext(t)} {
		allocs := testing.AllocsPerRun(100, func() {
			_, end := StartScript(ctx, "sweep")
			end(nil)
		})
		if allocs != 0 {
			t.Errorf("StartScript outside a trace: %v allocations, want 0", allocs)
		}
		if c, _ := StartScript(ctx, "sweep"); c != ctx {
			t.Error("StartScript outside a trace returned a new context")
		}
	}
	exportOne(t, tel, rcv) // a span sent after any sweep span would be
	if got := len(rcv.Spans()); got != 1 {
		t.Errorf("receiver holds %d spans, want only the request's: %v", got, rcv.Spans())
	}
}

func TestStartDeliveryParentsOnTraceparent(t *testing.T) {
	tel, rcv := traced(t)
	ctx, end := tel.StartDelivery(context.Background(), callerHeader, "emails", "job-7")
	h := http.Header{}
	tel.Inject(ctx, h)
	end(errors.New("webhook answered 502"))

	s := waitNamed(t, rcv, "emq.push emails")
	if s.TraceID != callerTrace || s.ParentSpanID != callerSpan {
		t.Errorf("trace/parent = %s/%s, want %s/%s", s.TraceID, s.ParentSpanID, callerTrace, callerSpan)
	}
	if s.Kind != trace.SpanKindClient || s.Status != codes.Error {
		t.Errorf("kind %v status %v, want client and error", s.Kind, s.Status)
	}
	wantAttrs(t, s, map[string]string{"messaging.destination.name": "emails", "messaging.message.id": "job-7"})
	if got, want := h.Get("Traceparent"), "00-"+callerTrace+"-"+s.SpanID+"-01"; got != want {
		t.Errorf("injected traceparent = %q, want %q", got, want)
	}
}

func TestStartDeliveryInvalidTraceparent(t *testing.T) {
	tests := []struct {
		name       string
		ctx        func(*testing.T) context.Context
		wantTrace  string
		wantParent string
	}{
		{"keeps the span in ctx", callerContext, callerTrace, callerSpan},
		{"or starts a root", func(*testing.T) context.Context { return context.Background() }, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tel, rcv := traced(t)
			_, end := tel.StartDelivery(tt.ctx(t), "00-"+callerTrace+"-"+callerSpan, "q", "j")
			end(nil)
			s := waitNamed(t, rcv, "emq.push q")
			if s.ParentSpanID != tt.wantParent || (tt.wantTrace != "" && s.TraceID != tt.wantTrace) {
				t.Errorf("trace/parent = %s/%q, want %s/%q", s.TraceID, s.ParentSpanID, tt.wantTrace, tt.wantParent)
			}
		})
	}
}

func TestStartDeliveryUnsampledParent(t *testing.T) {
	tel, rcv := traced(t)
	_, end := tel.StartDelivery(context.Background(), "00-"+callerTrace+"-"+callerSpan+"-00", "q", "j")
	end(nil)
	exportOne(t, tel, rcv)
	for _, s := range rcv.Spans() {
		if s.TraceID == callerTrace {
			t.Errorf("exported %q of a trace its producer did not sample", s.Name)
		}
	}
}
