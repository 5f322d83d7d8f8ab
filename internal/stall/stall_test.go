package stall_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/admin"
	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/lease"
	"github.com/echo-mq/echo_mq/internal/redistest"
	"github.com/echo-mq/echo_mq/internal/stall"
)

func TestMain(m *testing.M) { os.Exit(redistest.Run(m)) }

const prefix = "emqtest"

type fixture struct {
	leases *lease.Service
	stall  *stall.Service
	admin  *admin.Service
	queue  string
}

func newFixture(t testing.TB) fixture {
	t.Helper()
	rdb := redistest.Client(t)
	return fixture{lease.NewService(rdb, prefix), stall.NewService(rdb, prefix), admin.NewService(rdb, prefix), redistest.Queue(t)}
}

// enqueueAndLapse enqueues n jobs, claims them with a 100 ms lease and
// waits until the leases lapsed.
func (f fixture) enqueueAndLapse(t testing.TB, n int) []job.Job {
	t.Helper()
	ctx := context.Background()
	jobs := make([]lease.NewJob, n)
	for i := range jobs {
		jobs[i] = lease.NewJob{ID: fmt.Sprintf("j%d", i)}
	}
	if _, err := f.leases.Enqueue(ctx, f.queue, jobs); err != nil {
		t.Fatal(err)
	}
	c, err := f.leases.Claim(ctx, f.queue, lease.ClaimParams{Count: n, Lease: 100 * time.Millisecond})
	if err != nil || len(c.Jobs) != n {
		t.Fatalf("claimed %d jobs (%v), want %d", len(c.Jobs), err, n)
	}
	time.Sleep(150 * time.Millisecond)
	return c.Jobs
}

