package lease_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/admin"
	"github.com/echo-mq/echo_mq/internal/flow"
	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/lease"
	"github.com/echo-mq/echo_mq/lua"
)

// setSettings puts s on the fixture's queue.
func (f fixture) setSettings(t testing.TB, s flow.Settings) {
	t.Helper()
	if err := f.admin.SetSettings(context.Background(), f.queue, s, "{}", admin.Actor{}); err != nil {
		t.Fatalf("SetSettings: %v", err)
	}
}

// enqueueGroup adds n jobs to group g (none: ""), in order, with ids
// "<g>-<i>", in batches.
func (f fixture) enqueueGroup(t testing.TB, g string, n int) {
	t.Helper()
	for first := 0; first < n; first += 1000 {
		var jobs []lease.NewJob
		for i := first; i < min(first+1000, n); i++ {
			jobs = append(jobs, lease.NewJob{ID: fmt.Sprintf("%s-%d", or(g, "none"), i), Group: g,
				Payload: json.RawMessage(`{}`)})
		}
		if _, err := f.leases.Enqueue(context.Background(), f.queue, jobs); err != nil {
			t.Fatalf("Enqueue: %v", err)
		}
	}
}

func or(s, otherwise string) string {
	if s == "" {
		return otherwise
	}
	return s
}

// claim claims up to n jobs with a 30 s lease.
func (f fixture) claim(t testing.TB, n int) lease.Claimed {
	t.Helper()
	c, err := f.leases.Claim(context.Background(), f.queue, lease.ClaimParams{Count: n})
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	return c
}

func (f fixture) complete(t testing.TB, j job.Job) {
	t.Helper()
	if _, _, err := f.leases.Complete(context.Background(), f.queue, j.ID, j.Token, nil, nil); err != nil {
		t.Fatalf("Complete %s: %v", j.ID, err)
	}
}

func intp(n int) *int { return &n }

func TestAQueueWithoutSettingsClaimsAsBefore(t *testing.T) {
	f := newFixture(t)
	f.enqueueGroup(t, "", 3)
	c := f.claim(t, 5)
	if len(c.Jobs) != 3 || c.Held != "" || c.RetryAfter != -1 {
		t.Fatalf("claim = %d jobs, held %q, retry %v; want 3, none, -1", len(c.Jobs), c.Held, c.RetryAfter)
	}
}

func TestConcurrencyHoldsAcrossClaims(t *testing.T) {
	f := newFixture(t)
	f.setSettings(t, flow.Settings{Concurrency: intp(3)})
	f.enqueueGroup(t, "", 10)
	c := f.claim(t, 10)
	if len(c.Jobs) != 3 || c.Held != flow.HeldConcurrency || c.RetryAfter <= 0 || c.RetryAfter > time.Second {
		t.Fatalf("claim = %d jobs, held %q, retry %v; want 3, concurrency, (0, 1s]", len(c.Jobs), c.Held, c.RetryAfter)
	}
	if again := f.claim(t, 1); len(again.Jobs) != 0 || again.Held != flow.HeldConcurrency {
		t.Fatalf("a claim at the limit got %d jobs, held %q", len(again.Jobs), again.Held)
	}
	f.complete(t, c.Jobs[0])
	if next := f.claim(t, 10); len(next.Jobs) != 1 {
		t.Fatalf("after one complete a claim got %d jobs, want 1", len(next.Jobs))
	}
}

func TestRateLimitCountsStartsInTheWindow(t *testing.T) {
	f := newFixture(t)
	f.setSettings(t, flow.Settings{RateLimit: &flow.Rate{Limit: 5, WindowMS: 1000}})
	f.enqueueGroup(t, "", 20)
	c := f.claim(t, 3)
	if len(c.Jobs) != 3 || c.Held != "" {
		t.Fatalf("first claim = %d jobs, held %q; want 3, none", len(c.Jobs), c.Held)
	}
	for _, j := range c.Jobs {
		f.complete(t, j) // finishing frees no room: the limit counts starts
	}
	c = f.claim(t, 10)
	if len(c.Jobs) != 2 || c.Held != flow.HeldRateLimit || c.RetryAfter <= 0 || c.RetryAfter > time.Second {
		t.Fatalf("second claim = %d jobs, held %q, retry %v; want 2, rate_limit, (0, 1s]", len(c.Jobs), c.Held, c.RetryAfter)
	}
	time.Sleep(c.RetryAfter + 20*time.Millisecond)
	if c = f.claim(t, 10); len(c.Jobs) == 0 {
		t.Fatalf("after retry_after a claim got nothing (held %q, retry %v)", c.Held, c.RetryAfter)
	}
}

