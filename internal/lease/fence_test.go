package lease_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/admin"
	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/internal/lease"
)

// held is a claimed job as a fenced call sees it: which id and token to
// name. A case's setup makes it.
type held struct {
	id    string
	token int64
}

// fenceCases are the situations every fenced call is tried in.
var fenceCases = []struct {
	name  string
	setup func(t *testing.T, f fixture) held
	want  error
}{
	{"ok", func(t *testing.T, f fixture) held {
		j := f.claimOne(t, time.Minute)
		return held{j.ID, j.Token}
	}, nil},
	{"stale token", func(t *testing.T, f fixture) held {
		j := f.claimOne(t, time.Minute)
		return held{j.ID, j.Token + 1000}
	}, job.ErrStale},
	{"gone", func(t *testing.T, f fixture) held {
		return held{"no-such-job", 1}
	}, job.ErrGone},
	{"lapsed, not swept", func(t *testing.T, f fixture) held {
		j := f.lapse(t)
		return held{j.ID, j.Token}
	}, nil},
	{"swept back to pending", func(t *testing.T, f fixture) held {
		j := f.lapse(t)
		if s := f.sweep(t); len(s.Recovered) != 1 {
			t.Fatalf("sweep recovered %v, want the job", s.Recovered)
		}
		return held{j.ID, j.Token}
	}, job.ErrStale},
	{"claimed again by another", func(t *testing.T, f fixture) held {
		j := f.lapse(t)
		f.sweep(t)
		if again := f.claimOne(t, time.Minute); again.Token == j.Token {
			t.Fatalf("a second claim reused token %d", j.Token)
		}
		return held{j.ID, j.Token}
	}, job.ErrStale},
	{"leased under the counter", func(t *testing.T, f fixture) held {
		j := f.counterLease(t, f.claimOne(t, time.Minute), counterToken)
		return held{j.ID, j.Token}
	}, nil},
	{"the counter's next token", func(t *testing.T, f fixture) held {
		j := f.counterLease(t, f.claimOne(t, time.Minute), counterToken)
		return held{j.ID, j.Token + 1}
	}, job.ErrStale},
	{"removed and enqueued again under the same id", func(t *testing.T, f fixture) held {
		j := f.claimOne(t, time.Minute)
		wantErr(t, f.admin.Remove(context.Background(), f.queue, j.ID, true, admin.Actor{}), nil)
		f.enqueue(t, lease.NewJob{ID: j.ID})
		if again := f.claimOne(t, time.Minute); again.Token == j.Token {
			t.Fatalf("the successor got the removed job's token %d", j.Token)
		}
		return held{j.ID, j.Token}
	}, job.ErrStale},
}

// fencedCalls are the calls a holder makes, each run against every case.
var fencedCalls = []struct {
	name string
	call func(f fixture, h held) error
}{
	{"extend", func(f fixture, h held) error {
		_, err := f.leases.Extend(context.Background(), f.queue, h.id, lease.ExtendParams{Token: h.token, Lease: time.Minute})
		return err
	}},
	{"progress only", func(f fixture, h held) error {
		_, err := f.leases.Extend(context.Background(), f.queue, h.id, lease.ExtendParams{Token: h.token, Progress: json.RawMessage(`1`)})
		return err
	}},
	{"cancellation", func(f fixture, h held) error {
		_, err := f.leases.Cancellation(context.Background(), f.queue, h.id, h.token)
		return err
	}},
	{"complete", func(f fixture, h held) error {
		_, _, err := f.leases.Complete(context.Background(), f.queue, h.id, h.token, nil, nil)
		return err
	}},
	{"fail", func(f fixture, h held) error {
		_, err := f.leases.Fail(context.Background(), f.queue, h.id, lease.FailParams{Token: h.token, Error: "x"})
		return err
	}},
	{"snooze", func(f fixture, h held) error {
		_, err := f.leases.Snooze(context.Background(), f.queue, h.id, h.token, time.Second)
		return err
	}},
}

func TestFencedCalls(t *testing.T) {
	t.Parallel()
	for _, call := range fencedCalls {
		for _, tc := range fenceCases {
			t.Run(call.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				f := newFixture(t)
				f.enqueue(t, lease.NewJob{ID: "job-1"})
				h := tc.setup(t, f)
				before := f.getOrZero(h.id)
				wantErr(t, call.call(f, h), tc.want)
				if tc.want != nil {
					if after := f.getOrZero(h.id); after.State != before.State || !after.LeaseExpiresAt.Equal(before.LeaseExpiresAt) {
						t.Fatalf("a refused %s changed the job: %s %v -> %s %v", call.name,
							before.State, before.LeaseExpiresAt, after.State, after.LeaseExpiresAt)
					}
				}
			})
		}
	}
}

