package client_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/client"
	"github.com/echo-mq/echo_mq/internal/redistest"
	"github.com/echo-mq/echo_mq/internal/servicetest"
)

// restarting is a bare 503, as a proxy in front of a restarting service
// answers: no problem body, no Retry-After.
var restarting = servicetest.Answer{Status: http.StatusServiceUnavailable, Body: "service restarting"}

func TestWorkBacksOffAndRetries(t *testing.T) {
	t.Parallel()
	q := redistest.Queue(t)
	direct := newClient(t)
	enqueue(t, direct, q, client.EnqueueRequest{ID: "j"})
	proxy := servicetest.NewFlakyProxy(t, serviceURL(t))
	proxy.Answer("/claim", servicetest.Unavailable(1), restarting, servicetest.Answer{Drop: true})
	proxy.Answer("/complete", restarting)
	w := startWork(t, mustNew(t, proxy.URL()), q, func(ctx context.Context, job client.Job) (any, error) {
		return "through", nil
	}, fast...)
	job := waitState(t, direct, q, "j", client.StateCompleted)
	if err := w.stop(); err != nil {
		t.Fatal(err)
	}
	if string(job.Result) != `"through"` || job.Attempts != 1 {
		t.Fatalf("job %+v, want completed on its first attempt", job)
	}
	claims, completes := proxy.Requests("/claim"), proxy.Requests("/complete")
	if len(claims) < 4 || len(completes) < 2 {
		t.Fatalf("%d claims and %d completes reached the proxy, want at least 4 and 2", len(claims), len(completes))
	}
	// Lower bounds only: Retry-After's 1 s, then 0.5 s, then 1 s (doubled).
	for i, want := range []time.Duration{time.Second, 500 * time.Millisecond, time.Second} {
		if gap := claims[i+1].At.Sub(claims[i].At); gap < want-50*time.Millisecond {
			t.Errorf("claim %d came %v after claim %d, want at least %v", i+2, gap, i+1, want)
		}
	}
}

// TestWorkWaitsOutABusyKey: a claim answered 429 EMQBUSY (the API key has
// its share of waiting claims) is waited out for its Retry-After and sent
// again, as a 503 is; Work does not give up on it.
func TestWorkWaitsOutABusyKey(t *testing.T) {
	t.Parallel()
	q := redistest.Queue(t)
	direct := newClient(t)
	enqueue(t, direct, q, client.EnqueueRequest{ID: "j"})
	proxy := servicetest.NewFlakyProxy(t, serviceURL(t))
	proxy.Answer("/claim", servicetest.Answer{
		Status: http.StatusTooManyRequests,
		Header: http.Header{"Content-Type": {"application/problem+json"}, "Retry-After": {"1"}},
		Body: `{"type":"https://github.com/echo-mq/echo_mq#emqbusy","title":"Too busy","status":429,` +
			`"detail":"this key has 3 long polls waiting (EMQ_MAX_WAITERS_PER_KEY); retry later","code":"EMQBUSY"}`,
	})
	w := startWork(t, mustNew(t, proxy.URL()), q, func(ctx context.Context, job client.Job) (any, error) {
		return "through", nil
	}, fast...)
	waitState(t, direct, q, "j", client.StateCompleted)
	if err := w.stop(); err != nil {
		t.Fatalf("Work returned %v, want nil: a 429 is waited out", err)
	}
	claims := proxy.Requests("/claim")
	if len(claims) < 2 {
		t.Fatalf("%d claims reached the proxy, want at least 2", len(claims))
	}
	// A lower bound only: Retry-After's 1 s.
	if gap := claims[1].At.Sub(claims[0].At); gap < time.Second-50*time.Millisecond {
		t.Errorf("the claim after the 429 came %v after it, want at least Retry-After's 1 s", gap)
	}
}
