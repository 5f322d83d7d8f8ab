package lease_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/internal/lease"
)

// A checkpoint of progress alone (Lease 0) stores the progress and leaves
// the lease as it stands, as BullMQ's updateProgress leaves its lock: it
// answers that lease, and only a checkpoint with a lease renews it.
func TestAProgressOnlyCheckpointLeavesTheLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		timeout time.Duration // the job's timeout_ms; 0 for none
		lease   time.Duration // the claim's
		wait    time.Duration // between the claim and the checkpoint
		want    error
	}{
		{"held", 0, time.Minute, 0, nil},
		{"lapsed, not swept", 0, 100 * time.Millisecond, 150 * time.Millisecond, nil},
		{"within its timeout", 2 * time.Second, time.Minute, 0, nil},
		{"past its timeout", 100 * time.Millisecond, time.Minute, 150 * time.Millisecond, job.ErrStale},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.enqueue(t, lease.NewJob{ID: "a", Timeout: tc.timeout})
			claimed := f.claimOne(t, tc.lease)
			if claimed.LeaseExpiresAt.IsZero() {
				t.Fatal("the claim answered no lease")
			}
			time.Sleep(tc.wait)
			ext, err := f.leases.Extend(ctx, f.queue, "a", lease.ExtendParams{Token: claimed.Token, Progress: json.RawMessage(`{"step":2}`)})
			wantErr(t, err, tc.want)
			got := f.get(t, "a")
			if !got.LeaseExpiresAt.Equal(claimed.LeaseExpiresAt) {
				t.Fatalf("the lease moved from %v to %v, want it left as it was", claimed.LeaseExpiresAt, got.LeaseExpiresAt)
			}
			if tc.want != nil {
				if got.Progress != nil {
					t.Fatalf("a refused checkpoint stored progress %s", got.Progress)
				}
				return
			}
			if !ext.LeaseExpiresAt.Equal(claimed.LeaseExpiresAt) || string(got.Progress) != `{"step":2}` {
				t.Fatalf("got lease %v and progress %s, want the claim's lease %v and the progress",
					ext.LeaseExpiresAt, got.Progress, claimed.LeaseExpiresAt)
			}
		})
	}
}

// A lease that a checkpoint of progress alone left to lapse is swept: the
// holder keeps a job only by checkpoints with a lease.
func TestAProgressOnlyCheckpointDoesNotKeepTheJob(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.enqueue(t, lease.NewJob{ID: "a"})
	j := f.claimOne(t, 200*time.Millisecond)
	_, err := f.leases.Extend(context.Background(), f.queue, "a", lease.ExtendParams{Token: j.Token, Progress: json.RawMessage(`1`)})
	wantErr(t, err, nil)
	time.Sleep(250 * time.Millisecond)
	if s := f.sweep(t); len(s.Recovered) != 1 {
		t.Fatalf("sweep took %+v, want the job: progress alone does not renew a lease", s)
	}
}