// getOrZero reads a job, or the zero job when there is none.
func (f fixture) getOrZero(id string) job.Job {
	j, _ := f.admin.Get(context.Background(), f.queue, id)
	return j
}

func TestExtendReScoresLeaseAndStoresProgress(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.enqueue(t, lease.NewJob{ID: "a"})
	j := f.claimOne(t, time.Second)
	ext, err := f.leases.Extend(context.Background(), f.queue, "a",
		lease.ExtendParams{Token: j.Token, Lease: time.Hour, Progress: json.RawMessage(`{"done":12345678901234567890}`)})
	wantErr(t, err, nil)
	if !ext.LeaseExpiresAt.After(time.Now().Add(59*time.Minute)) || ext.CancelRequested {
		t.Fatalf("got %+v, want a lease an hour out and no cancel", ext)
	}
	got := f.get(t, "a")
	if string(got.Progress) != `{"done":12345678901234567890}` || !got.LeaseExpiresAt.Equal(ext.LeaseExpiresAt) {
		t.Fatalf("row has progress %s lease %v, want the progress and %v", got.Progress, got.LeaseExpiresAt, ext.LeaseExpiresAt)
	}
	// The extended lease keeps the job out of a sweep.
	time.Sleep(1100 * time.Millisecond)
	if s := f.sweep(t); s.Len() != 0 {
		t.Fatalf("sweep took %+v, want nothing: the lease was extended", s)
	}
}

func TestCompleteIsIdempotentForItsHolder(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.enqueue(t, lease.NewJob{ID: "a"})
	j := f.claimOne(t, time.Minute)
	result := json.RawMessage(`{"ok":true}`)
	first, _, err := f.leases.Complete(context.Background(), f.queue, "a", j.Token, result, nil)
	wantErr(t, err, nil)
	again, _, err := f.leases.Complete(context.Background(), f.queue, "a", j.Token, result, nil)
	wantErr(t, err, nil)
	if first.State != job.StateCompleted || again.State != job.StateCompleted || !again.FinishedAt.Equal(first.FinishedAt) {
		t.Fatalf("got %s at %v then %s at %v, want the same completed job twice", first.State, first.FinishedAt, again.State, again.FinishedAt)
	}
	if string(again.Result) != `{"ok":true}` {
		t.Fatalf("result = %s", again.Result)
	}
	// A fail after the complete is not a repeat: the job is no longer active.
	_, err = f.leases.Fail(context.Background(), f.queue, "a", lease.FailParams{Token: j.Token, Error: "late"})
	wantErr(t, err, job.ErrStale)
}

func TestCompleteClaimsNext(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, id := range []string{"a", "b", "c"} {
		f.enqueue(t, lease.NewJob{ID: id})
	}
	j := f.claimOne(t, time.Minute)
	_, next, err := f.leases.Complete(context.Background(), f.queue, j.ID, j.Token, nil, &lease.ClaimParams{Count: 5, Lease: time.Minute})
	wantErr(t, err, nil)
	if len(next) != 2 || next[0].ID != "b" || next[1].ID != "c" || next[0].Token <= 0 ||
		next[0].Token == j.Token || next[1].Token == j.Token || next[1].Token == next[0].Token {
		t.Fatalf("next = %+v, want b and c with fresh tokens", next)
	}
	_, next, err = f.leases.Complete(context.Background(), f.queue, "b", next[0].Token, nil, &lease.ClaimParams{Count: 1})
	wantErr(t, err, nil)
	if len(next) != 0 {
		t.Fatalf("next = %d jobs from an empty queue, want 0", len(next))
	}
}

func TestCompleteBatch(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, id := range []string{"a", "b", "c"} {
		f.enqueue(t, lease.NewJob{ID: id})
	}
	c, err := f.leases.Claim(context.Background(), f.queue, lease.ClaimParams{Count: 2, Lease: time.Minute})
	wantErr(t, err, nil)
	batch := []lease.Completion{
		{ID: "a", Token: c.Jobs[0].Token, Result: json.RawMessage(`1`)},
		{ID: "b", Token: c.Jobs[1].Token + 100},
		{ID: "zz", Token: 1},
	}
	out, next, err := f.leases.CompleteBatch(context.Background(), f.queue, batch, &lease.ClaimParams{Count: 1})
	wantErr(t, err, nil)
	if len(out) != 3 || out[0].Err != nil || out[0].Job.State != job.StateCompleted || string(out[0].Job.Result) != "1" {
		t.Fatalf("first outcome %+v, want a completed job with result 1", out[0])
	}
	wantErr(t, out[1].Err, job.ErrStale)
	wantErr(t, out[2].Err, job.ErrGone)
	if len(next) != 1 || next[0].ID != "c" {
		t.Fatalf("next = %+v, want c", next)
	}
	if got := f.get(t, "b"); got.State != job.StateActive {
		t.Fatalf("b is %s after a refused complete, want active", got.State)
	}
}
