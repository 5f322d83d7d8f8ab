package admin_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/admin"
	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/lease"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

func TestMain(m *testing.M) { os.Exit(redistest.Run(m)) }

// fixture is the admin and lease services on the shared test Redis under a
// key prefix of the test's own (the queues set is per prefix), and a queue.
type fixture struct {
	admin  *admin.Service
	leases *lease.Service
	rdb    redis.UniversalClient
	prefix string
	queue  string
}

var anyone = admin.Actor{Name: "tester", Role: "admin"}

func newFixture(t testing.TB) fixture {
	t.Helper()
	rdb := redistest.Client(t)
	prefix := "admt-" + redistest.Queue(t)
	return fixture{admin: admin.NewService(rdb, prefix), leases: lease.NewService(rdb, prefix, lease.KeepCompleted(0)),
		rdb: rdb, prefix: prefix, queue: redistest.Queue(t)}
}

// add enqueues n jobs id0000.. with the delay, in one batch per 1000.
func (f fixture) add(t testing.TB, id string, from, n int, delay time.Duration) {
	t.Helper()
	for start := from; start < from+n; start += 1000 {
		var jobs []lease.NewJob
		for i := start; i < min(start+1000, from+n); i++ {
			jobs = append(jobs, lease.NewJob{ID: fmt.Sprintf("%s%04d", id, i), Payload: json.RawMessage("1"), Delay: delay})
		}
		if _, err := f.leases.Enqueue(context.Background(), f.queue, jobs); err != nil {
			t.Fatal(err)
		}
	}
}

// claim claims up to n jobs, 100 at a time.
func (f fixture) claim(t testing.TB, n int, leaseFor time.Duration) []job.Job {
	t.Helper()
	var out []job.Job
	for len(out) < n {
		c, err := f.leases.Claim(context.Background(), f.queue, lease.ClaimParams{Count: min(100, n-len(out)), Lease: leaseFor})
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Jobs) == 0 {
			break
		}
		out = append(out, c.Jobs...)
	}
	return out
}

// completeAll completes held in one batch: one step, so one finish time.
func (f fixture) completeAll(t testing.TB, held []job.Job) {
	t.Helper()
	if len(held) == 0 {
		return
	}
	batch := make([]lease.Completion, len(held))
	for i, j := range held {
		batch[i] = lease.Completion{ID: j.ID, Token: j.Token}
	}
	out, _, err := f.leases.CompleteBatch(context.Background(), f.queue, batch, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range out {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
	}
}

// listAll pages through state by limit and returns the ids in order.
func (f fixture) listAll(t testing.TB, state string, limit int) []string {
	t.Helper()
	var got []string
	cursor := ""
	for range 10_000 {
		page, err := f.admin.List(context.Background(), f.queue, state, cursor, limit)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Jobs) > limit {
			t.Fatalf("a page of %d jobs, over the limit %d", len(page.Jobs), limit)
		}
		for _, j := range page.Jobs {
			got = append(got, j.ID)
		}
		if page.Next == "" {
			return got
		}
		cursor = page.Next
	}
	t.Fatal("the listing never ended")
	return nil
}

// keys lists every key under the queue's hash tag.
func (f fixture) keys(t testing.TB) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	iter := f.rdb.Scan(ctx, 0, keyspace.NewQueue(f.prefix, f.queue).Base()+"*", 1000).Iterator()
	for iter.Next(ctx) {
		out = append(out, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func ids(from, to int, prefix string, desc bool) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("%s%04d", prefix, i))
	}
	if desc {
		slices.Reverse(out)
	}
	return out
}

func TestListCursorThroughTies(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.add(t, "c", 0, 50, 0)
	f.completeAll(t, f.claim(t, 50, time.Minute))
	for _, limit := range []int{1, 7, 49, 50, 51} {
		if got, want := f.listAll(t, job.StateCompleted, limit), ids(0, 50, "c", true); !slices.Equal(got, want) {
			t.Errorf("limit %d: got %v, want %v", limit, got, want)
		}
	}
}

// TestListCursorSurvivesItsJob: a cursor names a place, not a job: it
// still works when the job it was taken at is gone.
func TestListCursorSurvivesItsJob(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	f.add(t, "c", 0, 20, 0)
	f.completeAll(t, f.claim(t, 20, time.Minute))
	first, err := f.admin.List(ctx, f.queue, job.StateCompleted, "", 5)
	if err != nil {
		t.Fatal(err)
	}
	last := first.Jobs[len(first.Jobs)-1].ID
	if err := f.admin.Remove(ctx, f.queue, last, false, anyone); err != nil {
		t.Fatal(err)
	}
	next, err := f.admin.List(ctx, f.queue, job.StateCompleted, first.Next, 5)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, j := range next.Jobs {
		got = append(got, j.ID)
	}
	if want := ids(10, 15, "c", true); !slices.Equal(got, want) {
		t.Errorf("the page after %s (removed) = %v, want %v", last, got, want)
	}
}

