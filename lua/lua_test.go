package lua

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

// TestBuildersMatchHeaders ties each script's typed arguments to its
// header: the KEYS a call carries are the header's roles in order (one row
// per job named), and its ARGV count is the header's.
func TestBuildersMatchHeaders(t *testing.T) {
	t.Parallel()
	q := keyspace.NewQueue("emq", "emails")
	two := []NewJob{{ID: "a"}, {ID: "b"}}
	pair := []Completion{{ID: "a"}, {ID: "b"}}
	calls := []struct {
		call Call
		argc int // the ARGV the call must carry
	}{
		{EnqueueArgs{Jobs: two}.Call(q), 3 + 6*2 + 2},
		{EnqueueArgs{Jobs: []NewJob{{ID: "a", Group: "g"}, {ID: "b"}}}.Call(q), 3 + 6*2 + 2 + 2},
		{EnqueueArgs{Jobs: []NewJob{{ID: "a", TimeoutMS: 100}, {ID: "b"}}}.Call(q), 3 + 6*2 + 2 + 6},
		{EnqueueArgs{Jobs: []NewJob{{ID: "a"}, {ID: "b", Traceparent: "00-x"}}}.Call(q), 3 + 6*2 + 2 + 2 + 2},
		{EnqueueArgs{Jobs: []NewJob{{ID: "a", RunAtMS: 5}, {ID: "b"}}}.Call(q), 3 + 6*2 + 2 + 2 + 2},
		{EnqueueArgs{Jobs: []NewJob{{ID: "a", PriorityNamed: true}, {ID: "b", Priority: 2, PriorityNamed: true}}}.Call(q), 3 + 6*2 + 2 + 2 + 1},
		{EnqueueArgs{Jobs: []NewJob{{ID: "a"}, {ID: "b", DependsOn: []string{"a", "c"}}}}.Call(q), 3 + 6*2 + 2 + 2 + 3 + 2},
		{EnqueueArgs{Jobs: two, Batch: &BatchJoin{ID: "x", New: true}}.Call(q), 3 + 6*2 + 2 + 7},
		{ClaimArgs{}.Call(q), Claim.argc - 1},
		{ClaimArgs{MaxActive: 10}.Call(q), Claim.argc},
		{ExtendArgs{ID: "a"}.Call(q), Extend.argc},
		{CancellationArgs{ID: "a"}.Call(q), Cancellation.argc},
		{CompleteArgs{ID: "a"}.Call(q), Complete.argc},
		{CompleteBatchArgs{Jobs: pair}.Call(q), 3 + 4*2 + 5},
		{FailArgs{ID: "a"}.Call(q), Fail.argc},
		{SnoozeArgs{ID: "a"}.Call(q), Snooze.argc},
		{CancelArgs{ID: "a"}.Call(q), Cancel.argc},
		{SweepArgs{}.Call(q), Sweep.argc},
		{PromoteDueArgs{}.Call(q), PromoteDue.argc},
		{ExpireArgs{}.Call(q), Expire.argc},
		{RemoveArgs{ID: "a"}.Call(q), Remove.argc},
		{PauseArgs{}.Call(q), Pause.argc},
		{DrainArgs{}.Call(q), Drain.argc},
		{ObliterateArgs{}.Call(q), Obliterate.argc},
		{RetryArgs{ID: "a"}.Call(q), Retry.argc},
		{PromoteArgs{ID: "a"}.Call(q), Promote.argc},
		{RetryAllArgs{State: "dead"}.Call(q), RetryAll.argc},
		{PromoteAllArgs{}.Call(q), PromoteAll.argc},
		{CleanArgs{State: "dead"}.Call(q), Clean.argc},
		{UpdateArgs{ID: "a"}.Call(q), Update.argc},
		{ListArgs{State: "dead"}.Call(q), List.argc},
		{SettingsArgs{}.Call(q), Settings.argc},
		{GroupPauseArgs{}.Call(q), GroupPause.argc},
		{GroupsArgs{}.Call(q), Groups.argc},
		{SchedulePutArgs{}.Call(q), SchedulePut.argc},
		{SchedulePauseArgs{}.Call(q), SchedulePause.argc},
		{ScheduleDeleteArgs{}.Call(q), ScheduleDelete.argc},
		{ScheduleDueArgs{}.Call(q), ScheduleDue.argc},
		{ScheduleListArgs{}.Call(q), ScheduleList.argc},
		{PushPutArgs{}.Call(q), PushPut.argc},
		{PushPutArgs{URL: "http://a"}.Call(q), PushPut.argc},
		{StatsArgs{Minutes: 60}.Call(q), Stats.argc},
		{SettleArgs{MaxAgeMS: 1}.Call(q), Settle.argc},
		{TrimArgs{Limit: 1}.Call(q), Trim.argc},
		{BatchCommitArgs{ID: "x"}.Call(q), BatchCommit.argc},
		{BatchTakeArgs{ForMS: 1, Limit: 1}.Call(q), BatchTake.argc},
		{BatchAckArgs{ID: "x"}.Call(q), BatchAck.argc},
		{BatchListArgs{Limit: 1}.Call(q), BatchList.argc},
		{LogAppendArgs{ID: "a", Lines: []string{"one", "two"}}.Call(q), LogAppend.argc + 2},
		{LogReadArgs{ID: "a"}.Call(q), LogRead.argc},
		{ScheduleFireArgs{Fires: []Fire{{IDs: []string{"a"}}, {}, {IDs: []string{"b"}}}}.Call(q), 3 + 14*3},
	}
	seen := map[*Script]bool{}
	for _, c := range calls {
		s := c.call.script
		seen[s] = true
		if len(c.call.args) != c.argc {
			t.Errorf("%s: the builder gives %d ARGV, the header %d", s.name, len(c.call.args), c.argc)
		}
		var want []string
		for _, role := range s.roles {
			switch role {
			case "rows":
				want = append(want, q.Job("a"), q.Job("b"))
			case "job":
				want = append(want, q.Job("a"))
			case "logs":
				want = append(want, q.Logs("a"))
			case "set":
				want = append(want, q.Set("dead"))
			case "reaper":
				want = append(want, q.ReaperTurn())
			case "events":
				want = append(want, q.Events())
			case "meta":
				want = append(want, q.Meta())
			case "due":
				want = append(want, keyspace.DueKey(q.Prefix()))
			default:
				want = append(want, q.Set(role))
			}
		}
		if strings.Join(c.call.keys, " ") != strings.Join(want, " ") {
			t.Errorf("%s: KEYS %v, want %v (its header's roles %v)", s.name, c.call.keys, want, s.roles)
		}
		if len(s.roles) == 0 || s.argc < 3 {
			t.Errorf("%s: its header names %d KEYS and ARGV up to %d", s.name, len(s.roles), s.argc)
		}
	}
	for _, s := range All {
		if !seen[s] {
			t.Errorf("%s has no builder in this test", s.name)
		}
	}
}

