package otlptest

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// decode flattens an export request into its spans.
func decode(req *coltracepb.ExportTraceServiceRequest) []Span {
	var out []Span
	for _, rs := range req.GetResourceSpans() {
		res := attrs(rs.GetResource().GetAttributes())
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				out = append(out, span(s, res))
			}
		}
	}
	return out
}

// span converts one protobuf span.
func span(s *tracepb.Span, res map[string]string) Span {
	return Span{
		Name:          s.GetName(),
		TraceID:       hex.EncodeToString(s.GetTraceId()),
		SpanID:        hex.EncodeToString(s.GetSpanId()),
		ParentSpanID:  hex.EncodeToString(s.GetParentSpanId()),
		Kind:          trace.SpanKind(s.GetKind()), // the two enums number kinds alike
		Attributes:    attrs(s.GetAttributes()),
		Resource:      res,
		Status:        status(s.GetStatus().GetCode()),
		StatusMessage: s.GetStatus().GetMessage(),
	}
}

// status maps OTLP's status code to the API's, which numbers them apart.
func status(c tracepb.Status_StatusCode) codes.Code {
	switch c {
	case tracepb.Status_STATUS_CODE_OK:
		return codes.Ok
	case tracepb.Status_STATUS_CODE_ERROR:
		return codes.Error
	default:
		return codes.Unset
	}
}

// attrs renders attributes as strings, the form tests compare against.
func attrs(kvs []*commonpb.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[kv.GetKey()] = value(kv.GetValue())
	}
	return m
}

// value renders one attribute value: scalars as Go formats them, arrays as
// "[a b]".
func value(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue)
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	case *commonpb.AnyValue_ArrayValue:
		parts := make([]string, 0, len(x.ArrayValue.GetValues()))
		for _, e := range x.ArrayValue.GetValues() {
			parts = append(parts, value(e))
		}
		return "[" + strings.Join(parts, " ") + "]"
	default:
		return fmt.Sprint(v.GetValue())
	}
}

// describe lists spans one a line for a failure message.
func describe(spans []Span) string {
	if len(spans) == 0 {
		return "none"
	}
	var b strings.Builder
	for _, s := range spans {
		fmt.Fprintf(&b, "\n\t%q trace=%s span=%s parent=%s kind=%v status=%v attrs=%v",
			s.Name, s.TraceID, s.SpanID, s.ParentSpanID, s.Kind, s.Status, s.Attributes)
	}
	return b.String()
}
