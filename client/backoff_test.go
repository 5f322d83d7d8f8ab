package client_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/client"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

// flakyProxy stands in front of the service and fails the first calls:
// claim 1 with a 503 and Retry-After: 1, claim 2 with a bare 503, claim 3
// with a dropped connection, complete 1 with a 503. It records when each
// claim came.
type flakyProxy struct {
	next *httputil.ReverseProxy

	mu        sync.Mutex
	claims    []time.Time
	completes int
}

// newFlakyProxy starts a flakyProxy in front of target and returns it
// with its URL.
func newFlakyProxy(tb testing.TB, target string) (*flakyProxy, string) {
	tb.Helper()
	u, err := url.Parse(target)
	if err != nil {
		tb.Fatal(err)
	}
	p := &flakyProxy{next: httputil.NewSingleHostReverseProxy(u)}
	srv := httptest.NewServer(p)
	tb.Cleanup(srv.Close)
	return p, srv.URL
}

func (p *flakyProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	claim, complete := 0, 0
	switch {
	case strings.HasSuffix(r.URL.Path, "/claim"):
		p.claims = append(p.claims, time.Now())
		claim = len(p.claims)
	case strings.HasSuffix(r.URL.Path, "/complete"):
		p.completes++
		complete = p.completes
	}
	p.mu.Unlock()
	switch {
	case claim == 1:
		w.Header().Set("Retry-After", "1")
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"status":503,"code":"EMQUNAVAILABLE","title":"Redis unavailable","detail":"retry later"}`))
	case claim == 2 || complete == 1:
		http.Error(w, "service restarting", http.StatusServiceUnavailable)
	case claim == 3:
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close() // a connection error: no answer at all
		}
	default:
		p.next.ServeHTTP(w, r)
	}
}

func TestWorkBacksOffAndRetries(t *testing.T) {
	t.Parallel()
	q := redistest.Queue(t)
	direct := newClient(t)
	enqueue(t, direct, q, client.EnqueueRequest{ID: "j"})
	proxy, proxyURL := newFlakyProxy(t, serviceURL(t))
	w := startWork(t, client.New(proxyURL), q, func(ctx context.Context, job client.Job) (any, error) {
		return "through", nil
	}, fast...)
	job := waitState(t, direct, q, "j", client.StateCompleted)
	if err := w.stop(); err != nil {
		t.Fatal(err)
	}
	if string(job.Result) != `"through"` || job.Attempts != 1 {
		t.Fatalf("job %+v, want completed on its first attempt", job)
	}
	proxy.mu.Lock()
	defer proxy.mu.Unlock()
	if len(proxy.claims) < 4 || proxy.completes < 2 {
		t.Fatalf("%d claims and %d completes reached the proxy, want at least 4 and 2", len(proxy.claims), proxy.completes)
	}
	// Lower bounds only: Retry-After's 1 s, then 0.5 s, then 1 s (doubled).
	for i, want := range []time.Duration{time.Second, 500 * time.Millisecond, time.Second} {
		if gap := proxy.claims[i+1].Sub(proxy.claims[i]); gap < want-50*time.Millisecond {
			t.Errorf("claim %d came %v after claim %d, want at least %v", i+2, gap, i+1, want)
		}
	}
}
