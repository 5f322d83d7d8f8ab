package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/client"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

// RetryJobs, PromoteJobs and CleanJobs: each takes up to its limit and
// says whether more are left; a bad request is ErrInvalid.
func TestBulkActions(t *testing.T) {
	t.Parallel()
	c, q, ctx := newClient(t), redistest.Queue(t), context.Background()
	for _, id := range []string{"a", "b", "c"} {
		enqueue(t, c, q, client.EnqueueRequest{ID: id, Payload: 1})
		job := claimOne(t, c, q)
		if _, err := c.Fail(ctx, q, job.ID, client.FailRequest{Token: job.Token, Error: "boom", Fatal: true}); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []client.Bulk{{N: 2, More: true}, {N: 1}} {
		if got, err := c.RetryJobs(ctx, q, client.RetryJobsRequest{State: "dead", Limit: 2}); err != nil || got != want {
			t.Fatalf("RetryJobs: %+v, %v; want %+v", got, err, want)
		}
	}
	if j := getJob(t, c, q, "a"); j.State != "pending" || j.Attempts != 0 {
		t.Errorf("a retried job is %s with %d attempts, want pending with 0", j.State, j.Attempts)
	}

	enqueue(t, c, q, client.EnqueueRequest{ID: "later", Payload: 1, Delay: time.Hour})
	if got, err := c.PromoteJobs(ctx, q, 0); err != nil || got != (client.Bulk{N: 1}) {
		t.Fatalf("PromoteJobs: %+v, %v; want 1 promoted", got, err)
	}
	if j := getJob(t, c, q, "later"); j.State != "pending" {
		t.Errorf("the promoted job is %s, want pending", j.State)
	}

	for range 4 {
		job := claimOne(t, c, q)
		if _, err := c.Complete(ctx, q, job.ID, client.CompleteRequest{Token: job.Token}); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := c.CleanJobs(ctx, q, client.CleanJobsRequest{State: "completed", OlderThan: time.Hour}); err != nil || got != (client.Bulk{}) {
		t.Fatalf("CleanJobs older than an hour: %+v, %v; want none", got, err)
	}
	if got, err := c.CleanJobs(ctx, q, client.CleanJobsRequest{State: "completed"}); err != nil || got != (client.Bulk{N: 4}) {
		t.Fatalf("CleanJobs of all: %+v, %v; want 4 removed", got, err)
	}
	if _, err := c.Job(ctx, q, "a"); !errors.Is(err, client.ErrGone) {
		t.Errorf("a cleaned job: %v, want ErrGone", err)
	}
	if _, err := c.RetryJobs(ctx, q, client.RetryJobsRequest{State: "completed"}); !errors.Is(err, client.ErrInvalid) {
		t.Errorf("RetryJobs of completed jobs: %v, want ErrInvalid", err)
	}
	if _, err := c.PromoteJobs(ctx, q, client.MaxBulkLimit+1); !errors.Is(err, client.ErrInvalid) {
		t.Errorf("PromoteJobs past MaxBulkLimit: %v, want ErrInvalid", err)
	}
}
