package examples

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// flakyProxy stands between a worker and the service. It answers the first
// refusals claims with 503 EMQUNAVAILABLE and Retry-After: 1, as the
// service does while Redis is down, and passes everything else on.
type flakyProxy struct {
	url string

	refusals int

	mu        sync.Mutex
	claimedAt []time.Time // when each claim came in; the first refusals were refused
}

// newFlakyProxy starts a proxy to base, closed when the test ends.
func newFlakyProxy(t *testing.T, base string, refusals int) *flakyProxy {
	t.Helper()
	target, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	p := &flakyProxy{refusals: refusals}
	pass := httputil.NewSingleHostReverseProxy(target)
	// A claim cut short when the test kills the worker is not news: no log.
	pass.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(http.StatusBadGateway) }
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/claim") && p.refuse() {
			w.Header().Set("Content-Type", "application/problem+json")
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"type":"https://github.com/echo-mq/echo_mq#emqunavailable","title":"Service unavailable",` +
				`"status":503,"detail":"redis cannot be reached","code":"EMQUNAVAILABLE"}`))
			return
		}
		pass.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	p.url = srv.URL
	return p
}

// refuse records a claim and reports whether to answer it 503.
func (p *flakyProxy) refuse() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.claimedAt = append(p.claimedAt, time.Now())
	return len(p.claimedAt) <= p.refusals
}

// claims returns when each claim came in.
func (p *flakyProxy) claims() []time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]time.Time(nil), p.claimedAt...)
}
