package client_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/client"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

// until_done: while the keyed job is not finished, an enqueue with its key
// adds nothing and answers that job; once it is done, the key is free.
func TestEnqueueDedupeUntilDone(t *testing.T) {
	t.Parallel()
	c, q, ctx := newClient(t), redistest.Queue(t), context.Background()
	dedupe := &client.Dedupe{Key: "user-42:digest", Mode: client.DedupeUntilDone}
	first, created, err := c.Enqueue(ctx, q, client.EnqueueRequest{Payload: 1, Dedupe: dedupe})
	if err != nil || !created {
		t.Fatalf("first enqueue: created %v, err %v; want a new job", created, err)
	}
	if first.DedupeKey != "user-42:digest" || first.State != client.StatePending {
		t.Fatalf("first enqueue answered %+v", first)
	}
	again, created, err := c.Enqueue(ctx, q, client.EnqueueRequest{Payload: 2, Dedupe: dedupe})
	if err != nil || created {
		t.Fatalf("second enqueue: created %v, err %v; want the keyed job", created, err)
	}
	if again.ID != first.ID || string(again.Payload) != "1" || again.DedupeKey != first.DedupeKey {
		t.Fatalf("second enqueue answered %+v, want the first job unchanged", again)
	}

	held := claimOne(t, c, q)
	if held.ID != first.ID || held.DedupeKey != first.DedupeKey {
		t.Fatalf("claimed %+v, want the first job", held)
	}
	if _, created, err := c.Enqueue(ctx, q, client.EnqueueRequest{Payload: 3, Dedupe: dedupe}); err != nil || created {
		t.Fatalf("enqueue while active: created %v, err %v; want the keyed job", created, err)
	}
	if _, err := c.Complete(ctx, q, held.ID, client.CompleteRequest{Token: held.Token}); err != nil {
		t.Fatal(err)
	}
	next, created, err := c.Enqueue(ctx, q, client.EnqueueRequest{Payload: 4, Dedupe: dedupe})
	if err != nil || !created || next.ID == first.ID {
		t.Fatalf("enqueue after done: %+v, created %v, err %v; want a new job", next, created, err)
	}
}

// throttle: for TTL after the keyed job was created, an enqueue with its
// key answers that job even when it is finished.
func TestEnqueueDedupeThrottle(t *testing.T) {
	t.Parallel()
	c, q, ctx := newClient(t), redistest.Queue(t), context.Background()
	dedupe := &client.Dedupe{Key: "t", Mode: client.DedupeThrottle, TTL: time.Hour}
	first := enqueue(t, c, q, client.EnqueueRequest{Payload: 1, Dedupe: dedupe})
	held := claimOne(t, c, q)
	if _, err := c.Complete(ctx, q, held.ID, client.CompleteRequest{Token: held.Token}); err != nil {
		t.Fatal(err)
	}
	again, created, err := c.Enqueue(ctx, q, client.EnqueueRequest{Payload: 2, Dedupe: dedupe})
	if err != nil || created || again.ID != first.ID || again.State != client.StateCompleted {
		t.Fatalf("enqueue within the TTL: %+v, created %v, err %v; want the completed job", again, created, err)
	}
}

// debounce: while the keyed job has not started, an enqueue with its key
// replaces its payload and priority and moves its run time.
func TestEnqueueDedupeDebounceUpdatesPayload(t *testing.T) {
	t.Parallel()
	c, q, ctx := newClient(t), redistest.Queue(t), context.Background()
	dedupe := &client.Dedupe{Key: "d", Mode: client.DedupeDebounce, MaxWait: time.Hour}
	first, created, err := c.Enqueue(ctx, q, client.EnqueueRequest{Payload: map[string]int{"n": 1}, Delay: 2 * time.Hour, Dedupe: dedupe})
	if err != nil || !created {
		t.Fatalf("first enqueue: created %v, err %v; want a new job", created, err)
	}
	if first.State != client.StateDelayed || !first.RunAt.Equal(first.CreatedAt.Add(time.Hour)) {
		t.Fatalf("first enqueue answered %+v, want it delayed until CreatedAt + MaxWait", first)
	}
	second, created, err := c.Enqueue(ctx, q, client.EnqueueRequest{Payload: map[string]int{"n": 2}, Priority: 3,
		Delay: time.Minute, Dedupe: dedupe})
	if err != nil || created {
		t.Fatalf("second enqueue: created %v, err %v; want the keyed job updated", created, err)
	}
	if second.ID != first.ID || string(second.Payload) != `{"n":2}` || second.Priority != 3 || second.State != client.StateDelayed {
		t.Fatalf("second enqueue answered %+v, want the first job updated", second)
	}
	if wait := second.RunAt.Sub(first.CreatedAt); wait < time.Minute || wait > 2*time.Minute {
		t.Fatalf("run_at %v is %v after created_at, want about a minute", second.RunAt, wait)
	}
	got, err := c.Job(ctx, q, first.ID)
	if err != nil || string(got.Payload) != `{"n":2}` || !got.RunAt.Equal(second.RunAt) {
		t.Fatalf("Job: %+v, %v; want the updated job", got, err)
	}
}