func TestASmallGroupIsNotStarvedByALargeOne(t *testing.T) {
	f := newFixture(t)
	f.enqueueGroup(t, "A", 10_000)
	f.enqueueGroup(t, "B", 10)
	fromB := 0
	for i := 0; i < 30; i++ {
		c := f.claim(t, 1)
		if len(c.Jobs) != 1 {
			t.Fatalf("claim %d got %d jobs", i, len(c.Jobs))
		}
		if c.Jobs[0].Group == "B" {
			fromB++
		}
	}
	if fromB != 10 {
		t.Fatalf("%d of group B's 10 jobs started among the first 30 claims, want all", fromB)
	}
}

func TestUngroupedJobsTakeTurnsWithGroups(t *testing.T) {
	f := newFixture(t)
	f.enqueueGroup(t, "A", 5)
	f.enqueueGroup(t, "", 5)
	c := f.claim(t, 4)
	groups := map[string]int{}
	for _, j := range c.Jobs {
		groups[j.Group]++
	}
	if groups["A"] != 2 || groups[""] != 2 {
		t.Fatalf("a claim of 4 took %v, want 2 of A and 2 without a group", groups)
	}
}

func TestGroupConcurrencyIsPerGroup(t *testing.T) {
	f := newFixture(t)
	f.setSettings(t, flow.Settings{GroupConcurrency: intp(2)})
	f.enqueueGroup(t, "A", 5)
	f.enqueueGroup(t, "B", 5)
	c := f.claim(t, 10)
	if len(c.Jobs) != 4 || c.Held != flow.HeldGroupConcurrency {
		t.Fatalf("claim = %d jobs, held %q; want 4, group_concurrency", len(c.Jobs), c.Held)
	}
	var a job.Job
	for _, j := range c.Jobs {
		if j.Group == "A" {
			a = j
		}
	}
	f.complete(t, a)
	next := f.claim(t, 10)
	if len(next.Jobs) != 1 || next.Jobs[0].Group != "A" {
		t.Fatalf("after A's complete a claim got %v, want one of A", next.Jobs)
	}
}

func TestGroupRateLimitIsPerGroup(t *testing.T) {
	f := newFixture(t)
	f.setSettings(t, flow.Settings{GroupRateLimit: &flow.Rate{Limit: 2, WindowMS: 60_000}})
	f.enqueueGroup(t, "A", 5)
	f.enqueueGroup(t, "B", 5)
	c := f.claim(t, 10)
	if len(c.Jobs) != 4 || c.Held != flow.HeldGroupRateLimit || c.RetryAfter < 50*time.Second {
		t.Fatalf("claim = %d jobs, held %q, retry %v; want 4, group_rate_limit, about a minute", len(c.Jobs), c.Held, c.RetryAfter)
	}
}

func TestFIFOGroupRunsOneJobAtATimeAndARetryKeepsItsHead(t *testing.T) {
	f := newFixture(t)
	f.setSettings(t, flow.Settings{FIFO: true})
	f.enqueueGroup(t, "A", 3)
	c := f.claim(t, 5)
	if len(c.Jobs) != 1 || c.Jobs[0].ID != "A-0" || c.Held != flow.HeldGroupOrder {
		t.Fatalf("claim = %v, held %q; want A-0 alone, group_order", c.Jobs, c.Held)
	}
	retry := 50 * time.Millisecond
	if _, err := f.leases.Fail(context.Background(), f.queue, "A-0", lease.FailParams{Token: c.Jobs[0].Token, Error: "x", RetryIn: &retry}); err != nil {
		t.Fatal(err)
	}
	if c = f.claim(t, 5); len(c.Jobs) != 0 {
		t.Fatalf("while A-0 waits for its retry a claim got %v", c.Jobs)
	}
	time.Sleep(2 * retry)
	if c = f.claim(t, 5); len(c.Jobs) != 1 || c.Jobs[0].ID != "A-0" {
		t.Fatalf("after the retry delay a claim got %v, want A-0", c.Jobs)
	}
	f.complete(t, c.Jobs[0])
	if c = f.claim(t, 5); len(c.Jobs) != 1 || c.Jobs[0].ID != "A-1" {
		t.Fatalf("after A-0 completed a claim got %v, want A-1", c.Jobs)
	}
}