func TestListPendingFollowsClaimOrder(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	var jobs []lease.NewJob
	for i, p := range []int{3, 0, 9, 0, 1, 3} {
		jobs = append(jobs, lease.NewJob{ID: fmt.Sprintf("p%d-%d", p, i), Payload: json.RawMessage("1"), Priority: p})
	}
	if _, err := f.leases.Enqueue(ctx, f.queue, jobs); err != nil {
		t.Fatal(err)
	}
	listed := f.listAll(t, job.StatePending, 4)
	var claimed []string
	for _, j := range f.claim(t, 100, time.Minute) {
		claimed = append(claimed, j.ID)
	}
	if !slices.Equal(listed, claimed) || len(listed) != 6 {
		t.Errorf("listed %v, claims took %v: want the same 6 in claim order", listed, claimed)
	}
}

func TestListBadCursor(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.add(t, "c", 0, 3, 0)
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, cursor := range []string{"%%%", enc("nope"), enc("x/a"), enc("1/"), enc("1/a b"), enc("1e/a"), enc("1-2/a"), enc("./a")} {
		_, err := f.admin.List(context.Background(), f.queue, job.StatePending, cursor, 10)
		if !errors.Is(err, admin.ErrCursor) {
			t.Errorf("List with cursor %q: got %v, want ErrCursor", cursor, err)
		}
	}
}

func TestQueuesPaging(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	const n = 250
	for i := range n {
		if _, err := f.admin.SetPaused(ctx, fmt.Sprintf("q%03d", i), i%2 == 0, anyone); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]int{}
	cursor, pages, last := "", 0, ""
	for {
		infos, next, err := f.admin.Queues(ctx, "", cursor, 100)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if !slices.IsSortedFunc(infos, func(a, b admin.QueueInfo) int { return strings.Compare(a.Name, b.Name) }) {
			t.Errorf("page %d is not sorted by name", pages)
		}
		if len(infos) > 0 && infos[0].Name <= last {
			t.Errorf("page %d starts at %s, not after the last page's %s", pages, infos[0].Name, last)
		}
		if len(infos) > 0 {
			last = infos[len(infos)-1].Name
		}
		for _, info := range infos {
			seen[info.Name]++
			var i int
			fmt.Sscanf(info.Name, "q%03d", &i)
			if info.Paused != (i%2 == 0) || len(info.Counts) != len(admin.States) {
				t.Errorf("queue %+v, want paused %v and a count per state", info, i%2 == 0)
			}
		}
		if next == "" {
			break
		}
		if pages > n {
			t.Fatal("the paging never ended")
		}
		cursor = next
	}
	for i := range n {
		if name := fmt.Sprintf("q%03d", i); seen[name] != 1 {
			t.Errorf("queue %s listed %d times, want once", name, seen[name])
		}
	}
	if len(seen) != n || pages < 2 {
		t.Errorf("listed %d queues in %d pages, want %d in several", len(seen), pages, n)
	}
	for _, cursor := range []string{"a b", "x:y", "..", strings.Repeat("q", 101)} {
		if _, _, err := f.admin.Queues(ctx, "", cursor, 100); !errors.Is(err, admin.ErrCursor) {
			t.Errorf("Queues with cursor %q: got %v, want ErrCursor", cursor, err)
		}
	}
}

func TestSetPaused(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	f.add(t, "p", 0, 2, 0)
	info, err := f.admin.SetPaused(ctx, f.queue, true, anyone)
	if err != nil || !info.Paused || info.Name != f.queue || info.Counts[job.StatePending] != 2 {
		t.Fatalf("SetPaused(true) = %+v, %v; want paused with 2 pending", info, err)
	}
	if got := f.claim(t, 1, time.Minute); len(got) != 0 {
		t.Errorf("a claim on a paused queue took %d jobs", len(got))
	}
	if info, err = f.admin.SetPaused(ctx, f.queue, true, anyone); err != nil || !info.Paused {
		t.Errorf("pausing twice = %+v, %v", info, err)
	}
	if info, err = f.admin.SetPaused(ctx, f.queue, false, anyone); err != nil || info.Paused {
		t.Errorf("SetPaused(false) = %+v, %v; want not paused", info, err)
	}
	if got := f.claim(t, 2, time.Minute); len(got) != 2 {
		t.Errorf("a claim after resuming took %d jobs, want 2", len(got))
	}
	events, err := f.rdb.XRange(ctx, keyspace.NewQueue(f.prefix, f.queue).Base()+"events", "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range events {
		if e.Values["kind"] == "paused" || e.Values["kind"] == "resumed" {
			kinds = append(kinds, fmt.Sprint(e.Values["kind"]))
			if e.Values["actor"] != "tester" || e.Values["role"] != "admin" {
				t.Errorf("event %v, want actor tester, role admin", e.Values)
			}
		}
	}
	if !slices.Equal(kinds, []string{"paused", "resumed"}) {
		t.Errorf("pause events %v, want one paused then one resumed", kinds)
	}
	other := redistest.Queue(t)
	if _, err := f.admin.SetPaused(ctx, other, true, anyone); err != nil {
		t.Fatal(err)
	}
	if !f.rdb.SIsMember(ctx, keyspace.QueuesKey(f.prefix), other).Val() {
		t.Errorf("a queue paused before any job is not a known queue")
	}
}

