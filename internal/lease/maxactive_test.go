package lease_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/lease"
)

// A claim with MaxActive (a push delivery's, docs/push.md) takes no more
// jobs than leave the queue's active set at most MaxActive, counting every
// holder's jobs, and claims racing for the room never exceed it together.
func TestClaimMaxActiveCapsTheActiveSet(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	for range 40 {
		f.enqueue(t, lease.NewJob{})
	}
	worker := f.claimOne(t, time.Hour) // a worker's job counts too
	capped := lease.ClaimParams{Count: 10, Lease: time.Hour, MaxActive: 5}
	c, err := f.leases.Claim(ctx, f.queue, capped)
	if err != nil || len(c.Jobs) != 4 {
		t.Fatalf("a capped claim with 1 active of 5: %d jobs, %v; want 4", len(c.Jobs), err)
	}
	if c, err = f.leases.Claim(ctx, f.queue, capped); err != nil || len(c.Jobs) != 0 {
		t.Fatalf("a capped claim with 5 active of 5: %d jobs, %v; want none", len(c.Jobs), err)
	}
	if _, _, err := f.leases.Complete(ctx, f.queue, worker.ID, worker.Token, nil, nil); err != nil {
		t.Fatal(err)
	}
	if c, err = f.leases.Claim(ctx, f.queue, capped); err != nil || len(c.Jobs) != 1 {
		t.Fatalf("a capped claim once one finished: %d jobs, %v; want 1", len(c.Jobs), err)
	}
	if c, err = f.leases.Claim(ctx, f.queue, lease.ClaimParams{Count: 3, Lease: time.Hour}); err != nil || len(c.Jobs) != 3 {
		t.Fatalf("a worker's claim is not capped: %d jobs, %v; want 3", len(c.Jobs), err)
	}

	// Eight claimers race on a fresh queue capped at 7.
	g := newFixture(t)
	for range 40 {
		g.enqueue(t, lease.NewJob{})
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	taken := 0
	for range 8 {
		wg.Go(func() {
			c, err := g.leases.Claim(ctx, g.queue, lease.ClaimParams{Count: 3, Lease: time.Hour, MaxActive: 7})
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			taken += len(c.Jobs)
			mu.Unlock()
		})
	}
	wg.Wait()
	if active, err := g.rdb.ZCard(ctx, prefix+":{"+g.queue+"}:active").Result(); err != nil || taken != 7 || active != 7 {
		t.Fatalf("racing capped claims took %d, %d active (%v); want 7", taken, active, err)
	}
}