func TestAPausedGroupIsNotClaimed(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.enqueueGroup(t, "A", 2)
	f.enqueueGroup(t, "B", 2)
	g, err := f.admin.SetGroupPaused(ctx, f.queue, "A", true, admin.Actor{})
	if err != nil || !g.Paused || g.Pending != 2 {
		t.Fatalf("pause = %+v, %v", g, err)
	}
	c := f.claim(t, 4)
	if len(c.Jobs) != 2 || c.Jobs[0].Group != "B" || c.Held != flow.HeldGroupPaused {
		t.Fatalf("claim = %v, held %q; want B's two, group_paused", c.Jobs, c.Held)
	}
	if _, err := f.admin.SetGroupPaused(ctx, f.queue, "A", false, admin.Actor{}); err != nil {
		t.Fatal(err)
	}
	if c = f.claim(t, 4); len(c.Jobs) != 2 || c.Jobs[0].Group != "A" {
		t.Fatalf("after resume a claim got %v, want A's two", c.Jobs)
	}
	groups, next, err := f.admin.Groups(ctx, f.queue, "", 10)
	if err != nil || next != "" || len(groups) != 2 || groups[0].Active != 2 || groups[1].Active != 2 {
		t.Fatalf("groups = %+v, %q, %v", groups, next, err)
	}
}

func TestEverySlotIsFreedWhenItsJobLeaves(t *testing.T) {
	ctx := context.Background()
	leave := map[string]func(f fixture, j job.Job){
		"complete": func(f fixture, j job.Job) { f.complete(t, j) },
		"fail": func(f fixture, j job.Job) {
			if _, err := f.leases.Fail(ctx, f.queue, j.ID, lease.FailParams{Token: j.Token, Error: "x", Fatal: true}); err != nil {
				t.Fatal(err)
			}
		},
		"remove": func(f fixture, j job.Job) {
			if err := f.admin.Remove(ctx, f.queue, j.ID, true, admin.Actor{}); err != nil {
				t.Fatal(err)
			}
		},
		"sweep": func(f fixture, j job.Job) {
			if _, err := f.leases.Extend(ctx, f.queue, j.ID, lease.ExtendParams{Token: j.Token, Lease: 100 * time.Millisecond}); err != nil {
				t.Fatal(err)
			}
			time.Sleep(150 * time.Millisecond)
			f.sweep(t)
		},
		"cancel": func(f fixture, j job.Job) {
			if _, _, err := f.leases.Cancel(ctx, f.queue, j.ID, lease.CancelParams{}); err != nil {
				t.Fatal(err)
			}
			if _, err := f.leases.Fail(ctx, f.queue, j.ID, lease.FailParams{Token: j.Token, Error: "cancelled"}); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, leaveFn := range leave {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			f.setSettings(t, flow.Settings{Concurrency: intp(1), GroupConcurrency: intp(1), FIFO: true})
			f.enqueueGroup(t, "A", 3)
			c := f.claim(t, 3)
			if len(c.Jobs) != 1 {
				t.Fatalf("claim got %d jobs, want 1", len(c.Jobs))
			}
			leaveFn(f, c.Jobs[0])
			c = f.claim(t, 3)
			if len(c.Jobs) != 1 {
				t.Fatalf("after %s a claim got %d jobs (held %q), want 1", name, len(c.Jobs), c.Held)
			}
		})
	}
}

func TestAClaimWithNothingWaitingIsNotHeld(t *testing.T) {
	f := newFixture(t)
	f.setSettings(t, flow.Settings{Concurrency: intp(1), FIFO: true})
	f.enqueueGroup(t, "A", 1)
	if c := f.claim(t, 1); len(c.Jobs) != 1 {
		t.Fatalf("claim got %d jobs", len(c.Jobs))
	}
	// The queue is at its concurrency and group A's holder is active, but
	// no job waits: the claim is empty, not held back.
	if c := f.claim(t, 1); len(c.Jobs) != 0 || c.Held != "" || c.RetryAfter != -1 {
		t.Fatalf("claim = %d jobs, held %q, retry %v; want none, not held", len(c.Jobs), c.Held, c.RetryAfter)
	}
}