// TestHeadersAreChecked: a header that numbers its KEYS out of order, or
// gives KEYS[n..] to anything but rows, is refused.
func TestHeadersAreChecked(t *testing.T) {
	t.Parallel()
	for _, header := range []string{
		"-- KEYS[2] meta\n",
		"-- KEYS[1] meta\n-- KEYS[3] pending\n",
		"-- KEYS[1..] meta\n",
		"-- KEYS[1] rows\n",
		"-- KEYS[1..] rows\n-- KEYS[2] meta\n",
	} {
		if _, err := newScript("bad", header+"return 1\n"); err == nil {
			t.Errorf("header %q was taken", header)
		}
	}
}

// TestErrorsNameFileAndLine: a Redis error inside a script names the
// script's file and line, not a line of the composed text, whether it ran
// as a function or by EVAL.
func TestErrorsNameFileAndLine(t *testing.T) {
	t.Parallel()
	boom, err := newScript("boom", "-- KEYS[1] meta\nlocal x = 1\nredis.call('INCR', META, 'too', 'many')\nreturn x\n")
	if err != nil {
		t.Fatal(err)
	}
	lib := newLibrary([]*Script{boom}, nil)
	ctx := context.Background()
	q := keyspace.NewQueue("boom", redistest.Queue(t))
	c := boom.call(q, "", "", nil)
	for _, functions := range []bool{true, false} {
		run := NewRunner(redistest.Client(t))
		run.lib = lib
		run.noFunctions.Store(!functions)
		run.Load(ctx)
		err := run.Run(ctx, c).Err()
		if err == nil || !strings.Contains(err.Error(), "at boom.lua:3") {
			t.Errorf("functions %v: error %v, want it to name boom.lua:3", functions, err)
		}
		var rerr redis.Error
		if !strings.Contains(err.Error(), "Wrong number of args") || !errorsAs(err, &rerr) {
			t.Errorf("functions %v: error %v lost Redis's text or type", functions, err)
		}
	}
}

func errorsAs(err error, target *redis.Error) bool {
	e, ok := err.(redis.Error)
	if ok {
		*target = e
	}
	return ok
}

