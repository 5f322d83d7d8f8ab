package otlptest

import (
	"compress/gzip"
	"context"
	"io"
	"net/http"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
)

// protobufType is the content type of OTLP/HTTP's binary encoding, the one
// the Go exporter sends.
const protobufType = "application/x-protobuf"

// handleTraces serves POST /v1/traces as the OTLP/HTTP specification says: a
// protobuf ExportTraceServiceRequest, gzip-compressed or not, answered with
// an empty ExportTraceServiceResponse.
func (r *Receiver) handleTraces(w http.ResponseWriter, req *http.Request) {
	if req.Header.Get("Content-Type") != protobufType {
		http.Error(w, "otlptest: only "+protobufType+" is accepted", http.StatusUnsupportedMediaType)
		return
	}
	body, err := readBody(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var export coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &export); err != nil {
		http.Error(w, "otlptest: "+err.Error(), http.StatusBadRequest)
		return
	}
	r.keep(&export, req.Header.Clone())
	answer, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", protobufType)
	w.Write(answer)
}

// readBody reads the request body, inflating it when it is gzip-encoded.
func readBody(req *http.Request) ([]byte, error) {
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			return nil, err
		}
		defer zr.Close()
		body = zr
	}
	return io.ReadAll(body)
}

// traceService is the OTLP/gRPC TraceService, storing into its Receiver.
type traceService struct {
	coltracepb.UnimplementedTraceServiceServer
	r *Receiver
}

// Export keeps the spans of one gRPC export request.
func (s *traceService) Export(ctx context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	h := http.Header{}
	md, _ := metadata.FromIncomingContext(ctx)
	for k, vs := range md {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	s.r.keep(req, h)
	return &coltracepb.ExportTraceServiceResponse{}, nil
}