func TestARetriedDeadGroupedJobListsItsGroupAgain(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.enqueueGroup(t, "A", 1)
	c := f.claim(t, 1)
	if _, err := f.leases.Fail(ctx, f.queue, c.Jobs[0].ID, lease.FailParams{Token: c.Jobs[0].Token, Error: "x", Fatal: true}); err != nil {
		t.Fatal(err)
	}
	if groups, _, _ := f.admin.Groups(ctx, f.queue, "", 10); len(groups) != 0 {
		t.Fatalf("with its only job dead group A is still listed: %+v", groups)
	}
	if _, err := f.admin.Retry(ctx, f.queue, c.Jobs[0].ID, admin.Actor{}); err != nil {
		t.Fatal(err)
	}
	groups, _, err := f.admin.Groups(ctx, f.queue, "", 10)
	if err != nil || len(groups) != 1 || groups[0].Name != "A" || groups[0].Pending != 1 {
		t.Fatalf("after the retry the groups are %+v, %v; want A with 1 pending", groups, err)
	}
	if again := f.claim(t, 1); len(again.Jobs) != 1 || again.Jobs[0].ID != c.Jobs[0].ID {
		t.Fatalf("after the retry a claim got %v", again.Jobs)
	}
}

// A drain removes jobs in bounded steps and puts the groups right at its
// last: a claim between two steps skips what the drain already took.
func TestAClaimBetweenDrainStepsSkipsWhatTheDrainTook(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.enqueueGroup(t, "A", 3)
	step := lua.DrainArgs{Limit: 1}.Call(keyspace.NewQueue(prefix, f.queue))
	if err := lua.NewRunner(f.rdb).Run(ctx, step).Err(); err != nil {
		t.Fatal(err)
	}
	c := f.claim(t, 2)
	if len(c.Jobs) != 2 || c.Jobs[0].ID != "A-1" || c.Jobs[1].ID != "A-2" {
		t.Fatalf("a claim after one drain step got %v, want A-1 and A-2", c.Jobs)
	}
	if n := f.rdb.ZCard(ctx, keyspace.NewQueue(prefix, f.queue).GroupPending()).Val(); n != 0 {
		t.Fatalf("%d entries left in the group index", n)
	}
}

// drainStep runs one bounded step of a drain, as admin.Drain does until a
// step removes fewer than limit.
func (f fixture) drainStep(t *testing.T, limit int) {
	t.Helper()
	step := lua.DrainArgs{Limit: limit}.Call(keyspace.NewQueue(prefix, f.queue))
	if err := lua.NewRunner(f.rdb).Run(context.Background(), step).Err(); err != nil {
		t.Fatal(err)
	}
}

func (f fixture) enqueueOne(t *testing.T, id, group string) {
	t.Helper()
	if _, err := f.leases.Enqueue(context.Background(), f.queue, []lease.NewJob{{ID: id, Group: group, Payload: json.RawMessage(`{}`)}}); err != nil {
		t.Fatal(err)
	}
}

// An id a drain step deleted and that is enqueued again without a group is
// not claimed as its old group's job (found by review: the group's
// counters drifted and a fifo group stuck for good).
func TestAJobADrainStepDeletedLeavesItsGroupForGood(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.setSettings(t, flow.Settings{FIFO: true})
	f.enqueueOne(t, "U", "")
	f.enqueueOne(t, "A-0", "A")
	f.enqueueOne(t, "A-1", "A")
	f.drainStep(t, 2) // deletes U and A-0, and is not the last step
	f.enqueueOne(t, "U2", "")
	f.enqueueOne(t, "A-0", "") // the same id, no group now
	c := f.claim(t, 3)
	byID := map[string]job.Job{}
	for _, j := range c.Jobs {
		byID[j.ID] = j
	}
	if len(c.Jobs) != 3 || byID["A-1"].Group != "A" {
		t.Fatalf("claim got %v, want U2, A-0 without a group and A-1 of group A", c.Jobs)
	}
	for _, j := range c.Jobs {
		f.complete(t, j)
	}
	flowHash := f.rdb.HGetAll(ctx, keyspace.NewQueue(prefix, f.queue).Flow()).Val()
	if (flowHash["a:A"] != "0" && flowHash["a:A"] != "") || flowHash["h:A"] != "" {
		t.Fatalf("group A after its jobs completed: %v, want a:A 0 and no holder", flowHash)
	}
	f.enqueueOne(t, "A-2", "A")
	if c = f.claim(t, 1); len(c.Jobs) != 1 || c.Jobs[0].ID != "A-2" {
		t.Fatalf("group A's next job is not claimed: %v (held %q)", c.Jobs, c.Held)
	}
}