// ExpiresIn and Timeout come back as Job.ExpiresAt and Job.Timeout, from
// the enqueue, a read and a claim.
func TestEnqueueExpiresInAndTimeout(t *testing.T) {
	t.Parallel()
	c, q, ctx := newClient(t), redistest.Queue(t), context.Background()
	job, created, err := c.Enqueue(ctx, q, client.EnqueueRequest{Payload: "x", ExpiresIn: 10 * time.Minute, Timeout: 30 * time.Second})
	if err != nil || !created {
		t.Fatalf("enqueue: created %v, err %v", created, err)
	}
	if !job.ExpiresAt.Equal(job.CreatedAt.Add(10*time.Minute)) || job.Timeout != 30*time.Second {
		t.Fatalf("enqueued %+v: ExpiresAt %v, Timeout %v; want CreatedAt + 10m and 30s", job, job.ExpiresAt, job.Timeout)
	}
	got, err := c.Job(ctx, q, job.ID)
	if err != nil || !got.ExpiresAt.Equal(job.ExpiresAt) || got.Timeout != job.Timeout {
		t.Fatalf("Job: %+v, %v; want the same ExpiresAt and Timeout", got, err)
	}
	held := claimOne(t, c, q)
	if held.ID != job.ID || held.Timeout != 30*time.Second || held.LeaseExpiresAt.After(held.StartedAt.Add(30*time.Second)) {
		t.Fatalf("claimed %+v, want Timeout 30s and the lease within it", held)
	}
	plain := enqueue(t, c, q, client.EnqueueRequest{Payload: "y"})
	if !plain.ExpiresAt.IsZero() || plain.Timeout != 0 || plain.DedupeKey != "" {
		t.Fatalf("a job without the options: %+v", plain)
	}
}

// Options the service refuses come back as ErrInvalid on their field: a
// duration under the field's minimum is sent, not taken for none.
func TestEnqueueAdmissionInvalid(t *testing.T) {
	t.Parallel()
	c, q, ctx := newClient(t), redistest.Queue(t), context.Background()
	for _, tc := range []struct {
		what  string
		req   client.EnqueueRequest
		field string
	}{
		{"throttle without a TTL", client.EnqueueRequest{Dedupe: &client.Dedupe{Key: "k", Mode: client.DedupeThrottle}}, "dedupe.ttl_ms"},
		{"a TTL for until_done", client.EnqueueRequest{Dedupe: &client.Dedupe{Key: "k", Mode: client.DedupeUntilDone, TTL: time.Second}}, "dedupe.ttl_ms"},
		{"an unknown mode", client.EnqueueRequest{Dedupe: &client.Dedupe{Key: "k", Mode: "sometimes"}}, "dedupe.mode"},
		{"a timeout of 50 ms", client.EnqueueRequest{Timeout: 50 * time.Millisecond}, "timeout_ms"},
		{"an expiry under 1 ms", client.EnqueueRequest{ExpiresIn: time.Microsecond}, "expires_in_ms"},
	} {
		_, created, err := c.Enqueue(ctx, q, tc.req)
		var e *client.Error
		if created || !errors.Is(err, client.ErrInvalid) || !errors.As(err, &e) || e.Status != http.StatusBadRequest {
			t.Fatalf("enqueue with %s: created %v, %v; want a 400 ErrInvalid", tc.what, created, err)
		}
		if !slices.ContainsFunc(e.Fields, func(f client.FieldError) bool { return f.Field == tc.field }) {
			t.Fatalf("enqueue with %s: field errors %+v, want one on %s", tc.what, e.Fields, tc.field)
		}
	}
}
