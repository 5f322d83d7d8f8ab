package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/client"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

func TestEnqueueCreatedThenExisting(t *testing.T) {
	t.Parallel()
	c, q, ctx := newClient(t), redistest.Queue(t), context.Background()
	// A colon is allowed in an id and must reach the service unmangled.
	first, created, err := c.Enqueue(ctx, q, client.EnqueueRequest{ID: "order:1", Payload: map[string]int{"n": 1}})
	if err != nil || !created {
		t.Fatalf("first enqueue: created %v, err %v; want a new job", created, err)
	}
	if first.ID != "order:1" || first.Queue != q || first.State != client.StatePending ||
		string(first.Payload) != `{"n":1}` || first.MaxAttempts != 3 || first.CreatedAt.IsZero() {
		t.Fatalf("first enqueue answered %+v", first)
	}
	again, created, err := c.Enqueue(ctx, q, client.EnqueueRequest{ID: "order:1", Payload: map[string]int{"n": 2}})
	if err != nil || created {
		t.Fatalf("second enqueue: created %v, err %v; want the existing job", created, err)
	}
	if string(again.Payload) != `{"n":1}` || !again.CreatedAt.Equal(first.CreatedAt) {
		t.Fatalf("second enqueue answered %+v, want the first job unchanged", again)
	}
	got, err := c.Job(ctx, q, "order:1")
	if err != nil || string(got.Payload) != `{"n":1}` {
		t.Fatalf("Job: %+v, %v", got, err)
	}
}

