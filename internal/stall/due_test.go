package stall_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/admin"
	"github.com/echo-mq/echo_mq/internal/batch"
	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/lease"
	"github.com/echo-mq/echo_mq/internal/redistest"
	"github.com/echo-mq/echo_mq/internal/stall"
)

// scriptCalls is how many scripts the server has run so far.
func scriptCalls(t *testing.T, rdb redis.UniversalClient) int {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, line := range strings.Split(info, "\n") {
		for _, cmd := range []string{"cmdstat_fcall:", "cmdstat_evalsha:", "cmdstat_eval:"} {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(line), cmd+"calls="); ok {
				n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
				total += n
			}
		}
	}
	return total
}

// pass runs one reaper pass and fails the test on its error.
func pass(t *testing.T, r *stall.Reaper) stall.Swept {
	t.Helper()
	swept, err := r.Pass(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return swept
}

// TestAnIdlePassVisitsNoQueue: 300 queues with a pending job each and one
// with a job delayed for an hour. The first pass audits them all; after
// it the index holds the delayed queue alone, and a pass runs no script.
func TestAnIdlePassVisitsNoQueue(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: redistest.StartServer(t).Addr})
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	leases := lease.NewService(rdb, prefix)
	for i := range 300 {
		if _, err := leases.Enqueue(ctx, fmt.Sprintf("q%03d", i), []lease.NewJob{{ID: "a"}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := leases.Enqueue(ctx, "later", []lease.NewJob{{ID: "a", Delay: time.Hour}}); err != nil {
		t.Fatal(err)
	}
	r := stall.NewReaper(stall.NewService(rdb, prefix), stall.ReaperConfig{})
	pass(t, r)
	if got := rdb.ZRange(ctx, keyspace.DueKey(prefix), 0, -1).Val(); len(got) != 1 || got[0] != keyspace.NewQueue(prefix, "later").Base() {
		t.Fatalf("the due index after the audit: %v, want the delayed queue alone", got)
	}
	before := scriptCalls(t, rdb)
	for range 3 {
		pass(t, r)
	}
	if ran := scriptCalls(t, rdb) - before; ran != 0 {
		t.Fatalf("three idle passes ran %d scripts, want 0", ran)
	}
}

// TestDueWorkIsFoundThroughTheIndex: once the audit is done, a queue the
// audit never saw still has its lapsed lease recovered, its due delayed
// job promoted and its expired job ended, by the next pass.
func TestDueWorkIsFoundThroughTheIndex(t *testing.T) {
	t.Parallel()
	rdb, own := redistest.Client(t), "emqdue-"+redistest.Queue(t)
	f := fixture{lease.NewService(rdb, own), stall.NewService(rdb, own), admin.NewService(rdb, own), redistest.Queue(t)}
	r := stall.NewReaper(f.stall, stall.ReaperConfig{})
	pass(t, r) // the audit: nothing known yet
	ctx := context.Background()
	f.enqueueAndLapse(t, 1)
	if _, err := f.leases.Enqueue(ctx, f.queue, []lease.NewJob{
		{ID: "later", Delay: 50 * time.Millisecond},
		{ID: "short", Delay: time.Hour, ExpiresIn: 100 * time.Millisecond},
	}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(150 * time.Millisecond)
	swept := pass(t, r)
	if len(swept.Recovered) != 1 || swept.Recovered[0] != "j0" {
		t.Fatalf("recovered %v, want [j0]", swept.Recovered)
	}
	if len(swept.Expired) != 1 || swept.Expired[0] != "short" {
		t.Fatalf("expired %v, want [short]", swept.Expired)
	}
	if got := f.state(t, "later").State; got != job.StatePending {
		t.Fatalf("the due delayed job is %s, want pending", got)
	}
}

// TestAnEmptyQueueIsForgotten: a queue whose last job was removed is
// forgotten once its last event is MaxAge old: not one key left, its name
// out of the registry, the hook told. A queue that holds a job, and an
// empty paused one, are kept.
func TestAnEmptyQueueIsForgotten(t *testing.T) {
	t.Parallel()
	rdb, own := redistest.Client(t), "emqforget-"+redistest.Queue(t)
	f := fixture{lease.NewService(rdb, own), stall.NewService(rdb, own), admin.NewService(rdb, own), redistest.Queue(t)}
	kept, paused := f.queue+"-kept", f.queue+"-paused"
	ctx := context.Background()
	for _, q := range []string{f.queue, kept, paused} {
		if _, err := f.leases.Enqueue(ctx, q, []lease.NewJob{{ID: "a"}}); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var forgotten []string
	const maxAge = 300 * time.Millisecond
	r := stall.NewReaper(f.stall, stall.ReaperConfig{Interval: 20 * time.Millisecond, MaxAge: maxAge, OnForgotten: func(q string) {
		mu.Lock()
		defer mu.Unlock()
		forgotten = append(forgotten, q)
	}})
	pass(t, r) // the audit, while every queue holds a job
	for _, q := range []string{f.queue, paused} {
		if err := f.admin.Remove(ctx, q, "a", false, admin.Actor{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.admin.SetPaused(ctx, paused, true, admin.Actor{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // past the audit's turns
	pass(t, r)                        // a remove puts the queue in the index: this visit gives it its time
	if n := rdb.Exists(ctx, keyspace.NewQueue(own, f.queue).Meta()).Val(); n != 1 {
		t.Fatal("the queue was forgotten before its events aged out")
	}
	time.Sleep(maxAge + 50*time.Millisecond)
	pass(t, r) // through the index: the time its last visit gave it
	mu.Lock()
	defer mu.Unlock()
	if len(forgotten) != 1 || forgotten[0] != f.queue {
		t.Fatalf("forgotten %v, want [%s]", forgotten, f.queue)
	}
	keys, err := rdb.Keys(ctx, own+":{"+f.queue+"}*").Result()
	if err != nil || len(keys) != 0 {
		t.Fatalf("keys left of the forgotten queue: %v (%v)", keys, err)
	}
	names, err := keyspace.NewRegistry(rdb, own).All(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(names, ",") != strings.Join([]string{f.queue + "-kept", f.queue + "-paused"}, ",") {
		t.Fatalf("registry %v, want the kept and the paused queue", names)
	}
	if due := rdb.ZScore(ctx, keyspace.DueKey(own), keyspace.NewQueue(own, f.queue).Base()); due.Err() != redis.Nil {
		t.Fatalf("the forgotten queue is still in the due index: %v", due)
	}
}

// TestTheDueIndexOnACluster: on a Cluster each slot has its index, and a
// pass finds lapsed leases in queues of every master through them.
func TestTheDueIndexOnACluster(t *testing.T) {
	t.Parallel()
	rdb := redistest.SharedCluster(t).Client(t)
	own := "emqdue-" + redistest.Queue(t)
	leases, svc := lease.NewService(rdb, own), stall.NewService(rdb, own)
	r := stall.NewReaper(svc, stall.ReaperConfig{Interval: 20 * time.Millisecond, ClusterEvery: time.Millisecond})
	pass(t, r) // the audit: nothing known yet
	ctx := context.Background()
	queues := map[string]bool{}
	for i := range 6 {
		q := fmt.Sprintf("%s-%d", redistest.Queue(t), i)
		queues[q] = true
		if _, err := leases.Enqueue(ctx, q, []lease.NewJob{{ID: "a"}}); err != nil {
			t.Fatal(err)
		}
		if c, err := leases.Claim(ctx, q, lease.ClaimParams{Count: 1, Lease: 100 * time.Millisecond}); err != nil || len(c.Jobs) != 1 {
			t.Fatalf("claim: %v, %v", c, err)
		}
		if n := rdb.ZCard(ctx, keyspace.SlotDueKey(own, q)).Val(); n != 1 {
			t.Fatalf("queue %s: its slot's index holds %d, want 1", q, n)
		}
	}
	time.Sleep(150 * time.Millisecond)
	swept := pass(t, r) // the audit is over: only the indexes find them
	if len(swept.Recovered) != len(queues) {
		t.Fatalf("recovered %d jobs, want %d", len(swept.Recovered), len(queues))
	}
}

// TestSettleCompactsTheEvents: settling a queue whose stream is one small
// node gives back the room Redis took for it, and changes nothing a
// reader sees: the same entries, the same last id, and new entries after.
func TestSettleCompactsTheEvents(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	f.enqueueAndLapse(t, 1)
	rdb := redistest.Client(t)
	events := keyspace.NewQueue(prefix, f.queue).Events()
	before, beforeInfo := rdb.XRange(ctx, events, "-", "+").Val(), rdb.XInfoStream(ctx, events).Val()
	size := rdb.MemoryUsage(ctx, events).Val()
	if _, err := f.stall.Settle(ctx, f.queue, time.Hour); err != nil {
		t.Fatal(err)
	}
	after, afterInfo := rdb.XRange(ctx, events, "-", "+").Val(), rdb.XInfoStream(ctx, events).Val()
	if compact := rdb.MemoryUsage(ctx, events).Val(); compact > size/2 {
		t.Fatalf("the stream takes %d B after settling, %d before: want it compacted", compact, size)
	}
	if fmt.Sprint(after) != fmt.Sprint(before) || afterInfo.LastGeneratedID != beforeInfo.LastGeneratedID {
		t.Fatalf("settling changed the stream: %v (last %s), was %v (last %s)", after, afterInfo.LastGeneratedID, before, beforeInfo.LastGeneratedID)
	}
	if _, err := f.leases.Enqueue(ctx, f.queue, []lease.NewJob{{ID: "next"}}); err != nil {
		t.Fatal(err)
	}
	if n := rdb.XLen(ctx, events).Val(); n != int64(len(before)+1) {
		t.Fatalf("%d events after one more enqueue, want %d", n, len(before)+1)
	}
}

// TestANewQueueIsSettledAMinuteLater: a queue's first job gives it a place
// in the due index a minute on, when its events are compacted.
func TestANewQueueIsSettledAMinuteLater(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	rdb := redistest.Client(t)
	ctx := context.Background()
	if _, err := f.leases.Enqueue(ctx, f.queue, []lease.NewJob{{ID: "a"}}); err != nil {
		t.Fatal(err)
	}
	now := rdb.Time(ctx).Val().UnixMilli()
	at, err := rdb.ZScore(ctx, keyspace.DueKey(prefix), keyspace.NewQueue(prefix, f.queue).Base()).Result()
	if err != nil || at < float64(now+55000) || at > float64(now+60000) {
		t.Fatalf("the new queue's due time is %v (%v), want a minute after %d", at, err, now)
	}
}

// TestTheReaperOnTheEmbeddedStore: the due index, settling and forgetting
// work on the embedded store (miniredis), which cannot DUMP a stream.
func TestTheReaperOnTheEmbeddedStore(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	f := fixture{lease.NewService(rdb, prefix), stall.NewService(rdb, prefix), admin.NewService(rdb, prefix), "embedded"}
	r := stall.NewReaper(f.stall, stall.ReaperConfig{Interval: time.Millisecond, MaxAge: time.Millisecond})
	pass(t, r)
	f.enqueueAndLapse(t, 1)
	mr.FastForward(time.Second) // the turns end
	if swept := pass(t, r); len(swept.Recovered) != 1 {
		t.Fatalf("recovered %v, want [j0]", swept.Recovered)
	}
	if err := f.admin.Remove(ctx, f.queue, "j0", false, admin.Actor{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	mr.FastForward(time.Second)
	pass(t, r)
	if keys := mr.Keys(); len(keys) != 0 {
		t.Fatalf("keys left after the queue was forgotten: %v", keys)
	}
}

// TestTheReaperListsAQueueThatOwesACallback: a batch made by a process
// that stopped before it listed its queue for the batch dispatchers still
// has its callback sent: once the batch is done the queue is in the due
// index, and the reaper lists it.
func TestTheReaperListsAQueueThatOwesACallback(t *testing.T) {
	t.Parallel()
	rdb, own := redistest.Client(t), "emqowes-"+redistest.Queue(t)
	f := fixture{lease.NewService(rdb, own), stall.NewService(rdb, own), admin.NewService(rdb, own), redistest.Queue(t)}
	ctx := context.Background()
	batches := batch.NewService(rdb, own, f.leases)
	r := stall.NewReaper(f.stall, stall.ReaperConfig{Interval: 20 * time.Millisecond})
	pass(t, r) // the audit: nothing known yet
	if _, _, _, err := batches.Create(ctx, f.queue, "b1", []lease.NewJob{{ID: "a"}}, false,
		batch.Callback{Queue: f.queue + "-cb", When: batch.WhenComplete}); err != nil {
		t.Fatal(err)
	}
	rdb.SRem(ctx, keyspace.BatchesKey(own), f.queue) // as if its process stopped before it listed it
	c, err := f.leases.Claim(ctx, f.queue, lease.ClaimParams{Count: 1, Lease: time.Minute})
	if err != nil || len(c.Jobs) != 1 {
		t.Fatalf("claim: %v, %v", c, err)
	}
	if _, _, err := f.leases.Complete(ctx, f.queue, "a", c.Jobs[0].Token, nil, nil); err != nil {
		t.Fatal(err)
	}
	d := batches.NewDispatcher(batch.DispatcherConfig{Encode: func(b batch.Batch) (json.RawMessage, error) { return json.RawMessage(`{}`), nil }})
	if n, err := d.Once(ctx); err != nil || n != 0 {
		t.Fatalf("the dispatcher sent %d callbacks (%v) before the queue was listed, want 0", n, err)
	}
	time.Sleep(30 * time.Millisecond) // past the audit's turn
	pass(t, r)
	if n, err := d.Once(ctx); err != nil || n != 1 {
		t.Fatalf("the dispatcher sent %d callbacks (%v) once the reaper listed the queue, want 1", n, err)
	}
}

// TestAClaimTakesADelayedJobThatCameDueBeforeTheIndexSaid: a claim reads
// the delayed set only once the queue's time in the due index has come;
// a job delayed to before that time brings the time forward, so the claim
// after it came due takes it.
func TestAClaimTakesADelayedJobThatCameDueBeforeTheIndexSaid(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.leases.Enqueue(ctx, f.queue, []lease.NewJob{{ID: "held"}}); err != nil {
		t.Fatal(err)
	}
	if c, err := f.leases.Claim(ctx, f.queue, lease.ClaimParams{Count: 1, Lease: time.Hour}); err != nil || len(c.Jobs) != 1 {
		t.Fatalf("claim: %v, %v", c, err)
	}
	if _, err := f.leases.Enqueue(ctx, f.queue, []lease.NewJob{{ID: "soon", Delay: 50 * time.Millisecond}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	c, err := f.leases.Claim(ctx, f.queue, lease.ClaimParams{Count: 1, Lease: time.Hour})
	if err != nil || len(c.Jobs) != 1 || c.Jobs[0].ID != "soon" {
		t.Fatalf("claim after the delayed job came due: %v, %v; want soon", c, err)
	}
}