// TestRunnerLoadsTheLibraryAgain: on a Redis whose functions were flushed
// a call still runs (by EVAL), and the library is loaded again, so that
// the next call is an FCALL.
func TestRunnerLoadsTheLibraryAgain(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	run := NewRunner(rdb)
	q := keyspace.NewQueue("load", "q")
	claim := ClaimArgs{Count: 1, LeaseMS: 1000}.Call(q)
	for round := range 2 {
		if err := rdb.FunctionFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		run.lastLoad.Store(0)
		if err := run.Run(ctx, claim).Err(); err != nil {
			t.Fatalf("round %d: claim with no library: %v", round, err)
		}
		libs, err := rdb.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: LibraryName()}).Result()
		if err != nil || len(libs) != 1 {
			t.Fatalf("round %d: library %s not loaded again after the call (%v, %v)", round, LibraryName(), libs, err)
		}
		before := fcalls(t, rdb)
		if err := run.Run(ctx, claim).Err(); err != nil {
			t.Fatal(err)
		}
		if after := fcalls(t, rdb); after != before+1 {
			t.Errorf("round %d: FCALL ran %d times for one call, want 1", round, after-before)
		}
	}
}

// fcalls is how many FCALLs the server has run.
func fcalls(t *testing.T, rdb *redis.Client) int {
	t.Helper()
	info := rdb.Info(context.Background(), "commandstats").Val()
	for _, line := range strings.Split(info, "\n") {
		if rest, ok := strings.CutPrefix(line, "cmdstat_fcall:calls="); ok {
			n := 0
			for _, c := range rest {
				if c < '0' || c > '9' {
					break
				}
				n = n*10 + int(c-'0')
			}
			return n
		}
	}
	return 0
}

// TestRunnerFallsBackWithoutFunctionRights: a Redis user whose ACL allows
// EVAL but not FCALL or FUNCTION is served by EVAL, from its first call on.
func TestRunnerFallsBackWithoutFunctionRights(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { admin.Close() })
	ctx := context.Background()
	if err := admin.Do(ctx, "acl", "setuser", "evalonly", "on", ">pw", "~*", "&*", "+@all", "-fcall", "-function").Err(); err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, Username: "evalonly", Password: "pw"})
	t.Cleanup(func() { rdb.Close() })
	run := NewRunner(rdb)
	q := keyspace.NewQueue("acl", "q")
	for i := range 2 {
		if err := run.Run(ctx, EnqueueArgs{Jobs: []NewJob{{ID: "a", Payload: "1"}}}.Call(q)).Err(); err != nil {
			t.Fatalf("call %d without FCALL rights: %v", i, err)
		}
	}
	if !run.noFunctions.Load() {
		t.Error("the runner still tries FCALL for a user that may not run it")
	}
}

// TestRunnerFreesMemoryOverMaxmemory: Redis over maxmemory refuses every
// FCALL before it runs (a function may write); the calls that free memory
// (a drain here) still run, by EVAL, as they did before the library.
func TestRunnerFreesMemoryOverMaxmemory(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t, "--maxmemory-policy", "noeviction")
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	run := NewRunner(rdb)
	run.Load(ctx)
	q := keyspace.NewQueue("oom", "q")
	jobs := []NewJob{{ID: "a", Payload: "1"}, {ID: "b", Payload: "2"}}
	if err := run.Run(ctx, EnqueueArgs{Jobs: jobs}.Call(q)).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.ConfigSet(ctx, "maxmemory", "0") })
	if err := send(ctx, rdb, "fcall", Drain.fn, DrainArgs{}.Call(q).keys, nil).Err(); !redis.HasErrorPrefix(err, "OOM") {
		t.Fatalf("a bare FCALL over maxmemory answered %v, want OOM (the case this test is about)", err)
	}
	removed, err := run.Run(ctx, DrainArgs{Limit: 100}.Call(q)).Int()
	if err != nil || removed != 2 {
		t.Errorf("drain over maxmemory: %d removed, %v; want both jobs removed", removed, err)
	}
}

// TestRunnerLoadsEveryMasterThroughAPipeliner: a Runner whose calls go
// through a cluster client's autopipeliner (which sends a command without
// keys to one node) loads the library on every master through the
// cluster client it is given.
func TestRunnerLoadsEveryMasterThroughAPipeliner(t *testing.T) {
	t.Parallel()
	cluster := redistest.StartCluster(t, 3, 0)
	cc := cluster.Client(t)
	ap, err := cc.AutoPipeline()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	NewRunner(ap).LoadThrough(cc).Load(ctx)
	for _, addr := range cluster.Addrs() {
		node := redis.NewClient(&redis.Options{Addr: addr})
		libs, err := node.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: LibraryName()}).Result()
		node.Close()
		if err != nil || len(libs) != 1 {
			t.Errorf("master %s has %d libraries named %s (%v), want 1", addr, len(libs), LibraryName(), err)
		}
	}
}