func (f fixture) sweep(t testing.TB, p stall.SweepParams) stall.Swept {
	t.Helper()
	s, err := f.stall.Sweep(context.Background(), f.queue, p)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (f fixture) state(t testing.TB, id string) job.Job {
	t.Helper()
	j, err := f.admin.Get(context.Background(), f.queue, id)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func TestSweepRecoversOnceThenDeadLetters(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	if _, err := f.leases.Enqueue(context.Background(), f.queue, []lease.NewJob{{ID: "first"}}); err != nil {
		t.Fatal(err)
	}
	f.enqueueAndLapse(t, 1) // claims "first"; j0 stays pending behind it
	s := f.sweep(t, stall.SweepParams{})
	if len(s.Recovered) != 1 || len(s.Dead) != 0 {
		t.Fatalf("first sweep %+v, want one recovered", s)
	}
	id := s.Recovered[0]
	j := f.state(t, id)
	if j.State != job.StatePending || j.Stalled != 1 || !j.LeaseExpiresAt.IsZero() {
		t.Fatalf("after one stall: %+v, want pending, stalled 1, no lease", j)
	}
	// Recovered to the front: it is claimed before the job that waited.
	c, err := f.leases.Claim(context.Background(), f.queue, lease.ClaimParams{Lease: 100 * time.Millisecond})
	if err != nil || len(c.Jobs) != 1 || c.Jobs[0].ID != id {
		t.Fatalf("claimed %+v (%v), want the recovered %s first", c.Jobs, err, id)
	}
	time.Sleep(150 * time.Millisecond)
	s = f.sweep(t, stall.SweepParams{})
	if len(s.Dead) != 1 || s.Dead[0] != id {
		t.Fatalf("second sweep %+v, want %s dead", s, id)
	}
	if j := f.state(t, id); j.State != job.StateDead || j.LastError != "stalled" || j.Stalled != 2 {
		t.Fatalf("after two stalls: %+v, want dead, last_error stalled, stalled 2", j)
	}
}

func TestSweepMaxStalledAndLimit(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.enqueueAndLapse(t, 5)
	s := f.sweep(t, stall.SweepParams{MaxStalled: 1, Limit: 3})
	if len(s.Dead) != 3 || len(s.Recovered) != 0 {
		t.Fatalf("sweep %+v, want 3 dead: max_stalled 1, limit 3", s)
	}
	s = f.sweep(t, stall.SweepParams{MaxStalled: 1, Limit: 3})
	if len(s.Dead) != 2 {
		t.Fatalf("second sweep %+v, want the other 2 dead", s)
	}
	if s := f.sweep(t, stall.SweepParams{}); s.Len() != 0 {
		t.Fatalf("third sweep %+v, want nothing left", s)
	}
}

func TestSweepLeavesLiveLeasesAlone(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.leases.Enqueue(ctx, f.queue, []lease.NewJob{{ID: "live"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.leases.Claim(ctx, f.queue, lease.ClaimParams{Lease: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if s := f.sweep(t, stall.SweepParams{}); s.Len() != 0 {
		t.Fatalf("sweep %+v, want nothing: the lease is live", s)
	}
	if j := f.state(t, "live"); j.State != job.StateActive {
		t.Fatalf("state %s, want active", j.State)
	}
}

func TestReaperSweepsAndPromotesEveryKnownQueue(t *testing.T) {
	t.Parallel()
	// A prefix of its own: its reaper sweeps every known queue, and must
	// not sweep the other tests' lapsed jobs before their own sweeps do.
	rdb, own := redistest.Client(t), "emqreaper-"+redistest.Queue(t)
	f := fixture{lease.NewService(rdb, own), stall.NewService(rdb, own), admin.NewService(rdb, own), redistest.Queue(t)}
	other := fixture{f.leases, f.stall, f.admin, f.queue + "-other"}
	f.enqueueAndLapse(t, 3)
	other.enqueueAndLapse(t, 2)
	ctx := context.Background()
	if _, err := f.leases.Enqueue(ctx, f.queue, []lease.NewJob{{ID: "later", Delay: 50 * time.Millisecond}}); err != nil {
		t.Fatal(err)
	}
	reaper := stall.NewReaper(f.stall, stall.ReaperConfig{Interval: 20 * time.Millisecond, BatchSize: 2})
	reaper.Start(ctx)
	defer reaper.Stop()
	deadline := time.Now().Add(10 * time.Second)
	for {
		a, b, c := f.state(t, "j2"), other.state(t, "j1"), f.state(t, "later")
		if a.State == job.StatePending && b.State == job.StatePending && c.State == job.StatePending {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s: j2 %s, other j1 %s, later %s; want all pending", a.State, b.State, c.State)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestReapersTakeTurns: of two replicas' reapers, the one that comes second
// within the first one's turn (half an interval) leaves the queue alone;
// once the turn is over, it sweeps. An obliterate deletes the turn.
func TestReapersTakeTurns(t *testing.T) {
	t.Parallel()
	rdb, own := redistest.Client(t), "emqturns-"+redistest.Queue(t) // a pass sees only this test's queue
	f := fixture{lease.NewService(rdb, own), stall.NewService(rdb, own), admin.NewService(rdb, own), redistest.Queue(t)}
	ctx := context.Background()
	config := stall.ReaperConfig{Interval: time.Minute} // a turn lasts 30 s
	first, second := stall.NewReaper(f.stall, config), stall.NewReaper(f.stall, config)
	f.enqueueAndLapse(t, 1)
	if swept, err := first.Pass(ctx); err != nil || len(swept.Recovered) != 1 {
		t.Fatalf("the first reaper recovered %v (%v), want j0 alone", swept.Recovered, err)
	}
	turn := keyspace.NewQueue(own, f.queue).ReaperTurn()
	if ttl := rdb.PTTL(ctx, turn).Val(); ttl <= 0 || ttl > 30*time.Second {
		t.Fatalf("the turn's time to live is %v, want up to 30 s", ttl)
	}
	c, err := f.leases.Claim(ctx, f.queue, lease.ClaimParams{Count: 1, Lease: 100 * time.Millisecond})
	if err != nil || len(c.Jobs) != 1 {
		t.Fatalf("claim again: %v, %v", c.Jobs, err)
	}
	time.Sleep(150 * time.Millisecond) // lapsed again
	if swept, err := second.Pass(ctx); err != nil || swept.Len() != 0 {
		t.Fatalf("the second reaper swept %+v (%v) within the first one's turn, want nothing", swept, err)
	}
	if s := f.state(t, "j0").State; s != job.StateActive {
		t.Fatalf("j0 is %s, want still active (lapsed, unswept)", s)
	}
	rdb.Del(ctx, turn)                                                      // the turn ends
	if swept, err := second.Pass(ctx); err != nil || len(swept.Dead) != 1 { // its second stall
		t.Fatalf("after the turn ended the second reaper swept %+v (%v), want j0 dead", swept, err)
	}
	if _, err := f.admin.Obliterate(ctx, f.queue, true); err != nil {
		t.Fatal(err)
	}
	if n := rdb.Exists(ctx, turn).Val(); n != 0 {
		t.Error("the reapers' turn outlived an obliterate of the queue")
	}
}

// TestATurnAlwaysEnds: however short the interval, a turn expires.
func TestATurnAlwaysEnds(t *testing.T) {
	t.Parallel()
	rdb, own := redistest.Client(t), "emqturns-"+redistest.Queue(t)
	svc, q := stall.NewService(rdb, own), redistest.Queue(t)
	ctx := context.Background()
	reaper := stall.NewReaper(svc, stall.ReaperConfig{Interval: time.Nanosecond})
	if err := rdb.SAdd(ctx, keyspace.QueuesKey(own), q).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := reaper.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if ttl := rdb.PTTL(ctx, keyspace.NewQueue(own, q).ReaperTurn()).Val(); ttl == -1 {
		t.Fatal("a 1 ns interval left a turn that never expires")
	}
}
