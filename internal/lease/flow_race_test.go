package lease_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/flow"
	"github.com/echo-mq/echo_mq/internal/lease"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

// replicas are n lease services on clients of their own, as n service
// replicas over one Redis are.
func replicas(t *testing.T, n int) []*lease.Service {
	out := make([]*lease.Service, n)
	for i := range out {
		out[i] = lease.NewService(redistest.Client(t), prefix)
	}
	return out
}

// A worker counts a job as held from when its claim answered until before
// it reports: so the count is never above what Redis has active, and a
// count above a limit is a limit broken.
func TestLimitsHoldUnderRacingWorkersAndReplicas(t *testing.T) {
	const workers, jobs, limit, groupLimit = 8, 400, 5, 2
	f := newFixture(t)
	f.setSettings(t, flow.Settings{Concurrency: intp(limit), GroupConcurrency: intp(groupLimit)})
	for g := 0; g < 4; g++ {
		f.enqueueGroup(t, "g"+strconv.Itoa(g), jobs/4)
	}
	services := replicas(t, 2)
	var held, most atomic.Int64
	var groupHeld [4]atomic.Int64
	var groupMost atomic.Int64
	var done atomic.Int64
	var wg sync.WaitGroup
	ctx := context.Background()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(svc *lease.Service) {
			defer wg.Done()
			for done.Load() < jobs {
				c, err := svc.Claim(ctx, f.queue, lease.ClaimParams{Count: 3})
				if err != nil {
					t.Error(err)
					return
				}
				for _, j := range c.Jobs {
					g, _ := strconv.Atoi(strings.TrimPrefix(j.Group, "g"))
					raise(&most, held.Add(1))
					raise(&groupMost, groupHeld[g].Add(1))
				}
				time.Sleep(time.Millisecond)
				for _, j := range c.Jobs {
					g, _ := strconv.Atoi(strings.TrimPrefix(j.Group, "g"))
					held.Add(-1)
					groupHeld[g].Add(-1)
					if _, _, err := svc.Complete(ctx, f.queue, j.ID, j.Token, nil, nil); err != nil {
						t.Error(err)
						return
					}
					done.Add(1)
				}
			}
		}(services[w%2])
	}
	wg.Wait()
	if most.Load() > limit || groupMost.Load() > groupLimit {
		t.Fatalf("at most %d jobs held at once (limit %d), %d of one group (limit %d)",
			most.Load(), limit, groupMost.Load(), groupLimit)
	}
	if most.Load() < limit {
		t.Logf("the workers never filled the limit (most %d of %d)", most.Load(), limit)
	}
}

func raise(most *atomic.Int64, v int64) {
	for {
		m := most.Load()
		if v <= m || most.CompareAndSwap(m, v) {
			return
		}
	}
}

func TestRateLimitHoldsUnderRacingReplicas(t *testing.T) {
	const limit, window = 20, 200 * time.Millisecond
	f := newFixture(t)
	f.setSettings(t, flow.Settings{RateLimit: &flow.Rate{Limit: limit, WindowMS: window.Milliseconds()}})
	f.enqueueGroup(t, "", 200)
	services := replicas(t, 2)
	ctx := context.Background()
	var mu sync.Mutex
	var starts []time.Time // the server's started_at of every claim
	var wg sync.WaitGroup
	deadline := time.Now().Add(time.Second)
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func(svc *lease.Service) {
			defer wg.Done()
			for time.Now().Before(deadline) {
				c, err := svc.Claim(ctx, f.queue, lease.ClaimParams{Count: 4})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, j := range c.Jobs {
					starts = append(starts, j.StartedAt)
				}
				mu.Unlock()
			}
		}(services[w%2])
	}
	wg.Wait()
	// Every window of 200 ms, on the server's clock, holds at most 20 starts.
	for _, from := range starts {
		in := 0
		for _, at := range starts {
			if !at.Before(from) && at.Before(from.Add(window)) {
				in++
			}
		}
		if in > limit {
			t.Fatalf("%d claims started in the 200 ms from %s, limit %d", in, from.Format(time.StampMilli), limit)
		}
	}
	if len(starts) < limit*3 {
		t.Fatalf("only %d claims started in a second under a limit of %d per 200 ms", len(starts), limit)
	}
}

// 8 workers race over 20 fifo groups of 50 jobs, failing a fifth of their
// attempts (retried soon): every group's jobs complete in enqueue order,
// never two of one group held at once.
func TestFIFOGroupsCompleteInOrderUnderRacingWorkers(t *testing.T) {
	const groups, perGroup, workers = 20, 50, 8
	f := newFixture(t)
	f.setSettings(t, flow.Settings{FIFO: true})
	for i := 0; i < perGroup; i++ {
		var batch []lease.NewJob
		for g := 0; g < groups; g++ {
			batch = append(batch, lease.NewJob{ID: fmt.Sprintf("g%d-%d", g, i), Group: fmt.Sprintf("g%d", g),
				Payload: json.RawMessage(`{}`), MaxAttempts: 1000})
		}
		if _, err := f.leases.Enqueue(context.Background(), f.queue, batch); err != nil {
			t.Fatal(err)
		}
	}
	services := replicas(t, 2)
	ctx := context.Background()
	var mu sync.Mutex
	order := map[string][]int{}
	held := map[string]int{}
	var done atomic.Int64
	var wg sync.WaitGroup
	stop := time.Now().Add(60 * time.Second)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(svc *lease.Service, rng *rand.Rand) {
			defer wg.Done()
			for done.Load() < groups*perGroup && time.Now().Before(stop) {
				c, err := svc.Claim(ctx, f.queue, lease.ClaimParams{Count: 2})
				if err != nil {
					t.Error(err)
					return
				}
				if len(c.Jobs) == 0 {
					time.Sleep(time.Millisecond)
				}
				for _, j := range c.Jobs {
					mu.Lock()
					held[j.Group]++
					if held[j.Group] > 1 {
						t.Errorf("group %s: two jobs held at once", j.Group)
					}
					mu.Unlock()
				}
				for _, j := range c.Jobs {
					n, _ := strconv.Atoi(j.ID[strings.IndexByte(j.ID, '-')+1:])
					mu.Lock()
					held[j.Group]--
					mu.Unlock()
					if rng.IntN(5) == 0 {
						retry := time.Duration(rng.IntN(3)) * time.Millisecond
						if _, err := svc.Fail(ctx, f.queue, j.ID, lease.FailParams{Token: j.Token, Error: "x", RetryIn: &retry}); err != nil {
							t.Error(err)
						}
						continue
					}
					mu.Lock() // before the complete: the group's next job cannot start before it
					order[j.Group] = append(order[j.Group], n)
					mu.Unlock()
					if _, _, err := svc.Complete(ctx, f.queue, j.ID, j.Token, nil, nil); err != nil {
						t.Error(err)
					}
					done.Add(1)
				}
			}
		}(services[w%2], rand.New(rand.NewPCG(uint64(w), 7)))
	}
	wg.Wait()
	if done.Load() != groups*perGroup {
		t.Fatalf("%d of %d jobs completed", done.Load(), groups*perGroup)
	}
	for g, got := range order {
		for i, n := range got {
			if n != i {
				t.Fatalf("group %s completed in the order %v", g, got)
			}
		}
	}
}
