package lua

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

// TestBulkActionsStopWholeWhileTheirSlotMigrates: with one row of the
// jobs a bulk retry, clean or promote would take on the other node of a
// migration, each answers its own TRYAGAIN having written nothing (the
// rows are found through a set, which Redis does not check); once every
// key has moved, each runs there.
func TestBulkActionsStopWholeWhileTheirSlotMigrates(t *testing.T) {
	t.Parallel()
	cluster := redistest.StartCluster(t, 3, 0)
	rdb := cluster.Client(t)
	run := NewRunner(rdb)
	ctx := context.Background()
	q := keyspace.NewQueue("migrate", redistest.Queue(t))
	rows := []string{"d1", "d2", "d3", "p", "l1", "l2"}
	dead := []NewJob{{ID: "d1", Payload: "1"}, {ID: "d2", Payload: "2"}, {ID: "d3", Payload: "3"}}
	if err := run.Run(ctx, EnqueueArgs{Jobs: dead}.Call(q)).Err(); err != nil {
		t.Fatal(err)
	}
	got, err := run.Run(ctx, ClaimArgs{Count: 3, LeaseMS: 60000}.Call(q)).Slice()
	if err != nil {
		t.Fatal(err)
	}
	for _, item := range got[1].([]any) {
		j, err := job.Parse(q.Name(), item)
		if err != nil {
			t.Fatal(err)
		}
		if err := run.Run(ctx, FailArgs{ID: j.ID, Token: j.Token, Error: "boom", Fatal: true}.Call(q)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// A pending job and delayed ones, so that every key the scripts
	// declare exists and Redis's own check lets them run.
	waiting := []NewJob{{ID: "p", Payload: "4"}, {ID: "l1", Payload: "5", DelayMS: 3_600_000}, {ID: "l2", Payload: "6", DelayMS: 3_600_000}}
	if err := run.Run(ctx, EnqueueArgs{Jobs: waiting}.Call(q)).Err(); err != nil {
		t.Fatal(err)
	}
	keys := append(q.Keys(), keyspace.SlotDueKey(q.Prefix(), q.Name()))
	for _, id := range rows {
		keys = append(keys, q.Job(id))
	}
	snapshot := func() string {
		var b strings.Builder
		for _, key := range keys {
			dump, _ := rdb.Dump(ctx, key).Result()
			b.WriteString(key + "=" + dump + ";")
		}
		return b.String()
	}
	before := snapshot()
	by := Actor{Name: "tester", Role: "admin"}
	calls := []Call{
		RetryAllArgs{State: "dead", Limit: 10, By: by}.Call(q),
		CleanArgs{State: "dead", Limit: 10, By: by}.Call(q),
		PromoteAllArgs{Limit: 10, By: by}.Call(q),
	}

	m := startMigration(t, cluster, q.Meta())
	m.move(q.Job("d2"), q.Job("l2"))
	for _, c := range calls {
		err := run.Run(ctx, c).Err()
		if !redis.HasErrorPrefix(err, "TRYAGAIN") || !strings.Contains(err.Error(), "(jobs)") {
			t.Fatalf("%s with a row gone answered %v, want the script's TRYAGAIN", c.Script().Name(), err)
		}
	}
	if after := snapshot(); after != before {
		t.Fatal("a refused bulk call changed the queue's keys")
	}

	var present []string
	for _, key := range keys {
		if key != q.Job("d2") && key != q.Job("l2") && rdb.Exists(ctx, key).Val() == 1 {
			present = append(present, key)
		}
	}
	m.move(present...)
	m.finish()
	for i, want := range [][]int64{{2, 1}, {1, 0}, {2, 0}} {
		c := calls[i]
		if i == 0 {
			c = RetryAllArgs{State: "dead", Limit: 2, By: by}.Call(q)
		}
		got, err := run.Run(ctx, c).Int64Slice()
		if err != nil || len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
			t.Errorf("%s once the slot moved: %v, %v; want %v", c.Script().Name(), got, err, want)
		}
	}
}
