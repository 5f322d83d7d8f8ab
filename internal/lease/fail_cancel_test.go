package lease_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/admin"
	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/internal/lease"
)

func TestFailOutcomes(t *testing.T) {
	t.Parallel()
	zero, hour := time.Duration(0), time.Hour
	cases := []struct {
		name        string
		newJob      lease.NewJob
		params      lease.FailParams
		cancelFirst bool
		wantState   string
		wantDelay   time.Duration // for delayed: run_at is about now + this
	}{
		{"default backoff: 1 s after attempt 1", lease.NewJob{}, lease.FailParams{}, false, job.StateDelayed, time.Second},
		{"retry_in_ms overrides", lease.NewJob{}, lease.FailParams{RetryIn: &hour}, false, job.StateDelayed, time.Hour},
		{"retry_in_ms 0 is pending now", lease.NewJob{}, lease.FailParams{RetryIn: &zero}, false, job.StatePending, 0},
		{"fixed backoff", lease.NewJob{Backoff: &lease.Backoff{Delay: 7 * time.Second, MaxDelay: time.Minute}}, lease.FailParams{}, false, job.StateDelayed, 7 * time.Second},
		{"backoff capped", lease.NewJob{Backoff: &lease.Backoff{Exponential: true, Delay: time.Minute, MaxDelay: 30 * time.Second}}, lease.FailParams{}, false, job.StateDelayed, 30 * time.Second},
		{"fatal is dead", lease.NewJob{}, lease.FailParams{Fatal: true}, false, job.StateDead, 0},
		{"out of attempts is dead", lease.NewJob{MaxAttempts: 1}, lease.FailParams{}, false, job.StateDead, 0},
		{"cancel requested is cancelled", lease.NewJob{}, lease.FailParams{}, true, job.StateCancelled, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			tc.newJob.ID = "a"
			f.enqueue(t, tc.newJob)
			j := f.claimOne(t, time.Minute)
			if tc.cancelFirst {
				_, requested, err := f.leases.Cancel(context.Background(), f.queue, "a", lease.CancelParams{Reason: "stop"})
				wantErr(t, err, nil)
				if !requested {
					t.Fatal("cancel of an active job was not a request")
				}
			}
			tc.params.Token, tc.params.Error = j.Token, "boom"
			before := time.Now()
			got, err := f.leases.Fail(context.Background(), f.queue, "a", tc.params)
			wantErr(t, err, nil)
			if got.State != tc.wantState || got.LastError != "boom" {
				t.Fatalf("got %s with last_error %q, want %s with boom", got.State, got.LastError, tc.wantState)
			}
			if tc.wantState == job.StateDelayed {
				if delay := got.RunAt.Sub(before); delay < tc.wantDelay-time.Second || delay > tc.wantDelay+time.Second {
					t.Fatalf("run_at is %v from now, want about %v", delay, tc.wantDelay)
				}
			}
			again, err := f.leases.Fail(context.Background(), f.queue, "a", tc.params)
			wantErr(t, err, nil)
			if again.State != got.State || !again.RunAt.Equal(got.RunAt) {
				t.Fatalf("a repeated fail changed the job: %s -> %s", got.State, again.State)
			}
		})
	}
}

func TestFailExponentialBackoffDoubles(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.enqueue(t, lease.NewJob{ID: "a", MaxAttempts: 5, Backoff: &lease.Backoff{Exponential: true, Delay: 100 * time.Millisecond, MaxDelay: time.Hour}})
	for attempt, want := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond} {
		j := f.claimOne(t, time.Minute)
		before := time.Now()
		got, err := f.leases.Fail(context.Background(), f.queue, "a", lease.FailParams{Token: j.Token, Error: "x"})
		wantErr(t, err, nil)
		// The server's clock and ours are the same machine's; allow for
		// the round trip and a busy machine.
		if delay := got.RunAt.Sub(before); delay < want-10*time.Millisecond || delay > want+time.Second {
			t.Fatalf("attempt %d: run_at is %v away, want about %v", attempt+1, delay, want)
		}
		time.Sleep(time.Until(got.RunAt) + 20*time.Millisecond)
	}
}

func TestFailTruncatesErrorText(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.enqueue(t, lease.NewJob{ID: "a"})
	j := f.claimOne(t, time.Minute)
	got, err := f.leases.Fail(context.Background(), f.queue, "a",
		lease.FailParams{Token: j.Token, Error: strings.Repeat("é", lease.MaxErrorText)})
	wantErr(t, err, nil)
	if len(got.LastError) > lease.MaxErrorText || !strings.HasPrefix(got.LastError, "éé") || !utf8Valid(got.LastError) {
		t.Fatalf("last_error is %d bytes, want at most %d of valid UTF-8", len(got.LastError), lease.MaxErrorText)
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "?") == s }

