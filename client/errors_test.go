package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/client"
	"github.com/echo-mq/echo_mq/internal/redistest"
	"github.com/echo-mq/echo_mq/internal/servicetest"
)

func TestStaleTokenIsErrStale(t *testing.T) {
	t.Parallel()
	c, q, ctx := newClient(t), redistest.Queue(t), context.Background()
	enqueue(t, c, q, client.EnqueueRequest{ID: "j"})
	job := claimOne(t, c, q)
	_, err := c.Complete(ctx, q, job.ID, client.CompleteRequest{Token: job.Token + 1})
	if !errors.Is(err, client.ErrStale) || errors.Is(err, client.ErrGone) || client.Retryable(err) {
		t.Fatalf("complete with another token: %v, want ErrStale only, not retryable", err)
	}
	var e *client.Error
	if !errors.As(err, &e) || e.Status != http.StatusConflict || e.Code != "EMQSTALE" || e.Title == "" || e.Detail == "" {
		t.Fatalf("complete with another token: %#v, want a 409 EMQSTALE problem", e)
	}
	if !strings.HasPrefix(err.Error(), "client: 409 EMQSTALE: ") {
		t.Fatalf("error text %q", err)
	}
}

func TestUnknownJobIsErrGone(t *testing.T) {
	t.Parallel()
	c, q := newClient(t), redistest.Queue(t)
	_, err := c.Extend(context.Background(), q, "nobody", client.ExtendRequest{Token: 1})
	var e *client.Error
	if !errors.Is(err, client.ErrGone) || !errors.As(err, &e) || e.Status != http.StatusNotFound {
		t.Fatalf("extend of a job that does not exist: %v, want a 404 ErrGone", err)
	}
	if _, err := c.Job(context.Background(), q, "nobody"); !errors.Is(err, client.ErrGone) {
		t.Fatalf("Job of a job that does not exist: %v, want ErrGone", err)
	}
}

func TestInvalidRequestNamesItsFields(t *testing.T) {
	t.Parallel()
	c, q := newClient(t), redistest.Queue(t)
	_, err := c.Claim(context.Background(), q, client.ClaimRequest{Lease: 10 * time.Millisecond})
	var e *client.Error
	if !errors.Is(err, client.ErrInvalid) || !errors.As(err, &e) || e.Status != http.StatusBadRequest {
		t.Fatalf("claim with a 10 ms lease: %v, want a 400 ErrInvalid", err)
	}
	if !slices.ContainsFunc(e.Fields, func(f client.FieldError) bool { return f.Field == "lease_ms" && f.Message != "" }) {
		t.Fatalf("field errors %+v, want one on lease_ms", e.Fields)
	}
}

func TestAPIKeys(t *testing.T) {
	t.Parallel()
	const workerKey, readerKey = "worker-key-0123456789abcdef", "reader-key-0123456789abcdef"
	base := servicetest.Start(t, serviceBin, serviceEnv("EMQ_API_KEYS=worker:"+workerKey+",reader:"+readerKey)...).URL()
	q, ctx, req := redistest.Queue(t), context.Background(), client.EnqueueRequest{Payload: 1}
	if _, created, err := mustNew(t, base, client.WithAPIKey(workerKey)).Enqueue(ctx, q, req); err != nil || !created {
		t.Fatalf("enqueue with a worker key: created %v, %v", created, err)
	}
	if _, _, err := mustNew(t, base).Enqueue(ctx, q, req); !errors.Is(err, client.ErrUnauthorized) {
		t.Fatalf("enqueue with no key: %v, want ErrUnauthorized", err)
	}
	if _, _, err := mustNew(t, base, client.WithAPIKey(readerKey)).Enqueue(ctx, q, req); !errors.Is(err, client.ErrForbidden) {
		t.Fatalf("enqueue with a reader key: %v, want ErrForbidden", err)
	}
}

func TestErrorFromSomethingElse(t *testing.T) {
	t.Parallel()
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/claim") {
			w.Header().Set("Retry-After", "2")
			http.Error(w, "upstream is restarting", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		w.Write([]byte("<html>bad gateway</html>"))
	}))
	defer proxy.Close()
	c, ctx := mustNew(t, proxy.URL), context.Background()

	_, err := c.Claim(ctx, "q", client.ClaimRequest{})
	var e *client.Error
	if !errors.As(err, &e) || e.Status != 503 || e.Code != "" || e.RetryAfter != 2*time.Second ||
		e.Detail != "upstream is restarting" || !errors.Is(err, client.ErrUnavailable) || !client.Retryable(err) {
		t.Fatalf("a proxy's 503: %#v, want status 503, Retry-After 2 s, retryable", e)
	}
	_, err = c.Job(ctx, "q", "j")
	if !client.Retryable(err) || errors.Is(err, client.ErrUnavailable) || err.Error() != "client: 502 Bad Gateway: <html>bad gateway</html>" {
		t.Fatalf("a proxy's 502: %v, want retryable, not ErrUnavailable", err)
	}
}

func TestConnectionErrorIsRetryable(t *testing.T) {
	t.Parallel()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close() // nothing listens there any more
	c := mustNew(t, closed.URL)
	_, _, err := c.Enqueue(context.Background(), "q", client.EnqueueRequest{})
	if err == nil || !client.Retryable(err) {
		t.Fatalf("enqueue to a closed port: %v, want a retryable error", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := c.Enqueue(ctx, "q", client.EnqueueRequest{}); err == nil || client.Retryable(err) {
		t.Fatalf("enqueue with a cancelled context: %v, want an error not worth retrying", err)
	}
}

func TestRetryAfterDate(t *testing.T) {
	t.Parallel()
	at := time.Now().Add(3 * time.Second).UTC().Format(http.TimeFormat)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", at)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	_, err := mustNew(t, srv.URL).Job(context.Background(), "q", "j")
	var e *client.Error
	if !errors.As(err, &e) {
		t.Fatalf("a 503: %v, want an *Error", err)
	}
	if e.RetryAfter <= 0 || e.RetryAfter > 3*time.Second {
		t.Fatalf("Retry-After %q read as %v, want up to 3 s", at, e.RetryAfter)
	}
}
