package lease_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/internal/lease"
)

// recorder is an Observer that keeps what it was told.
type recorder struct {
	mu          sync.Mutex
	waits, runs []time.Duration
}

func (r *recorder) JobWait(queue string, wait time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.waits = append(r.waits, wait)
}

func (r *recorder) JobRun(queue string, run time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.runs = append(r.runs, run)
}

// take returns what r was told since the last take, and forgets it.
func (r *recorder) take() (waits, runs []time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	waits, runs = r.waits, r.runs
	r.waits, r.runs = nil, nil
	return waits, runs
}

// observed is a fixture whose lease service tells a recorder.
func observed(t *testing.T) (fixture, *recorder) {
	t.Helper()
	f := newFixture(t)
	rec := &recorder{}
	f.leases = lease.NewService(f.rdb, prefix, lease.Observe(rec))
	return f, rec
}

// assertTold fails unless rec was told exactly waits and runs since the
// last take.
func assertTold(t *testing.T, rec *recorder, step string, waits, runs []time.Duration) {
	t.Helper()
	gotWaits, gotRuns := rec.take()
	if !equalDurations(gotWaits, waits) {
		t.Errorf("%s: waits told %v, want %v", step, gotWaits, waits)
	}
	if !equalDurations(gotRuns, runs) {
		t.Errorf("%s: runs told %v, want %v", step, gotRuns, runs)
	}
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// waitOf is how long a just claimed job waited, by its row: since it was
// made pending again, or else (never delayed nor retried) since its enqueue.
func waitOf(j job.Job) time.Duration {
	if j.ReadyAt.IsZero() {
		return j.StartedAt.Sub(j.CreatedAt)
	}
	return j.StartedAt.Sub(j.ReadyAt)
}

// runOf is how long the attempt of claimed j ran until end, by its row.
func runOf(j job.Job, end time.Time) time.Duration { return end.Sub(j.StartedAt) }

func TestObserveClaimAndComplete(t *testing.T) {
	t.Parallel()
	f, rec := observed(t)
	ctx := context.Background()
	for range 3 {
		f.enqueue(t, lease.NewJob{})
	}
	time.Sleep(50 * time.Millisecond)

	c, err := f.leases.Claim(ctx, f.queue, lease.ClaimParams{Count: 2})
	wantErr(t, err, nil)
	a, b := c.Jobs[0], c.Jobs[1]
	if waitOf(a) < 50*time.Millisecond {
		t.Errorf("job a waited %v by its row, want at least the 50 ms slept", waitOf(a))
	}
	assertTold(t, rec, "claim", []time.Duration{waitOf(a), waitOf(b)}, nil)

	time.Sleep(20 * time.Millisecond)
	done, next, err := f.leases.Complete(ctx, f.queue, a.ID, a.Token, nil, &lease.ClaimParams{})
	wantErr(t, err, nil)
	if len(next) != 1 {
		t.Fatalf("complete claimed %d next jobs, want 1", len(next))
	}
	if runOf(a, done.FinishedAt) < 20*time.Millisecond {
		t.Errorf("job a ran %v by its row, want at least the 20 ms slept", runOf(a, done.FinishedAt))
	}
	assertTold(t, rec, "complete with next", []time.Duration{waitOf(next[0])}, []time.Duration{runOf(a, done.FinishedAt)})

	// A repeat of the complete claims nothing, and is told again: the
	// reply does not tell it from the first.
	_, _, err = f.leases.Complete(ctx, f.queue, a.ID, a.Token, nil, nil)
	wantErr(t, err, nil)
	assertTold(t, rec, "repeated complete", nil, []time.Duration{runOf(a, done.FinishedAt)})

	// A refused call tells nothing.
	_, _, err = f.leases.Complete(ctx, f.queue, b.ID, b.Token+1000, nil, nil)
	wantErr(t, err, job.ErrStale)
	assertTold(t, rec, "stale complete", nil, nil)

	d := f.enqueue(t, lease.NewJob{})
	out, next, err := f.leases.CompleteBatch(ctx, f.queue, []lease.Completion{
		{ID: b.ID, Token: b.Token}, {ID: next[0].ID, Token: next[0].Token}, {ID: b.ID, Token: b.Token + 1000},
	}, &lease.ClaimParams{})
	wantErr(t, err, nil)
	if len(next) != 1 || next[0].ID != d.ID {
		t.Fatalf("batch complete claimed %v next, want job d", next)
	}
	wantErr(t, out[2].Err, job.ErrStale)
	assertTold(t, rec, "batch complete with next", []time.Duration{waitOf(next[0])},
		[]time.Duration{runOf(b, out[0].Job.FinishedAt), runOf(out[1].Job, out[1].Job.FinishedAt)})
}

func TestObserveFail(t *testing.T) {
	t.Parallel()
	f, rec := observed(t)
	ctx := context.Background()
	hour := time.Hour
	zero := time.Duration(0)
	for _, tc := range []struct {
		name  string
		p     lease.FailParams
		state string
		end   func(j job.Job) time.Time // the end of the attempt, by the row
	}{
		{"retried at once", lease.FailParams{RetryIn: &zero}, job.StatePending, func(j job.Job) time.Time { return j.ReadyAt }},
		{"retried later", lease.FailParams{RetryIn: &hour}, job.StateDelayed, func(j job.Job) time.Time { return j.RunAt.Add(-hour) }},
		{"dead", lease.FailParams{Fatal: true}, job.StateDead, func(j job.Job) time.Time { return j.FinishedAt }},
		{"retried after its backoff", lease.FailParams{}, job.StateDelayed, func(j job.Job) time.Time { return j.FailedAt }},
	} {
		f.enqueue(t, lease.NewJob{})
		claimed := f.claimOne(t, time.Minute)
		assertTold(t, rec, tc.name+": claim", []time.Duration{waitOf(claimed)}, nil)
		time.Sleep(10 * time.Millisecond)

		tc.p.Token = claimed.Token
		failed, err := f.leases.Fail(ctx, f.queue, claimed.ID, tc.p)
		wantErr(t, err, nil)
		if failed.State != tc.state {
			t.Fatalf("%s: state %s, want %s", tc.name, failed.State, tc.state)
		}
		run := runOf(claimed, tc.end(failed))
		if run < 10*time.Millisecond || run > time.Minute {
			t.Errorf("%s: run %v by the row, want the 10 ms slept or a little more", tc.name, run)
		}
		if tc.state != job.StateDead && !failed.FailedAt.Equal(tc.end(failed)) {
			t.Errorf("%s: failed_at %v, want the attempt's end %v", tc.name, failed.FailedAt, tc.end(failed))
		}
		assertTold(t, rec, tc.name+": fail", nil, []time.Duration{run})
		if tc.state == job.StatePending { // claimed again, it waited since the fail
			again := f.claimOne(t, time.Minute)
			if !again.ReadyAt.Equal(failed.ReadyAt) || again.StartedAt.Before(failed.ReadyAt) {
				t.Fatalf("%s: claimed again ready at %v, started at %v; want ready at the fail's %v",
					tc.name, again.ReadyAt, again.StartedAt, failed.ReadyAt)
			}
			assertTold(t, rec, tc.name+": claim again", []time.Duration{again.StartedAt.Sub(failed.ReadyAt)}, nil)
		}
	}
}

func TestObserveCancelledFail(t *testing.T) {
	t.Parallel()
	f, rec := observed(t)
	ctx := context.Background()
	f.enqueue(t, lease.NewJob{})
	claimed := f.claimOne(t, time.Minute)
	if _, requested, err := f.leases.Cancel(ctx, f.queue, claimed.ID, lease.CancelParams{}); err != nil || !requested {
		t.Fatalf("Cancel: requested %v, %v; want a request", requested, err)
	}
	failed, err := f.leases.Fail(ctx, f.queue, claimed.ID, lease.FailParams{Token: claimed.Token})
	wantErr(t, err, nil)
	if failed.State != job.StateCancelled {
		t.Fatalf("state %s, want cancelled", failed.State)
	}
	assertTold(t, rec, "cancelled fail", []time.Duration{waitOf(claimed)}, []time.Duration{runOf(claimed, failed.FinishedAt)})
}

func TestObserveDelayedWait(t *testing.T) {
	t.Parallel()
	f, rec := observed(t)
	f.enqueue(t, lease.NewJob{Delay: 30 * time.Millisecond})
	time.Sleep(100 * time.Millisecond)

	j := f.claimOne(t, time.Minute)
	waits, _ := rec.take()
	if len(waits) != 1 {
		t.Fatalf("waits told %v, want one", waits)
	}
	// It became claimable at its run_at, 30 ms after its enqueue: its wait
	// starts there, not at its enqueue.
	if sinceMade := j.StartedAt.Sub(j.CreatedAt); waits[0] != sinceMade-30*time.Millisecond {
		t.Errorf("wait told %v, want %v (since it was made) less the 30 ms delay", waits[0], sinceMade)
	}
	if waits[0] < 60*time.Millisecond {
		t.Errorf("wait told %v, want at least the 70 ms slept past its delay, less a little", waits[0])
	}
}
