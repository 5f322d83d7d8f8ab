package stall_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/admin"
	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/lease"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

// The reaper's expire pass ends the jobs nobody claimed before their
// expiry, pending, delayed or grouped, cancelled "expired"; it leaves the
// started ones, and the ones whose time has not come, alone.
func TestExpireEndsUnstartedJobs(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	soon := 100 * time.Millisecond
	jobs := []lease.NewJob{
		{ID: "pending", ExpiresIn: soon},
		{ID: "delayed", ExpiresIn: soon, Delay: time.Hour},
		{ID: "grouped", ExpiresIn: soon, Group: "tenant-1"},
		{ID: "started", ExpiresIn: soon, Priority: 0},
		{ID: "later", ExpiresIn: time.Hour, Priority: 9},
	}
	if _, err := f.leases.Enqueue(ctx, f.queue, jobs[3:4]); err != nil {
		t.Fatal(err)
	}
	if c, err := f.leases.Claim(ctx, f.queue, lease.ClaimParams{Count: 1, Lease: time.Minute}); err != nil || len(c.Jobs) != 1 {
		t.Fatalf("claim: %v %v", c.Jobs, err)
	}
	if _, err := f.leases.Enqueue(ctx, f.queue, append(jobs[:3:3], jobs[4])); err != nil {
		t.Fatal(err)
	}
	time.Sleep(soon + 50*time.Millisecond)

	expired, more, err := f.stall.Expire(ctx, f.queue, 2)
	if err != nil || !more || len(expired) != 2 {
		t.Fatalf("first call: %v, more %v, %v; want two expired and more", expired, more, err)
	}
	rest, _, err := f.stall.Expire(ctx, f.queue, 10)
	if err != nil {
		t.Fatal(err)
	}
	all := append(expired, rest...)
	slices.Sort(all)
	if !slices.Equal(all, []string{"delayed", "grouped", "pending"}) {
		t.Fatalf("expired %v", all)
	}
	for _, id := range all {
		if j := f.state(t, id); j.State != job.StateCancelled || j.CancelReason != "expired" {
			t.Errorf("%s: %s %q, want cancelled expired", id, j.State, j.CancelReason)
		}
	}
	if j := f.state(t, "started"); j.State != job.StateActive {
		t.Errorf("the started job is %s", j.State)
	}
	if j := f.state(t, "later"); j.State != job.StatePending {
		t.Errorf("the later job is %s", j.State)
	}
	// The group has nothing left to claim: no job of it is claimable.
	if c, err := f.leases.Claim(ctx, f.queue, lease.ClaimParams{Count: 10, Lease: time.Minute}); err != nil ||
		len(c.Jobs) != 1 || c.Jobs[0].ID != "later" {
		t.Fatalf("claim after the expiries: %v %v", c.Jobs, err)
	}
	// Nothing is left for a pass to look at.
	if ids, more, err := f.stall.Expire(ctx, f.queue, 10); err != nil || len(ids) != 0 || more {
		t.Fatalf("an idle pass: %v %v %v", ids, more, err)
	}
}

// A throttle window that ended is let go by the pass, so an idle queue
// keeps no key for it; a key another mode took over stays.
func TestExpireLetsEndedThrottlesGo(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	rdb := redistest.Client(t)
	q := keyspace.NewQueue(prefix, f.queue)
	var jobs []lease.NewJob
	for i := range 5 {
		jobs = append(jobs, lease.NewJob{ID: fmt.Sprintf("t%d", i),
			Dedupe: lease.Dedupe{Key: fmt.Sprintf("k%d", i), Mode: lease.DedupeThrottle, Window: 50 * time.Millisecond}})
	}
	if _, err := f.leases.Enqueue(ctx, f.queue, jobs); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	// k0 is taken over by an until_done job once its throttled job is
	// gone (a removal leaves a throttle's key to its window).
	if err := f.admin.Remove(ctx, f.queue, "t0", false, admin.Actor{Name: "test", Role: "admin"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.leases.Enqueue(ctx, f.queue, []lease.NewJob{{ID: "u0",
		Dedupe: lease.Dedupe{Key: "k0", Mode: lease.DedupeUntilDone}}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.stall.Expire(ctx, f.queue, 100); err != nil {
		t.Fatal(err)
	}
	held, err := rdb.HGetAll(ctx, q.AdmissionKeys()[0]).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(held) != 1 || held["k0"] != "u0" {
		t.Fatalf("dedupe keys after the pass: %v, want k0 held by u0 alone", held)
	}
	if n := rdb.Exists(ctx, q.AdmissionKeys()[1]).Val(); n != 0 {
		t.Fatalf("the throttle windows are still kept")
	}
	// An obliterate leaves none of the admission keys.
	if _, err := f.admin.Obliterate(ctx, f.queue, true); err != nil {
		t.Fatal(err)
	}
	if n := rdb.Exists(ctx, q.AdmissionKeys()...).Val(); n != 0 {
		t.Fatalf("%d admission keys left after obliterate", n)
	}
}
