package lua

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

// TestJobLogsStayWholeWhileTheirSlotMigrates moves the slot of a queue
// whose jobs have logs, which no script but the append declares: a read
// of a job without a log answers as ever; an append whose log does not
// exist yet, and a drain that would delete a log, answer TRYAGAIN having
// written nothing; a read whose log has left answers TRYAGAIN; once the
// slot has moved, the log reads whole on the node that took it.
func TestJobLogsStayWholeWhileTheirSlotMigrates(t *testing.T) {
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
	// a: logged, then failed back to pending; b: active, no log; c:
	// delayed, so that every key a drain declares exists.
	must(EnqueueArgs{Jobs: []NewJob{{ID: "a", Payload: "1"}, {ID: "b", Payload: "2"}}}.Call(q))
	must(EnqueueArgs{Jobs: []NewJob{{ID: "c", Payload: "3", DelayMS: 3_600_000}}}.Call(q))
	claimed := must(ClaimArgs{Count: 2, LeaseMS: 60_000}.Call(q)).([]any)[1].([]any)
	tokens := map[string]int64{}
	for _, reply := range claimed {
		j, err := job.Parse(q.Name(), reply)
		if err != nil {
			t.Fatal(err)
		}
		tokens[j.ID] = j.Token
	}
	must(LogAppendArgs{ID: "a", Token: tokens["a"], Keep: 1000, Lines: []string{"one", "two"}}.Call(q))
	must(FailArgs{ID: "a", Token: tokens["a"], Error: "again", RetryInMS: 0}.Call(q))

	tryAgain := func(where string, c Call) {
		t.Helper()
		if err := run.Run(ctx, c).Err(); !redis.HasErrorPrefix(err, "TRYAGAIN") {
			t.Fatalf("%s: %s answered %v, want TRYAGAIN", where, c.Script().Name(), err)
		}
	}
	m := startMigration(t, cluster, q.Meta())
	if got := must(LogReadArgs{ID: "b", Limit: 10}.Call(q)).([]any); got[0] != int64(0) || len(got[1].([]any)) != 0 {
		t.Errorf("the log of a job without one, while the slot migrates: %v, want none", got)
	}
	tryAgain("a first append", LogAppendArgs{ID: "b", Token: tokens["b"], Keep: 1000, Lines: []string{"x"}}.Call(q))
	tryAgain("a drain of a job with a log", DrainArgs{Limit: 100}.Call(q))
	if n := m.src.LLen(ctx, q.Logs("a")).Val(); n != 2 || m.src.Exists(ctx, q.Job("a")).Val() != 1 ||
		m.src.ZCard(ctx, q.Set("pending")).Val() != 1 {
		t.Errorf("the refused drain wrote: a's log holds %d lines, want 2, and its row and pending place kept", n)
	}

	m.move(q.Logs("a"))
	tryAgain("a read whose log has left", LogReadArgs{ID: "a", Limit: 10}.Call(q))
	m.move(q.Meta(), q.Set("pending"), q.Set("active"), q.Set("delayed"), q.Events(), q.Stats(),
		q.Job("a"), q.Job("b"), q.Job("c"), keyspace.SlotDueKey(q.Prefix(), q.Name()))
	m.finish()
	got := must(LogReadArgs{ID: "a", Limit: 10}.Call(q)).([]any)
	if lines := got[1].([]any); got[0] != int64(0) || len(lines) != 2 {
		t.Errorf("a's log after the slot moved: %v, want its two lines from line 0", got)
	}
	if got := must(LogReadArgs{ID: "b", Limit: 10}.Call(q)).([]any); len(got[1].([]any)) != 0 ||
		rdb.HExists(ctx, q.Job("b"), "logs").Val() {
		t.Errorf("b's log after the refused append: %v, want none", got)
	}
}
