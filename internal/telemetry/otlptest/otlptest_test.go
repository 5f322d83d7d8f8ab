package otlptest

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// request is an export of one span, as an exporter would send it.
func request(t *testing.T) []byte {
	t.Helper()
	str := func(k, v string) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
	}
	req := &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{str("service.name", "svc")}},
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{
			Name:       "GET /x",
			TraceId:    bytes.Repeat([]byte{0xab}, 16),
			SpanId:     bytes.Repeat([]byte{0x01}, 8),
			Kind:       tracepb.Span_SPAN_KIND_SERVER,
			Attributes: []*commonpb.KeyValue{{Key: "n", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: 7}}}},
			Status:     &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: "bad"},
		}}}},
	}}}
	b, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// post sends body to the receiver and returns the answer's status.
func post(t *testing.T, r *Receiver, contentType, encoding string, body []byte) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, r.Endpoint()+"/v1/traces", bytes.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	if encoding != "" {
		req.Header.Set("Content-Encoding", encoding)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestReceiverGzip(t *testing.T) {
	r := Start(t)
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	zw.Write(request(t))
	zw.Close()
	if got := post(t, r, protobufType, "gzip", zipped.Bytes()); got != http.StatusOK {
		t.Fatalf("status = %d, want 200", got)
	}
	s := r.WaitFor(t, func(s []Span) bool { return len(s) == 1 }, time.Second)[0]
	want := Span{Name: "GET /x", TraceID: "abababababababababababababababab", SpanID: "0101010101010101",
		Kind: trace.SpanKindServer, Status: codes.Error, StatusMessage: "bad"}
	if s.Name != want.Name || s.TraceID != want.TraceID || s.SpanID != want.SpanID || s.ParentSpanID != "" ||
		s.Kind != want.Kind || s.Status != want.Status || s.StatusMessage != want.StatusMessage {
		t.Errorf("span = %+v, want %+v", s, want)
	}
	if s.Attributes["n"] != "7" || s.Resource["service.name"] != "svc" {
		t.Errorf("attributes %v resource %v, want n=7 and service.name=svc", s.Attributes, s.Resource)
	}
}

func TestReceiverRejects(t *testing.T) {
	r := Start(t)
	if got := post(t, r, "application/json", "", []byte("{}")); got != http.StatusUnsupportedMediaType {
		t.Errorf("JSON export: status %d, want 415", got)
	}
	if got := post(t, r, protobufType, "", []byte{0xff, 0xff}); got != http.StatusBadRequest {
		t.Errorf("garbage export: status %d, want 400", got)
	}
	if n := len(r.Spans()); n != 0 {
		t.Errorf("kept %d spans from rejected exports", n)
	}
}