// A drain that stops after a step that deleted a fifo group's holder
// leaves the group free to go on.
func TestADrainStoppedHalfWayLeavesNoGroupHeld(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.setSettings(t, flow.Settings{FIFO: true})
	f.enqueueGroup(t, "A", 3)
	c := f.claim(t, 1)
	zero := time.Duration(0)
	if _, err := f.leases.Fail(ctx, f.queue, c.Jobs[0].ID, lease.FailParams{Token: c.Jobs[0].Token, Error: "x", RetryIn: &zero}); err != nil {
		t.Fatal(err)
	}
	f.drainStep(t, 1) // deletes A-0, the pending holder; the drain stops here
	if c = f.claim(t, 1); len(c.Jobs) != 1 || c.Jobs[0].ID != "A-1" {
		t.Fatalf("after the holder was drained a claim got %v (held %q), want A-1", c.Jobs, c.Held)
	}
}

func TestObliterateDeletesTheFlowControlKeysAlways(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.setSettings(t, flow.Settings{RateLimit: &flow.Rate{Limit: 5, WindowMS: 60000}})
	f.enqueueGroup(t, "", 2)
	for _, j := range f.claim(t, 2).Jobs {
		f.complete(t, j)
	}
	f.setSettings(t, flow.Settings{}) // no settings left, but the rate log is
	if _, err := f.admin.Obliterate(ctx, f.queue, false); err != nil {
		t.Fatal(err)
	}
	for _, k := range keyspace.NewQueue(prefix, f.queue).Keys() {
		if f.rdb.Exists(ctx, k).Val() == 1 {
			t.Errorf("%s is left after the obliterate", k)
		}
	}
}

func TestFIFOTurnedOnWaitsForTheGroupsRunningJobs(t *testing.T) {
	f := newFixture(t)
	f.enqueueGroup(t, "A", 4)
	running := f.claim(t, 2)
	f.setSettings(t, flow.Settings{FIFO: true})
	if c := f.claim(t, 2); len(c.Jobs) != 0 || c.Held != flow.HeldGroupOrder {
		t.Fatalf("with two of A running, fifo turned on, a claim got %v (held %q)", c.Jobs, c.Held)
	}
	f.complete(t, running.Jobs[0])
	if c := f.claim(t, 2); len(c.Jobs) != 0 {
		t.Fatalf("with one of A still running a claim got %v", c.Jobs)
	}
	f.complete(t, running.Jobs[1])
	if c := f.claim(t, 2); len(c.Jobs) != 1 || c.Jobs[0].ID != "A-2" {
		t.Fatalf("once A's jobs finished a claim got %v, want A-2 alone", c.Jobs)
	}
}

// A grouped job whose row was lost (outside any migration: evicted, or
// deleted by hand) is dropped by the claim that finds it, and gives back
// its group's slot and fifo hold.
func TestALostGroupedRowGivesItsSlotBack(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.setSettings(t, flow.Settings{FIFO: true, GroupConcurrency: intp(1)})
	f.enqueueGroup(t, "A", 2)
	f.rdb.Del(ctx, keyspace.NewQueue(prefix, f.queue).Job("A-0"))
	if c := f.claim(t, 1); len(c.Jobs) != 0 {
		t.Fatalf("the claim that found A-0's row lost got %v", c.Jobs)
	}
	if c := f.claim(t, 1); len(c.Jobs) != 1 || c.Jobs[0].ID != "A-1" {
		t.Fatalf("the next claim got %v (held %q), want A-1", c.Jobs, c.Held)
	}
}