func TestCancelOutcomes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name          string
		setup         func(t *testing.T, f fixture) lease.CancelParams
		want          error
		wantState     string
		wantRequested bool
	}{
		{"pending: cancelled at once", func(t *testing.T, f fixture) lease.CancelParams {
			return lease.CancelParams{Reason: "r"}
		}, nil, job.StateCancelled, false},
		{"delayed: cancelled at once", func(t *testing.T, f fixture) lease.CancelParams {
			wantErr(t, f.admin.Remove(context.Background(), f.queue, "a", false, admin.Actor{}), nil)
			f.enqueue(t, lease.NewJob{ID: "a", Delay: time.Hour})
			return lease.CancelParams{Reason: "r"}
		}, nil, job.StateCancelled, false},
		{"active: requested", func(t *testing.T, f fixture) lease.CancelParams {
			f.claimOne(t, time.Minute)
			return lease.CancelParams{Reason: "r"}
		}, nil, job.StateActive, true},
		{"active, pinned to the holder's token: requested", func(t *testing.T, f fixture) lease.CancelParams {
			j := f.claimOne(t, time.Minute)
			return lease.CancelParams{Reason: "r", Token: j.Token}
		}, nil, job.StateActive, true},
		{"pinned to an earlier attempt: stale", func(t *testing.T, f fixture) lease.CancelParams {
			j := f.lapse(t)
			f.sweep(t)
			f.claimOne(t, time.Minute)
			return lease.CancelParams{Reason: "r", Token: j.Token}
		}, job.ErrStale, job.StateActive, false},
		{"completed: state", func(t *testing.T, f fixture) lease.CancelParams {
			j := f.claimOne(t, time.Minute)
			_, _, err := f.leases.Complete(context.Background(), f.queue, "a", j.Token, nil, nil)
			wantErr(t, err, nil)
			return lease.CancelParams{}
		}, job.ErrState, job.StateCompleted, false},
		{"dead: state", func(t *testing.T, f fixture) lease.CancelParams {
			j := f.claimOne(t, time.Minute)
			_, err := f.leases.Fail(context.Background(), f.queue, "a", lease.FailParams{Token: j.Token, Fatal: true})
			wantErr(t, err, nil)
			return lease.CancelParams{}
		}, job.ErrState, job.StateDead, false},
		{"cancelled: unchanged", func(t *testing.T, f fixture) lease.CancelParams {
			_, _, err := f.leases.Cancel(context.Background(), f.queue, "a", lease.CancelParams{})
			wantErr(t, err, nil)
			return lease.CancelParams{}
		}, nil, job.StateCancelled, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.enqueue(t, lease.NewJob{ID: "a"})
			p := tc.setup(t, f)
			got, requested, err := f.leases.Cancel(context.Background(), f.queue, "a", p)
			wantErr(t, err, tc.want)
			if tc.want != nil {
				got = f.get(t, "a")
			}
			if got.State != tc.wantState || requested != tc.wantRequested || got.CancelRequested != tc.wantRequested {
				t.Fatalf("got %s requested=%v (row %v), want %s requested=%v",
					got.State, requested, got.CancelRequested, tc.wantState, tc.wantRequested)
			}
		})
	}
}

func TestCancelRequestReachesHolderAndIsPinnedToTheAttempt(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	f.enqueue(t, lease.NewJob{ID: "a"})
	j := f.claimOne(t, time.Minute)
	_, _, err := f.leases.Cancel(ctx, f.queue, "a", lease.CancelParams{Reason: "user asked"})
	wantErr(t, err, nil)
	ext, err := f.leases.Extend(ctx, f.queue, "a", lease.ExtendParams{Token: j.Token, Lease: time.Minute})
	wantErr(t, err, nil)
	c, err := f.leases.Cancellation(ctx, f.queue, "a", j.Token)
	wantErr(t, err, nil)
	if !ext.CancelRequested || ext.CancelReason != "user asked" || !c.Requested || c.Reason != "user asked" {
		t.Fatalf("extend %+v, check %+v: want the request and its reason in both", ext, c)
	}
	// The holder finished anyway: the job completes.
	done, _, err := f.leases.Complete(ctx, f.queue, "a", j.Token, nil, nil)
	wantErr(t, err, nil)
	if done.State != job.StateCompleted {
		t.Fatalf("state %s, want completed: a cancel is never a kill", done.State)
	}
}

func TestSweepCancelsALapsedJobWithACancelRequest(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.enqueue(t, lease.NewJob{ID: "a"})
	j := f.claimOne(t, 100*time.Millisecond)
	_, _, err := f.leases.Cancel(context.Background(), f.queue, "a", lease.CancelParams{Token: j.Token})
	wantErr(t, err, nil)
	time.Sleep(150 * time.Millisecond)
	s := f.sweep(t)
	if len(s.Cancelled) != 1 || s.Cancelled[0] != "a" || len(s.Recovered) != 0 {
		t.Fatalf("sweep %+v, want a cancelled", s)
	}
	if got := f.get(t, "a"); got.State != job.StateCancelled {
		t.Fatalf("state %s, want cancelled", got.State)
	}
}

// TestNewBackoffCaps: the default cap is an hour, a longer fixed delay is
// never shortened by it, and a cap the enqueue names is kept as it is.
func TestNewBackoffCaps(t *testing.T) {
	t.Parallel()
	ten, day := 10*time.Millisecond, 24*time.Hour
	for _, c := range []struct {
		delay time.Duration
		cap   *time.Duration
		want  time.Duration
	}{
		{time.Second, nil, lease.DefaultMaxBackoff},
		{day, nil, day},
		{time.Second, &ten, ten},
	} {
		if got := lease.NewBackoff(true, c.delay, c.cap); got.MaxDelay != c.want || got.Delay != c.delay || !got.Exponential {
			t.Errorf("NewBackoff(%v, %v) = %+v, want cap %v", c.delay, c.cap, got, c.want)
		}
	}
}

// TestFailTransition: a fail's transition by the state the job went to.
func TestFailTransition(t *testing.T) {
	t.Parallel()
	for state, want := range map[string]string{"delayed": "failed", "pending": "failed", "dead": "dead", "cancelled": "cancelled", "active": ""} {
		if got, ok := lease.FailTransition(state); got != want || ok != (want != "") {
			t.Errorf("FailTransition(%q) = %q, %v; want %q", state, got, ok, want)
		}
	}
}
