package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/echo-mq/echo_mq/client"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

func TestCompleteAndFailMinimal(t *testing.T) {
	t.Parallel()
	c, q, ctx := newClient(t), redistest.Queue(t), context.Background()
	payload := map[string]string{"blob": strings.Repeat("x", 4096)}
	enqueue(t, c, q, client.EnqueueRequest{ID: "c", Payload: payload})
	job := claimOne(t, c, q)
	req := client.CompleteRequest{Token: job.Token, Result: map[string]bool{"ok": true}, Minimal: true}
	done, err := c.Complete(ctx, q, job.ID, req)
	if err != nil || done.ID != "c" || done.State != client.StateCompleted || done.FinishedAt.IsZero() ||
		done.Payload != nil || done.Result != nil {
		t.Fatalf("a minimal complete: %+v, %v; want the completed job without payload and result", done, err)
	}
	repeat, err := c.Complete(ctx, q, job.ID, req)
	if err != nil || repeat.State != client.StateCompleted || repeat.Payload != nil || repeat.Result != nil {
		t.Fatalf("a repeated minimal complete: %+v, %v; want it minimal again", repeat, err)
	}
	req.Minimal = false
	whole, err := c.Complete(ctx, q, job.ID, req)
	if err != nil || len(whole.Payload) < 4096 || string(whole.Result) != `{"ok":true}` {
		t.Fatalf("a repeated complete, not minimal: %+v, %v; want the payload and the result", whole, err)
	}

	enqueue(t, c, q, client.EnqueueRequest{ID: "f", Payload: payload})
	job = claimOne(t, c, q)
	failed, err := c.Fail(ctx, q, job.ID, client.FailRequest{Token: job.Token, Error: "boom", Minimal: true})
	if err != nil || failed.ID != "f" || failed.State != client.StateDelayed || failed.LastError != "boom" || failed.Payload != nil {
		t.Fatalf("a minimal fail: %+v, %v; want the delayed job without payload", failed, err)
	}
	if stored, err := c.Job(ctx, q, "f"); err != nil || len(stored.Payload) < 4096 {
		t.Fatalf("after a minimal fail the job is %+v, %v; want its payload kept", stored, err)
	}
}

// TestWorkAsksForMinimalAnswers: Work reads nothing of a finished job's
// payload and result, so its completes and fails ask to be answered
// without them.
func TestWorkAsksForMinimalAnswers(t *testing.T) {
	t.Parallel()
	target, err := url.Parse(serviceURL(t))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	prefer := map[string][]string{} // the Prefer headers of each complete and fail
	proxy := httputil.NewSingleHostReverseProxy(target)
	spy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if verb := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]; verb == "complete" || verb == "fail" {
			mu.Lock()
			prefer[verb] = append(prefer[verb], r.Header.Values("Prefer")...)
			mu.Unlock()
		}
		proxy.ServeHTTP(w, r)
	}))
	defer spy.Close()
	c, q := mustNew(t, spy.URL), redistest.Queue(t)
	enqueue(t, c, q, client.EnqueueRequest{ID: "ok", Payload: "work"})
	enqueue(t, c, q, client.EnqueueRequest{ID: "bad", Payload: "work"})
	w := startWork(t, c, q, func(ctx context.Context, job client.Job) (any, error) {
		if job.ID == "bad" {
			return nil, client.Fatal(errors.New("bad input"))
		}
		return "done", nil
	}, fast...)
	waitState(t, c, q, "ok", client.StateCompleted)
	waitState(t, c, q, "bad", client.StateDead)
	if err := w.stop(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, verb := range []string{"complete", "fail"} {
		if got := prefer[verb]; len(got) != 1 || got[0] != "return=minimal" {
			t.Errorf("Work's %s sent Prefer %q, want return=minimal once", verb, got)
		}
	}
}
