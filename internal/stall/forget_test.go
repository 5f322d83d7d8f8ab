package stall_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/admin"
	"github.com/echo-mq/echo_mq/internal/batch"
	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/lease"
	"github.com/echo-mq/echo_mq/internal/redistest"
	"github.com/echo-mq/echo_mq/internal/schedule"
	"github.com/echo-mq/echo_mq/internal/scheduler"
	"github.com/echo-mq/echo_mq/internal/stall"
)

// TestAuditKeepsACallbackQueuesPlace: batch.Create admits its
// callback's queue up front ("its callback's queue takes its place now, not
// when the callback is due: then it could only be retried"). That queue has
// no key until the callback comes, so the audit's settle finds it empty
// with no event and forgets it at once, giving its place away; with
// EMQ_MAX_QUEUES reached by then, the owed callback is refused (ErrQuota).
func TestAuditKeepsACallbackQueuesPlace(t *testing.T) {
	t.Parallel()
	rdb, own := redistest.Client(t), "emqrvcb-"+redistest.Queue(t)
	q := redistest.Queue(t)
	reg := keyspace.NewRegistry(rdb, own, keyspace.RegistryMax(2))
	leases := lease.NewService(rdb, own, lease.Registry(reg))
	svc := stall.NewService(rdb, own, stall.Registry(reg))
	batches := batch.NewService(rdb, own, leases)
	ctx := context.Background()
	if _, _, _, err := batches.Create(ctx, q, "b1", []lease.NewJob{{ID: "a"}}, false,
		batch.Callback{Queue: q + "-cb", When: batch.WhenComplete}); err != nil {
		t.Fatal(err)
	}
	r := stall.NewReaper(svc, stall.ReaperConfig{Interval: 20 * time.Millisecond})
	pass(t, r) // the audit from the reaper's start
	names, err := reg.All(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(names, q+"-cb") {
		t.Errorf("after the audit the registry is %v: the callback queue's place was given away", names)
	}
	// The consequence: another queue takes the place, and the callback
	// cannot be sent.
	_, _ = leases.Enqueue(ctx, q+"-other", []lease.NewJob{{ID: "x"}})
	c, err := leases.Claim(ctx, q, lease.ClaimParams{Count: 1, Lease: time.Minute})
	if err != nil || len(c.Jobs) != 1 {
		t.Fatalf("claim: %v, %v", c, err)
	}
	if _, _, err := leases.Complete(ctx, q, "a", c.Jobs[0].Token, nil, nil); err != nil {
		t.Fatal(err)
	}
	d := batches.NewDispatcher(batch.DispatcherConfig{Encode: func(batch.Batch) (json.RawMessage, error) { return json.RawMessage(`{}`), nil }})
	if n, err := d.Once(ctx); err != nil || n != 1 {
		t.Fatalf("the dispatcher sent %d callbacks (%v), want 1", n, err)
	}
}

// forgets settles queue once its events are maxAge old and reports whether
// settle forgot it.
func forgets(t *testing.T, svc *stall.Service, queue string) bool {
	t.Helper()
	const maxAge = 50 * time.Millisecond
	time.Sleep(maxAge + 20*time.Millisecond)
	s, err := svc.Settle(context.Background(), queue, maxAge)
	if err != nil {
		t.Fatal(err)
	}
	return s.Forgotten
}

// TestAQueueThatHadAGroupedJobIsForgotten: a queue that holds
// nothing a user made is forgotten (docs/design.md#the-sweep). One that
// once had a grouped job keeps its flow hash ("turn") and rotation for
// good, which settle's empty() takes for user state: never forgotten.
func TestAQueueThatHadAGroupedJobIsForgotten(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	plain := f.queue + "-plain"
	for q, group := range map[string]string{f.queue: "g", plain: ""} {
		if _, err := f.leases.Enqueue(ctx, q, []lease.NewJob{{ID: "a", Group: group}}); err != nil {
			t.Fatal(err)
		}
		if err := f.admin.Remove(ctx, q, "a", false, admin.Actor{}); err != nil {
			t.Fatal(err)
		}
	}
	if !forgets(t, f.stall, plain) {
		t.Fatal("control: the emptied plain queue was not forgotten")
	}
	if !forgets(t, f.stall, f.queue) {
		rdb := redistest.Client(t)
		keys := rdb.Keys(ctx, prefix+":{"+f.queue+"}:*").Val()
		t.Errorf("the emptied queue that had a grouped job is never forgotten; keys left: %v (flow %v)",
			keys, rdb.HGetAll(ctx, keyspace.NewQueue(prefix, f.queue).Base()+"flow").Val())
	}
}

// TestAQueueWhoseBatchExpiredIsForgotten: a done batch's keys expire
// after batches.KEEP_MS (7 days), but its entry in the queue's "batches"
// set is only dropped by the next batch create (batches.open): settle's
// empty() sees the set and never forgets the queue.
func TestAQueueWhoseBatchExpiredIsForgotten(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	rdb := redistest.Client(t)
	ctx := context.Background()
	batches := batch.NewService(rdb, prefix, f.leases)
	if _, _, _, err := batches.Create(ctx, f.queue, "b1", []lease.NewJob{{ID: "a"}}, false,
		batch.Callback{When: batch.WhenSuccess}); err != nil {
		t.Fatal(err)
	}
	if err := f.admin.Remove(ctx, f.queue, "a", false, admin.Actor{}); err != nil { // the batch is done, owes nothing
		t.Fatal(err)
	}
	// Seven days on, as Redis would leave it: the batch's keys expired, its
	// entry in the batches set scored in the past.
	base := keyspace.NewQueue(prefix, f.queue).Base()
	rdb.Del(ctx, base+"batch:b1", base+"batch_jobs:b1")
	rdb.ZAdd(ctx, base+"batches", redis.Z{Score: float64(time.Now().Add(-time.Minute).UnixMilli()), Member: "b1"})
	if !forgets(t, f.stall, f.queue) {
		t.Errorf("the emptied queue whose batch expired is never forgotten; keys left: %v",
			rdb.Keys(ctx, base+"*").Val())
	}
}

// TestAScheduleMadeAsTheQueueIsForgottenKeepsItListed: the reaper's
// settle forgets an empty queue, then (a round trip later) forget takes it
// out of the registry and adds it back only when its meta exists. A
// schedule put (or a push target put) in between writes no meta: the
// queue holds a schedule and is out of the registry (GET /queues, the
// quota). OnForgotten runs exactly in that window.
func TestAScheduleMadeAsTheQueueIsForgottenKeepsItListed(t *testing.T) {
	t.Parallel()
	rdb, own := redistest.Client(t), "emqrvsch-"+redistest.Queue(t)
	q := redistest.Queue(t)
	reg := keyspace.NewRegistry(rdb, own)
	leases := lease.NewService(rdb, own, lease.Registry(reg))
	adm := admin.NewService(rdb, own, admin.Registry(reg))
	sched := scheduler.NewService(rdb, own, scheduler.Registry(reg))
	ctx := context.Background()
	if _, err := leases.Enqueue(ctx, q, []lease.NewJob{{ID: "a"}}); err != nil {
		t.Fatal(err)
	}
	if err := adm.Remove(ctx, q, "a", false, admin.Actor{}); err != nil {
		t.Fatal(err)
	}
	const maxAge = 50 * time.Millisecond
	r := stall.NewReaper(stall.NewService(rdb, own, stall.Registry(reg)), stall.ReaperConfig{
		Interval: 20 * time.Millisecond, MaxAge: maxAge,
		OnForgotten: func(queue string) {
			d := scheduler.Definition{Every: time.Hour, Job: lease.NewJob{Payload: json.RawMessage(`{}`)},
				Overlap: scheduler.OverlapAllow, Misfire: schedule.MisfireOnce}
			if _, _, err := sched.Put(ctx, queue, "hourly", d, false, scheduler.Actor{}); err != nil {
				t.Error(err)
			}
		}})
	time.Sleep(maxAge + 20*time.Millisecond)
	pass(t, r) // the audit: settles and forgets q; the put lands before forget
	if n := rdb.Exists(ctx, keyspace.NewQueue(own, q).Base()+"schedule_names").Val(); n != 1 {
		t.Fatal("the schedule was not written")
	}
	names, err := reg.All(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(names, q) {
		t.Errorf("registry %v: the queue holds a schedule but is no longer listed", names)
	}
}

// TestABatchDoneAtItsCreateIsIndexed: a batch whose jobs all exist
// already is done by the enqueue that makes it (batches.counted), which
// owes its callback; that enqueue runs as plain enqueue.lua (no delay, no
// option, a known queue: EnqueueArgs.later is false), so batches.finish
// skips due.at (its "due.key ~= nil" guard). A create whose process stops
// before it lists the queue for the dispatchers is then never listed by
// the reaper, unlike TestTheReaperListsAQueueThatOwesACallback.
func TestABatchDoneAtItsCreateIsIndexed(t *testing.T) {
	t.Parallel()
	rdb, own := redistest.Client(t), "emqrvowes-"+redistest.Queue(t)
	leases, svc := lease.NewService(rdb, own), stall.NewService(rdb, own)
	q := redistest.Queue(t)
	ctx := context.Background()
	batches := batch.NewService(rdb, own, leases)
	if _, err := leases.Enqueue(ctx, q, []lease.NewJob{{ID: "a"}}); err != nil {
		t.Fatal(err)
	}
	r := stall.NewReaper(svc, stall.ReaperConfig{Interval: 20 * time.Millisecond})
	pass(t, r) // the audit
	if _, _, _, err := batches.Create(ctx, q, "b1", []lease.NewJob{{ID: "a"}}, false,
		batch.Callback{When: batch.WhenComplete}); err != nil {
		t.Fatal(err)
	}
	rdb.SRem(ctx, keyspace.BatchesKey(own), q) // as if its process stopped before it listed it
	time.Sleep(30 * time.Millisecond)
	pass(t, r)
	time.Sleep(30 * time.Millisecond)
	pass(t, r)
	d := batches.NewDispatcher(batch.DispatcherConfig{Encode: func(batch.Batch) (json.RawMessage, error) { return json.RawMessage(`{}`), nil }})
	if n, err := d.Once(ctx); err != nil || n != 1 {
		t.Fatalf("the dispatcher sent %d callbacks (%v), want 1 (owed: %v)", n, err,
			rdb.ZRange(ctx, keyspace.NewQueue(own, q).Base()+"batches_due", 0, -1).Val())
	}
}
