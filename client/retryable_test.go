package client_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/client"
)

// sent wraps err as net/http and the client do: a *url.Error under the
// client's own prefix.
func sent(err error) error {
	return fmt.Errorf("client: %w", &url.Error{Op: "Post", URL: "http://127.0.0.1:8080/queues/q/claim", Err: err})
}

func dialed(err error) error { return &net.OpError{Op: "dial", Net: "tcp", Err: err} }

func TestRetryable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"503", &client.Error{Status: http.StatusServiceUnavailable}, true},
		{"502", &client.Error{Status: http.StatusBadGateway}, true},
		{"504", &client.Error{Status: http.StatusGatewayTimeout}, true},
		{"429 EMQBUSY", &client.Error{Status: http.StatusTooManyRequests, Code: "EMQBUSY", RetryAfter: time.Second}, true},
		{"500", &client.Error{Status: http.StatusInternalServerError}, false},
		{"409", &client.Error{Status: http.StatusConflict, Code: "EMQSTALE"}, false},
		{"connection refused", sent(dialed(os.NewSyscallError("connect", syscall.ECONNREFUSED))), true},
		{"connection reset", sent(&net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}), true},
		{"broken pipe", sent(&net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.EPIPE)}), true},
		{"reset under a wrapper", sent(fmt.Errorf("net/http: HTTP/1.x transport connection broken: %w", syscall.ECONNRESET)), true},
		{"EOF", sent(io.EOF), true},
		{"unexpected EOF", sent(io.ErrUnexpectedEOF), true},
		{"deadline", sent(context.DeadlineExceeded), true},
		{"deadline under a wrapper", sent(fmt.Errorf("reading: %w", context.DeadlineExceeded)), true},
		{"joined", sent(errors.Join(errors.New("other"), io.ErrUnexpectedEOF)), true},
		{"cancelled", sent(context.Canceled), false},
		{"DNS timeout", sent(dialed(&net.DNSError{Err: "i/o timeout", Name: "emq", IsTimeout: true})), true},
		{"DNS server failure", sent(dialed(&net.DNSError{Err: "server misbehaving", Name: "emq", IsTemporary: true})), true},
		{"DNS no such host", sent(dialed(&net.DNSError{Err: "no such host", Name: "emq", IsNotFound: true})), false},
		{"unsupported scheme", sent(errors.New(`unsupported protocol scheme "localhost"`)), false},
		{"unknown authority", sent(&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}), false},
		{"wrong host name", sent(x509.HostnameError{Host: "emq"}), false},
		{"remote TLS alert", sent(&net.OpError{Op: "remote error", Err: tls.AlertError(42)}), false},
		{"a plain error", errors.New("boom"), false},
	} {
		if got := client.Retryable(tc.err); got != tc.want {
			t.Errorf("%s: Retryable(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

func TestUntrustedCertificateIsNotRetried(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	defer srv.Close()
	c := mustNew(t, srv.URL) // the system's roots do not trust httptest's certificate
	_, err := c.Job(context.Background(), "q", "j")
	var cert *tls.CertificateVerificationError
	if !errors.As(err, &cert) || client.Retryable(err) {
		t.Fatalf("a call to a server whose certificate is not trusted: %v; want a certificate error, not retryable", err)
	}
	// Work gives up at once instead of backing off for ever (or until this
	// test's deadline, when it would return nil).
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = c.Work(ctx, "q", func(ctx context.Context, job client.Job) (any, error) {
		return nil, nil
	}, fast...)
	if !errors.As(err, &cert) {
		t.Fatalf("Work against an untrusted certificate returned %v, want the certificate error", err)
	}
	trusted := mustNew(t, srv.URL, client.WithHTTPClient(srv.Client()))
	var e *client.Error
	if _, err := trusted.Job(context.Background(), "q", "j"); !errors.As(err, &e) || e.Status != http.StatusNotFound {
		t.Fatalf("a call with the server's certificate trusted: %v, want its 404", err)
	}
}

func TestHTTPSToAnHTTPServerIsNotRetried(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	_, err := mustNew(t, "https://"+srv.Listener.Addr().String()).Job(context.Background(), "q", "j")
	if err == nil || client.Retryable(err) {
		t.Fatalf("https:// to a plain HTTP server: %v, want an error not worth retrying", err)
	}
}