func TestEnqueueOptions(t *testing.T) {
	t.Parallel()
	c, q, ctx := newClient(t), redistest.Queue(t), context.Background()
	job, _, err := c.Enqueue(ctx, q, client.EnqueueRequest{
		Payload: json.RawMessage(`[1, 2]`), Priority: 5, Delay: time.Hour, MaxAttempts: 7,
		Backoff: &client.Backoff{Fixed: true, Delay: time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	if job.ID == "" || job.State != client.StateDelayed || job.Priority != 5 || job.MaxAttempts != 7 ||
		string(job.Payload) != `[1,2]` {
		t.Fatalf("enqueued %+v", job)
	}
	if wait := job.RunAt.Sub(job.CreatedAt); wait < 59*time.Minute || wait > 61*time.Minute {
		t.Fatalf("run_at %v is %v after created_at, want an hour", job.RunAt, wait)
	}
	nothing, _, err := c.Enqueue(ctx, q, client.EnqueueRequest{})
	if err != nil || string(nothing.Payload) != "null" {
		t.Fatalf("a nil payload: %+v, %v; want JSON null", nothing, err)
	}
}

func TestEnqueueBatchKeepsOrder(t *testing.T) {
	t.Parallel()
	c, q, ctx := newClient(t), redistest.Queue(t), context.Background()
	if _, _, err := c.Enqueue(ctx, q, client.EnqueueRequest{ID: "b", Payload: "old"}); err != nil {
		t.Fatal(err)
	}
	jobs, err := c.EnqueueBatch(ctx, q, []client.EnqueueRequest{
		{ID: "a", Payload: "first"}, {ID: "b", Payload: "new"}, {ID: "c", Payload: "third"}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, j := range jobs {
		got = append(got, j.ID+"="+string(j.Payload))
	}
	if want := []string{`a="first"`, `b="old"`, `c="third"`}; !slices.Equal(got, want) {
		t.Fatalf("batch answered %v, want %v", got, want)
	}
}

func TestClaimExtendComplete(t *testing.T) {
	t.Parallel()
	c, q, ctx := newClient(t), redistest.Queue(t), context.Background()
	enqueue(t, c, q, client.EnqueueRequest{ID: "j1", Payload: "work", Group: "tenant-1"})
	jobs, err := c.Claim(ctx, q, client.ClaimRequest{Lease: 5 * time.Second, Worker: "w1"})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim: %v, %v; want one job", jobs, err)
	}
	job := jobs[0]
	if job.ID != "j1" || job.State != client.StateActive || job.Token <= 0 || job.Worker != "w1" || job.Group != "tenant-1" ||
		job.Attempts != 1 || job.StartedAt.IsZero() || job.LeaseExpiresAt.IsZero() {
		t.Fatalf("claimed %+v", job)
	}
	lease, err := c.Extend(ctx, q, job.ID, client.ExtendRequest{Token: job.Token, Lease: time.Minute, Progress: map[string]int{"pct": 50}})
	if err != nil || !lease.ExpiresAt.After(job.LeaseExpiresAt) || lease.CancelRequested {
		t.Fatalf("extend: %+v, %v; want a later expiry than %v and no cancel", lease, err, job.LeaseExpiresAt)
	}
	if now, _ := c.Job(ctx, q, job.ID); string(now.Progress) != `{"pct":50}` || now.Token != 0 {
		t.Fatalf("after extend the job is %+v, want progress {\"pct\":50} and no token shown", now)
	}
	done, err := c.Complete(ctx, q, job.ID, client.CompleteRequest{Token: job.Token, Result: map[string]bool{"ok": true}})
	if err != nil || done.State != client.StateCompleted || string(done.Result) != `{"ok":true}` || done.FinishedAt.IsZero() {
		t.Fatalf("complete: %+v, %v", done, err)
	}
	repeat, err := c.Complete(ctx, q, job.ID, client.CompleteRequest{Token: job.Token, Result: map[string]bool{"ok": true}})
	if err != nil || repeat.State != client.StateCompleted {
		t.Fatalf("a repeated complete: %+v, %v; want the completed job again", repeat, err)
	}
}

func TestClaimWaitsAndAnswersEmpty(t *testing.T) {
	t.Parallel()
	c, q := newClient(t), redistest.Queue(t)
	jobs, err := c.Claim(context.Background(), q, client.ClaimRequest{Wait: 200 * time.Millisecond, Count: 5})
	if err != nil || len(jobs) != 0 {
		t.Fatalf("claim of an empty queue: %v, %v; want no job", jobs, err)
	}
}

func TestFailRetriesThenDies(t *testing.T) {
	t.Parallel()
	c, q, ctx := newClient(t), redistest.Queue(t), context.Background()
	enqueue(t, c, q, client.EnqueueRequest{ID: "j", MaxAttempts: 2, Backoff: &client.Backoff{Fixed: true, Delay: time.Hour}})

	job := claimOne(t, c, q)
	failed, err := c.Fail(ctx, q, job.ID, client.FailRequest{Token: job.Token, Error: "boom"})
	if err != nil || failed.State != client.StateDelayed || failed.LastError != "boom" || failed.Attempts != 1 {
		t.Fatalf("fail with a 1 h backoff: %+v, %v; want delayed with last_error boom", failed, err)
	}
	again, err := c.Fail(ctx, q, job.ID, client.FailRequest{Token: job.Token, Error: "boom"})
	if err != nil || again.State != client.StateDelayed {
		t.Fatalf("a repeated fail: %+v, %v; want the delayed job again", again, err)
	}

	enqueue(t, c, q, client.EnqueueRequest{ID: "k", MaxAttempts: 2, Backoff: &client.Backoff{Fixed: true, Delay: time.Hour}})
	job = claimOne(t, c, q)
	failed, err = c.Fail(ctx, q, job.ID, client.FailRequest{Token: job.Token, Error: "try again", RetryIn: -1})
	if err != nil || failed.State != client.StatePending {
		t.Fatalf("fail with RetryIn < 0: %+v, %v; want pending at once", failed, err)
	}
	job = claimOne(t, c, q)
	failed, err = c.Fail(ctx, q, job.ID, client.FailRequest{Token: job.Token, Error: "boom again"})
	if err != nil || failed.State != client.StateDead || failed.Attempts != 2 || failed.LastError != "boom again" {
		t.Fatalf("fail of the last attempt: %+v, %v; want dead", failed, err)
	}

	enqueue(t, c, q, client.EnqueueRequest{ID: "f"})
	job = claimOne(t, c, q)
	failed, err = c.Fail(ctx, q, job.ID, client.FailRequest{Token: job.Token, Error: "bad input", Fatal: true})
	if err != nil || failed.State != client.StateDead || failed.Attempts != 1 {
		t.Fatalf("a fatal fail: %+v, %v; want dead after one attempt", failed, err)
	}
}

func TestSnoozeKeepsTheAttempt(t *testing.T) {
	t.Parallel()
	c, q, ctx := newClient(t), redistest.Queue(t), context.Background()
	enqueue(t, c, q, client.EnqueueRequest{ID: "s", MaxAttempts: 1})
	for range 2 {
		job := claimOne(t, c, q)
		snoozed, err := c.Snooze(ctx, q, job.ID, job.Token, 0)
		if err != nil || snoozed.State != client.StatePending || snoozed.Attempts != 0 {
			t.Fatalf("snooze for 0: %+v, %v; want pending with no attempt spent", snoozed, err)
		}
	}
	job := claimOne(t, c, q)
	snoozed, err := c.Snooze(ctx, q, job.ID, job.Token, time.Hour)
	if err != nil || snoozed.State != client.StateDelayed || snoozed.RunAt.Before(time.Now().Add(59*time.Minute)) {
		t.Fatalf("snooze for an hour: %+v, %v; want delayed an hour", snoozed, err)
	}
	if _, err := c.Extend(ctx, q, job.ID, client.ExtendRequest{Token: job.Token, Lease: time.Minute}); !errors.Is(err, client.ErrStale) {
		t.Fatalf("extend after a snooze: %v, want ErrStale", err)
	}
}

func TestCancelAndCancellation(t *testing.T) {
	t.Parallel()
	c, q, ctx := newClient(t), redistest.Queue(t), context.Background()
	enqueue(t, c, q, client.EnqueueRequest{ID: "waiting"})
	job, requested, err := c.Cancel(ctx, q, "waiting", client.CancelRequest{Reason: "not needed"})
	if err != nil || requested || job.State != client.StateCancelled {
		t.Fatalf("cancel of a pending job: %+v, requested %v, %v; want cancelled at once", job, requested, err)
	}

	enqueue(t, c, q, client.EnqueueRequest{ID: "running"})
	held := claimOne(t, c, q)
	before, err := c.Cancellation(ctx, q, held.ID, held.Token)
	if err != nil || before.Requested {
		t.Fatalf("cancellation before any cancel: %+v, %v", before, err)
	}
	job, requested, err = c.Cancel(ctx, q, held.ID, client.CancelRequest{Reason: "customer asked", Token: held.Token})
	if err != nil || !requested || job.State != client.StateActive || !job.CancelRequested {
		t.Fatalf("cancel of an active job: %+v, requested %v, %v; want a request", job, requested, err)
	}
	after, err := c.Cancellation(ctx, q, held.ID, held.Token)
	if err != nil || !after.Requested || after.Reason != "customer asked" {
		t.Fatalf("cancellation after the cancel: %+v, %v", after, err)
	}
	lease, err := c.Extend(ctx, q, held.ID, client.ExtendRequest{Token: held.Token})
	if err != nil || !lease.CancelRequested || lease.CancelReason != "customer asked" {
		t.Fatalf("extend after the cancel: %+v, %v", lease, err)
	}
	failed, err := c.Fail(ctx, q, held.ID, client.FailRequest{Token: held.Token, Error: "cancelled: customer asked"})
	if err != nil || failed.State != client.StateCancelled {
		t.Fatalf("fail after the cancel: %+v, %v; want cancelled", failed, err)
	}

	enqueue(t, c, q, client.EnqueueRequest{ID: "done"})
	done := claimOne(t, c, q)
	if _, err := c.Complete(ctx, q, done.ID, client.CompleteRequest{Token: done.Token}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Cancel(ctx, q, done.ID, client.CancelRequest{}); !errors.Is(err, client.ErrState) {
		t.Fatalf("cancel of a completed job: %v, want ErrState", err)
	}
}

// enqueue adds a job, failing the test if it cannot.
func enqueue(tb testing.TB, c *client.Client, queue string, req client.EnqueueRequest) client.Job {
	tb.Helper()
	job, _, err := c.Enqueue(context.Background(), queue, req)
	if err != nil {
		tb.Fatal(err)
	}
	return job
}

// claimOne claims the next job of queue, with a 5 s lease, failing the
// test if there is none.
func claimOne(tb testing.TB, c *client.Client, queue string) client.Job {
	tb.Helper()
	jobs, err := c.Claim(context.Background(), queue, client.ClaimRequest{Lease: 5 * time.Second})
	if err != nil || len(jobs) != 1 {
		tb.Fatalf("claim: %v, %v; want one job", jobs, err)
	}
	return jobs[0]
}

// SetProgress stores progress and leaves the lease where the claim put it.
func TestSetProgressLeavesTheLease(t *testing.T) {
	t.Parallel()
	c, q, ctx := newClient(t), redistest.Queue(t), context.Background()
	if _, _, err := c.Enqueue(ctx, q, client.EnqueueRequest{ID: "p", Payload: 1}); err != nil {
		t.Fatal(err)
	}
	job := claimOne(t, c, q)
	lease, err := c.SetProgress(ctx, q, job.ID, job.Token, map[string]int{"pct": 30})
	if err != nil || !lease.ExpiresAt.Equal(job.LeaseExpiresAt) {
		t.Fatalf("SetProgress: %+v, %v; want the claim's lease %v", lease, err, job.LeaseExpiresAt)
	}
	got, err := c.Job(ctx, q, job.ID)
	if err != nil || string(got.Progress) != `{"pct":30}` {
		t.Fatalf("the job: %+v, %v; want progress pct 30", got, err)
	}
	if _, err := c.SetProgress(ctx, q, job.ID, job.Token+1, 1); !errors.Is(err, client.ErrStale) {
		t.Fatalf("SetProgress with another token: %v, want ErrStale", err)
	}
}
