package lease_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/lease"
)

// TestRacingWorkersCompleteEveryJobExactlyOnce runs 32 workers over 2,000
// jobs with leases short enough that some lapse and get swept while their
// holders still work: every job must be completed exactly once, and every
// call of a holder that lost its job must be refused.
func TestRacingWorkersCompleteEveryJobExactlyOnce(t *testing.T) {
	t.Parallel()
	const jobs, workers = 2000, 32
	f := newFixture(t)
	ctx := context.Background()
	batch := make([]lease.NewJob, jobs)
	for i := range batch {
		batch[i] = lease.NewJob{ID: fmt.Sprintf("job-%d", i)}
	}
	if _, err := f.leases.Enqueue(ctx, f.queue, batch); err != nil {
		t.Fatal(err)
	}

	var completions sync.Map // id -> *atomic.Int32
	var done, refused atomic.Int32
	stopSweeper := make(chan struct{})
	var wg sync.WaitGroup
	go func() { // a reaper racing the workers
		for {
			select {
			case <-stopSweeper:
				return
			case <-time.After(5 * time.Millisecond):
				if _, err := f.stall.Sweep(ctx, f.queue, stallParams); err != nil {
					t.Error(err)
				}
			}
		}
	}()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done.Load() < jobs {
				c, err := f.leases.Claim(ctx, f.queue, lease.ClaimParams{Count: 2, Lease: 100 * time.Millisecond, Worker: fmt.Sprint(w)})
				if err != nil {
					t.Error(err)
					return
				}
				if len(c.Jobs) == 0 {
					time.Sleep(time.Millisecond)
					continue
				}
				for i, j := range c.Jobs {
					if (j.Attempts+i+w)%17 == 0 {
						time.Sleep(120 * time.Millisecond) // a slow worker: its lease lapses
					}
					_, _, err := f.leases.Complete(ctx, f.queue, j.ID, j.Token, nil, nil)
					if err != nil {
						refused.Add(1)
						continue
					}
					n, _ := completions.LoadOrStore(j.ID, new(atomic.Int32))
					if n.(*atomic.Int32).Add(1) == 1 {
						done.Add(1)
					}
				}
			}
		}()
	}
	wg.Wait()
	close(stopSweeper)

	for i := range jobs {
		id := fmt.Sprintf("job-%d", i)
		n, ok := completions.Load(id)
		if !ok || n.(*atomic.Int32).Load() != 1 {
			t.Fatalf("%s completed %v times, want exactly once", id, n)
		}
		if got := f.get(t, id); got.State != "completed" {
			t.Fatalf("%s is %s, want completed", id, got.State)
		}
	}
	if refused.Load() == 0 {
		t.Fatal("no late complete was refused: no lease lapsed, so the fence was not exercised")
	}
	t.Logf("%d jobs completed once each; %d late completes refused", jobs, refused.Load())
}