// TestDrainSteps: a drain of exactly a multiple of the step size removes
// every waiting job and writes one drained event with the total.
func TestDrainSteps(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	f.add(t, "p", 0, admin.StepSize+1, 0)
	held := f.claim(t, 1, time.Minute)
	f.add(t, "d", 0, admin.StepSize, time.Hour) // 2 * StepSize waiting in all
	n, err := f.admin.Drain(ctx, f.queue, anyone)
	if err != nil || n != 2*admin.StepSize {
		t.Fatalf("Drain = %d, %v; want %d", n, err, 2*admin.StepSize)
	}
	info, _ := f.admin.Queue(ctx, f.queue)
	if info.Counts[job.StatePending]+info.Counts[job.StateDelayed] != 0 || info.Counts[job.StateActive] != 1 {
		t.Errorf("counts after the drain %v, want only the active job", info.Counts)
	}
	if _, err := f.admin.Get(ctx, f.queue, held[0].ID); err != nil {
		t.Errorf("the active job after the drain: %v", err)
	}
	events, _ := f.rdb.XRange(ctx, keyspace.NewQueue(f.prefix, f.queue).Base()+"events", "-", "+").Result()
	var drained []map[string]any
	for _, e := range events {
		if e.Values["kind"] == "drained" {
			drained = append(drained, e.Values)
		}
	}
	if len(drained) != 1 || drained[0]["count"] != fmt.Sprint(2*admin.StepSize) || drained[0]["actor"] != "tester" {
		t.Errorf("drained events %v, want one with count %d by tester", drained, 2*admin.StepSize)
	}
}

func TestObliterateSteps(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name              string
		pending, complete int
	}{
		{"a multiple of the step", 2*admin.StepSize - 105, 0}, // 2 * StepSize jobs in all
		{"several states", 1500, 700},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			ctx := context.Background()
			f.add(t, "c", 0, tc.complete, 0)
			f.completeAll(t, f.claim(t, tc.complete, time.Minute))
			f.add(t, "a", 0, 5, 0)
			held := f.claim(t, 5, time.Minute)
			f.add(t, "p", 0, tc.pending, 0)
			f.add(t, "d", 0, 100, time.Hour)
			total := tc.complete + 5 + tc.pending + 100
			before := len(f.keys(t))

			if n, err := f.admin.Obliterate(ctx, f.queue, false); !errors.Is(err, job.ErrState) || n != 0 {
				t.Fatalf("Obliterate without force = %d, %v; want 0, ErrState", n, err)
			}
			if got := len(f.keys(t)); got != before {
				t.Fatalf("a refused obliterate left %d keys of %d", got, before)
			}
			n, err := f.admin.Obliterate(ctx, f.queue, true)
			if err != nil || n != total {
				t.Fatalf("Obliterate = %d, %v; want %d", n, err, total)
			}
			if keys := f.keys(t); len(keys) != 0 {
				t.Errorf("%d keys left, e.g. %v", len(keys), keys[:min(5, len(keys))])
			}
			if f.rdb.SIsMember(ctx, keyspace.QueuesKey(f.prefix), f.queue).Val() {
				t.Error("the queues set still names the obliterated queue")
			}
			_, _, err = f.leases.Complete(ctx, f.queue, held[0].ID, held[0].Token, nil, nil)
			if !errors.Is(err, job.ErrGone) {
				t.Errorf("the old holder's complete: %v, want ErrGone", err)
			}
			if n, err := f.admin.Obliterate(ctx, f.queue, false); err != nil || n != 0 {
				t.Errorf("obliterating it again = %d, %v; want 0, nil", n, err)
			}
		})
	}
}

// TestObliterateThenReuse: the queue made again after an obliterate never
// gives a job a token an old holder of its id knows, and is a known queue
// again.
func TestObliterateThenReuse(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	f.add(t, "j", 0, 300, 0)
	old := f.claim(t, 300, time.Minute)
	if _, err := f.admin.Obliterate(ctx, f.queue, true); err != nil {
		t.Fatal(err)
	}
	f.add(t, "j", 0, 3, 0)
	known := map[int64]bool{}
	for _, j := range old {
		known[j.Token] = true
	}
	for i, j := range f.claim(t, 3, time.Minute) {
		if known[j.Token] {
			t.Errorf("token %d of %s after the obliterate was an old holder's", j.Token, j.ID)
		}
		_, err := f.leases.Extend(ctx, f.queue, j.ID, lease.ExtendParams{Token: old[i].Token, Lease: time.Minute})
		if old[i].ID != j.ID || !errors.Is(err, job.ErrStale) {
			t.Errorf("extend of %s with %s's old token %d: %v, want %v", j.ID, old[i].ID, old[i].Token, err, job.ErrStale)
		}
	}
	if !f.rdb.SIsMember(ctx, keyspace.QueuesKey(f.prefix), f.queue).Val() {
		t.Error("the queue enqueued again after its obliterate is not in the queues set")
	}
}
