package client_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/client"
	"github.com/echo-mq/echo_mq/internal/redistest"
	"github.com/echo-mq/echo_mq/internal/servicetest"
)

// The traceparents of the tests: a producer's span each, valid W3C
// traceparents.
const (
	traceparentOne   = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	traceparentBatch = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
)

// An enqueue's traceparent, single or batch, is kept with its jobs and
// answered on a get and a claim; a job enqueued without one has none.
func TestTraceparentKeptWithJob(t *testing.T) {
	t.Parallel()
	c, q, ctx := newClient(t), redistest.Queue(t), context.Background()
	if _, _, err := c.Enqueue(client.ContextWithTraceparent(ctx, traceparentOne), q, client.EnqueueRequest{ID: "one"}); err != nil {
		t.Fatal(err)
	}
	batch := []client.EnqueueRequest{{ID: "batch-a"}, {ID: "batch-b"}}
	if _, err := c.EnqueueBatch(client.ContextWithTraceparent(ctx, traceparentBatch), q, batch); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Enqueue(ctx, q, client.EnqueueRequest{ID: "none"}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"one": traceparentOne, "batch-a": traceparentBatch, "batch-b": traceparentBatch, "none": ""}
	for id, tp := range want {
		if j, err := c.Job(ctx, q, id); err != nil || j.Traceparent != tp {
			t.Errorf("Job %s: traceparent %q, %v; want %q", id, j.Traceparent, err, tp)
		}
	}
	jobs, err := c.Claim(ctx, q, client.ClaimRequest{Count: len(want)})
	if err != nil || len(jobs) != len(want) {
		t.Fatalf("Claim: %d jobs, %v; want %d", len(jobs), err, len(want))
	}
	for _, j := range jobs {
		if j.Traceparent != want[j.ID] {
			t.Errorf("claimed %s: traceparent %q, want %q", j.ID, j.Traceparent, want[j.ID])
		}
	}
}

// A push delivery carries its job's traceparent.
func TestTraceparentInPushDelivery(t *testing.T) {
	t.Parallel()
	svc := servicetest.Start(t, serviceBin, serviceEnv("EMQ_PUSH_ALLOW=127.0.0.1")...)
	c, q, ctx := mustNew(t, svc.URL()), redistest.Queue(t), context.Background()
	delivered := make(chan string, 1)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var j client.Job
		if err := json.Unmarshal(body, &j); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		select {
		case delivered <- j.Traceparent:
		default:
		}
	}))
	t.Cleanup(receiver.Close)
	if _, err := c.PutPush(ctx, q, client.PushTarget{URL: receiver.URL}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Enqueue(client.ContextWithTraceparent(ctx, traceparentOne), q, client.EnqueueRequest{}); err != nil {
		t.Fatal(err)
	}
	select {
	case tp := <-delivered:
		if tp != traceparentOne {
			t.Fatalf("delivered traceparent %q, want %q", tp, traceparentOne)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no delivery within 10 s")
	}
}
