package lua

import (
	"context"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

// TestRetentionStaysWholeWhileItsSlotMigrates moves the slot of a queue
// whose retention lets finished jobs go, one of them already on the node
// taking the slot: the reaper's trim and a cancel (which trims at once)
// answer as ever, and neither deletes a job from its set while leaving
// its row, or a row while leaving it listed; once the slot has moved, the
// trim deletes what the rules let go, rows and logs, on the node that
// took it.
func TestRetentionStaysWholeWhileItsSlotMigrates(t *testing.T) {
	t.Parallel()
	cluster := redistest.StartCluster(t, 3, 0)
	rdb := cluster.Client(t)
	run := NewRunner(rdb)
	ctx := context.Background()
	q := keyspace.NewQueue("migrate", redistest.Queue(t))
	must := func(c Call) any {
		t.Helper()
		got, err := run.Run(ctx, c).Result()
		if err != nil {
			t.Fatalf("%s: %v", c.Script().Name(), err)
		}
		return got
	}
	// f completed and g dead, so that every set the calls declare exists
	// (a declared key gone from a migrating slot stops the call before it
	// runs); three cancelled jobs (a, b, c, a few ms apart), d pending and
	// e delayed; then a retention that keeps one cancelled job.
	must(EnqueueArgs{Jobs: []NewJob{{ID: "f", Payload: "1"}, {ID: "g", Payload: "1"}}}.Call(q))
	for _, reply := range must(ClaimArgs{Count: 2, LeaseMS: 60_000}.Call(q)).([]any)[1].([]any) {
		j, err := job.Parse(q.Name(), reply)
		if err != nil {
			t.Fatal(err)
		}
		if j.ID == "f" {
			must(CompleteArgs{ID: "f", Token: j.Token}.Call(q))
		} else {
			must(FailArgs{ID: "g", Token: j.Token, Error: "x", Fatal: true}.Call(q))
		}
	}
	for _, id := range []string{"a", "b", "c", "d"} {
		must(EnqueueArgs{Jobs: []NewJob{{ID: id, Payload: "1"}}}.Call(q))
	}
	must(EnqueueArgs{Jobs: []NewJob{{ID: "e", Payload: "1", DelayMS: 3_600_000}}}.Call(q))
	for _, id := range []string{"a", "b", "c"} {
		must(CancelArgs{ID: id}.Call(q))
		time.Sleep(3 * time.Millisecond)
	}
	must(SettingsArgs{JSON: "{}", Retention: ",,1:0"}.Call(q))

	m := startMigration(t, cluster, q.Meta())
	m.move(q.Job("a"))
	if got := must(TrimArgs{Limit: 100}.Call(q)).([]any); got[0] != int64(0) {
		t.Errorf("a trim while a row to trim has left: %v, want none trimmed", got)
	}
	if reply := must(CancelArgs{ID: "d"}.Call(q)).([]any); reply[0] != "cancelled" {
		t.Errorf("a cancel while the slot migrates: %v, want cancelled", reply)
	}
	if ids := m.src.ZRange(ctx, q.Set("cancelled"), 0, -1).Val(); len(ids) != 4 {
		t.Errorf("the cancelled set while the slot migrates: %v, want a, b, c and d listed", ids)
	}
	for _, id := range []string{"b", "c", "d"} {
		if m.src.Exists(ctx, q.Job(id)).Val() != 1 {
			t.Errorf("%s's row was deleted while %s stays listed", id, id)
		}
	}

	m.move(q.Meta(), q.Set("pending"), q.Set("delayed"), q.Set("completed"), q.Set("dead"), q.Set("cancelled"),
		q.Events(), q.Stats(), q.Job("b"), q.Job("c"), q.Job("d"), q.Job("e"), q.Job("f"), q.Job("g"), keyspace.SlotDueKey(q.Prefix(), q.Name()))
	m.finish()
	if got := must(TrimArgs{Limit: 100}.Call(q)).([]any); got[0] != int64(3) {
		t.Errorf("the trim once the slot moved: %v, want 3 trimmed", got)
	}
	if ids := rdb.ZRange(ctx, q.Set("cancelled"), 0, -1).Val(); len(ids) != 1 || ids[0] != "d" {
		t.Errorf("the cancelled set after the trim: %v, want d alone", ids)
	}
	for _, id := range []string{"a", "b", "c"} {
		if rdb.Exists(ctx, q.Job(id)).Val() != 0 {
			t.Errorf("%s's row outlived its trim", id)
		}
	}
}
