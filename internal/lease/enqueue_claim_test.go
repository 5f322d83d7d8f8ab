package lease_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/internal/lease"
)

func TestEnqueueIsIdempotentOnID(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	first, err := f.leases.Enqueue(ctx, f.queue, []lease.NewJob{{ID: "a", Payload: json.RawMessage(`1`)}})
	wantErr(t, err, nil)
	again, err := f.leases.Enqueue(ctx, f.queue, []lease.NewJob{{ID: "a", Payload: json.RawMessage(`2`)}})
	wantErr(t, err, nil)
	if !first[0].Created || again[0].Created {
		t.Fatalf("created = %v then %v, want true then false", first[0].Created, again[0].Created)
	}
	if got := string(again[0].Job.Payload); got != "1" {
		t.Fatalf("payload after a repeat = %s, want the first one's 1", got)
	}
	c, err := f.leases.Claim(ctx, f.queue, lease.ClaimParams{Count: 10})
	wantErr(t, err, nil)
	if len(c.Jobs) != 1 {
		t.Fatalf("claimed %d jobs, want 1: a repeat must not add a job", len(c.Jobs))
	}
}

func TestEnqueueDefaults(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	j := f.enqueue(t, lease.NewJob{})
	if j.ID == "" || j.State != job.StatePending || j.MaxAttempts != lease.DefaultMaxAttempts || j.CreatedAt.IsZero() {
		t.Fatalf("got %+v, want a pending job with an id, max_attempts 3 and created_at", j)
	}
	d := f.enqueue(t, lease.NewJob{Delay: time.Hour})
	if d.State != job.StateDelayed || d.RunAt.Before(time.Now().Add(59*time.Minute)) {
		t.Fatalf("got state %s run_at %v, want delayed by an hour", d.State, d.RunAt)
	}
}

func TestClaimOrderIsPriorityThenFIFO(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, nj := range []lease.NewJob{
		{ID: "p5-a", Priority: 5}, {ID: "p0-a"}, {ID: "p5-b", Priority: 5}, {ID: "p9"}, {ID: "p0-b"},
	} {
		if nj.ID == "p9" {
			nj.Priority = 9
		}
		f.enqueue(t, nj)
	}
	c, err := f.leases.Claim(context.Background(), f.queue, lease.ClaimParams{Count: 10})
	wantErr(t, err, nil)
	var got []string
	for _, j := range c.Jobs {
		got = append(got, j.ID)
	}
	want := []string{"p0-a", "p0-b", "p5-a", "p5-b", "p9"}
	if len(got) != len(want) {
		t.Fatalf("claimed %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("claimed %v, want %v", got, want)
		}
	}
}

func TestClaimGivesFreshTokensAndLease(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.enqueue(t, lease.NewJob{ID: "a"})
	f.enqueue(t, lease.NewJob{ID: "b"})
	c, err := f.leases.Claim(context.Background(), f.queue, lease.ClaimParams{Count: 2, Lease: time.Minute, Worker: "w1"})
	wantErr(t, err, nil)
	if len(c.Jobs) != 2 || c.Jobs[0].Token <= 0 || c.Jobs[0].Token == c.Jobs[1].Token {
		t.Fatalf("got %+v, want two jobs with distinct positive tokens", c.Jobs)
	}
	j := c.Jobs[0]
	if j.State != job.StateActive || j.Attempts != 1 || j.Worker != "w1" {
		t.Fatalf("got %+v, want active, attempts 1, worker w1", j)
	}
	if lease := j.LeaseExpiresAt.Sub(j.StartedAt); lease != time.Minute {
		t.Fatalf("lease = %v, want 1m", lease)
	}
}

func TestClaimMovesDueDelayedJobsFirst(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.enqueue(t, lease.NewJob{ID: "later", Delay: 100 * time.Millisecond})
	c, err := f.leases.Claim(context.Background(), f.queue, lease.ClaimParams{})
	wantErr(t, err, nil)
	if len(c.Jobs) != 0 || c.DueIn <= 0 || c.DueIn > 100*time.Millisecond {
		t.Fatalf("got %d jobs, due in %v; want none yet, due within 100ms", len(c.Jobs), c.DueIn)
	}
	time.Sleep(c.DueIn + 20*time.Millisecond)
	if j := f.claimOne(t, time.Second); j.ID != "later" {
		t.Fatalf("claimed %s, want the due delayed job", j.ID)
	}
}

func TestClaimOnPausedQueueIsEmpty(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.enqueue(t, lease.NewJob{})
	rdb := f.rdb
	if err := rdb.HSet(context.Background(), prefix+":{"+f.queue+"}:meta", "paused", "1").Err(); err != nil {
		t.Fatal(err)
	}
	c, err := f.leases.Claim(context.Background(), f.queue, lease.ClaimParams{})
	wantErr(t, err, nil)
	if len(c.Jobs) != 0 {
		t.Fatalf("claimed %d jobs from a paused queue, want 0", len(c.Jobs))
	}
}
