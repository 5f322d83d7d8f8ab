package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/client"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

// TestEnqueueRunAt: RunAt delays a job until exactly then; one passed
// makes it pending; with Delay it is refused.
func TestEnqueueRunAt(t *testing.T) {
	t.Parallel()
	c, q, ctx := newClient(t), redistest.Queue(t), context.Background()
	at := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	job, _, err := c.Enqueue(ctx, q, client.EnqueueRequest{Payload: 1, RunAt: at.In(time.FixedZone("", -5*3600))})
	if err != nil || job.State != client.StateDelayed || !job.RunAt.Equal(at) {
		t.Fatalf("RunAt %v: %+v, %v; want delayed until then", at, job, err)
	}
	jobs, err := c.EnqueueBatch(ctx, q, []client.EnqueueRequest{{Payload: 2, RunAt: time.Now().Add(-time.Hour)}})
	if err != nil || jobs[0].State != client.StatePending || !jobs[0].RunAt.IsZero() {
		t.Fatalf("a RunAt passed: %+v, %v; want pending", jobs, err)
	}
	_, _, err = c.Enqueue(ctx, q, client.EnqueueRequest{Payload: 3, RunAt: at, Delay: time.Minute})
	var e *client.Error
	if !errors.Is(err, client.ErrInvalid) || !errors.As(err, &e) || len(e.Fields) != 1 || e.Fields[0].Field != "run_at" {
		t.Fatalf("RunAt with Delay: %v, want ErrInvalid naming run_at", err)
	}
}

// TestUpdateJob: UpdateJob changes a waiting job's payload, priority and
// run time, and refuses one that is active.
func TestUpdateJob(t *testing.T) {
	t.Parallel()
	c, q, ctx := newClient(t), redistest.Queue(t), context.Background()
	if _, _, err := c.Enqueue(ctx, q, client.EnqueueRequest{ID: "a", Payload: "old", Delay: time.Hour}); err != nil {
		t.Fatal(err)
	}
	seven, now := 7, time.Duration(0)
	job, err := c.UpdateJob(ctx, q, "a", client.JobUpdate{Payload: map[string]int{"n": 2}, Priority: &seven})
	if err != nil || job.State != client.StateDelayed || job.Priority != 7 || string(job.Payload) != `{"n":2}` {
		t.Fatalf("UpdateJob of payload and priority: %+v, %v", job, err)
	}
	later := time.Now().Add(2 * time.Hour).Truncate(time.Millisecond)
	if job, err = c.UpdateJob(ctx, q, "a", client.JobUpdate{RunAt: later}); err != nil || !job.RunAt.Equal(later) {
		t.Fatalf("UpdateJob of RunAt %v: %+v, %v", later, job, err)
	}
	job, err = c.UpdateJob(ctx, q, "a", client.JobUpdate{Delay: &now, Payload: json.RawMessage("null")})
	if err != nil || job.State != client.StatePending || string(job.Payload) != "null" {
		t.Fatalf("UpdateJob of Delay 0: %+v, %v; want pending, payload null", job, err)
	}
	if _, err := c.Claim(ctx, q, client.ClaimRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UpdateJob(ctx, q, "a", client.JobUpdate{Priority: &seven}); !errors.Is(err, client.ErrState) {
		t.Fatalf("UpdateJob of an active job: %v, want ErrState", err)
	}
	if _, err := c.UpdateJob(ctx, q, "nope", client.JobUpdate{Priority: &seven}); !errors.Is(err, client.ErrGone) {
		t.Fatalf("UpdateJob of no job: %v, want ErrGone", err)
	}
	if _, err := c.UpdateJob(ctx, q, "a", client.JobUpdate{}); !errors.Is(err, client.ErrInvalid) {
		t.Fatalf("UpdateJob of nothing: %v, want ErrInvalid", err)
	}
}
