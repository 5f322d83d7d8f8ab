package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/redistest"
)

// scheduleRecord is what the tests read of GET .../schedules/{name}.
type scheduleRecord struct {
	NextRunAt *string `json:"next_run_at"`
	LastJobID *string `json:"last_job_id"`
	Runs      int64   `json:"runs"`
	Missed    int64   `json:"missed"`
}

// tickJobs reads the ticks of the jobs schedule name enqueued on queue,
// straight from Redis: each job id "<name>:<ms>" in any state set, sorted.
func tickJobs(t *testing.T, rdb *redis.Client, prefix, queue, name string) []int64 {
	t.Helper()
	var ticks []int64
	for _, state := range []string{"pending", "active", "delayed", "completed", "dead", "cancelled"} {
		ids, err := rdb.ZRange(context.Background(), prefix+":{"+queue+"}:"+state, 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			if rest, ok := strings.CutPrefix(id, name+":"); ok {
				ms, err := strconv.ParseInt(rest, 10, 64)
				if err != nil {
					t.Fatalf("job %s is no tick of %s", id, name)
				}
				ticks = append(ticks, ms)
			}
		}
	}
	slices.Sort(ticks)
	return ticks
}

// TestSchedulesFireEachTickOnceAcrossReplicas runs three service
// replicas over one Redis with 50 schedules of every_ms 200 for 10 s, and
// SIGKILLs one of them half way: every tick of every schedule, from its
// first to its last, is one job (counted by tick id), none was lost to the
// kill, none was fired twice (runs counts each fire), none missed.
func TestSchedulesFireEachTickOnceAcrossReplicas(t *testing.T) {
	t.Parallel()
	const schedules, every = 50, 200
	bin := buildService(t)
	server := redistest.StartServer(t)
	const prefix = "sched"
	var bases []string
	var procs []*serviceProc
	for range 3 {
		addr := fmt.Sprintf("127.0.0.1:%d", loopbackPort(t))
		base := "http://" + addr
		procs = append(procs, startBinary(t, bin, []string{"EMQ_ADDR=" + addr, "EMQ_REDIS_URL=redis://" + server.Addr,
			"EMQ_PREFIX=" + prefix, "EMQ_LOG_LEVEL=warn"}, base))
		bases = append(bases, base)
	}
	q := redistest.Queue(t)
	name := func(i int) string { return fmt.Sprintf("s%02d", i) }
	for i := range schedules {
		mustCall(t, "PUT", bases[i%3]+"/queues/"+q+"/schedules/"+name(i),
			fmt.Sprintf(`{"every_ms":%d,"job":{"payload":{"n":%d}}}`, every, i), 201, nil)
	}
	time.Sleep(5 * time.Second)
	procs[1].kill()
	time.Sleep(5 * time.Second)
	for i := range schedules { // pause them all, so that the count below is final
		mustCall(t, "POST", bases[i%2*2]+"/queues/"+q+"/schedules/"+name(i)+"/pause", "", 200, nil)
	}
	rdb := redis.NewClient(&redis.Options{Addr: server.Addr})
	defer rdb.Close()
	total := 0
	for i := range schedules {
		var rec scheduleRecord
		mustCall(t, "GET", bases[0]+"/queues/"+q+"/schedules/"+name(i), "", 200, &rec)
		ticks := tickJobs(t, rdb, prefix, q, name(i))
		total += len(ticks)
		if len(ticks) < 40 {
			t.Errorf("%s: %d ticks in 10 s of every %d ms", name(i), len(ticks), every)
			continue
		}
		for k := 1; k < len(ticks); k++ {
			if ticks[k]-ticks[k-1] != every {
				t.Errorf("%s: tick %d follows %d: a tick was lost", name(i), ticks[k], ticks[k-1])
			}
		}
		if rec.Runs != int64(len(ticks)) || rec.Missed != 0 {
			t.Errorf("%s: runs %d, missed %d, for %d jobs: a tick was fired twice or missed", name(i), rec.Runs, rec.Missed, len(ticks))
		}
	}
	t.Logf("%d ticks fired by 3 replicas, one of them killed half way", total)
}

// TestScheduleMisfireAfterTheServiceWasStopped stops the only replica for
// three ticks of every_ms 2000 (the last 1.5 s before its return, more
// than the second's grace): on its return misfire "once" fires one
// catch-up job, for the latest missed tick, and counts the rest in missed;
// "skip" fires none and counts them all; then both run on.
func TestScheduleMisfireAfterTheServiceWasStopped(t *testing.T) {
	t.Parallel()
	bin := buildService(t)
	server := redistest.StartServer(t)
	addr := fmt.Sprintf("127.0.0.1:%d", loopbackPort(t))
	base := "http://" + addr
	env := []string{"EMQ_ADDR=" + addr, "EMQ_REDIS_URL=redis://" + server.Addr, "EMQ_PREFIX=misfire", "EMQ_LOG_LEVEL=warn"}
	svc := startBinary(t, bin, env, base)
	q := redistest.Queue(t)
	for _, misfire := range []string{"once", "skip"} {
		mustCall(t, "PUT", base+"/queues/"+q+"/schedules/"+misfire, `{"every_ms":2000,"misfire":"`+misfire+`","job":{"payload":1}}`, 201, nil)
	}
	rdb := redis.NewClient(&redis.Options{Addr: server.Addr})
	defer rdb.Close()
	eventually(t, 5*time.Second, "both schedules fired a tick", func() bool {
		return len(tickJobs(t, rdb, "misfire", q, "once")) > 0 && len(tickJobs(t, rdb, "misfire", q, "skip")) > 0
	})
	svc.kill()
	last := map[string]int64{}
	for _, misfire := range []string{"once", "skip"} {
		ticks := tickJobs(t, rdb, "misfire", q, misfire)
		last[misfire] = ticks[len(ticks)-1]
	}
	// Three ticks after the later of the two last ones pass unfired.
	down := time.UnixMilli(max(last["once"], last["skip"]) + 7500)
	time.Sleep(time.Until(down))
	svc = startBinary(t, bin, env, base)
	for _, misfire := range []string{"once", "skip"} {
		var after []int64 // the ticks fired since the restart
		eventually(t, 8*time.Second, misfire+" fired again after the restart", func() bool {
			after = after[:0]
			for _, tick := range tickJobs(t, rdb, "misfire", q, misfire) {
				if tick > last[misfire] {
					after = append(after, tick)
				}
			}
			return len(after) >= 2
		})
		var rec scheduleRecord
		mustCall(t, "GET", base+"/queues/"+q+"/schedules/"+misfire, "", 200, &rec)
		gap := (after[0]-last[misfire])/2000 - 1 // ticks between the last before and the first after
		switch misfire {
		case "once":
			// The first job after the restart is the catch-up, for the
			// latest tick missed; the ones before it count in missed.
			if gap < 2 || rec.Missed != gap {
				t.Errorf("once: last tick before %d, first after %d: missed %d, want %d (and at least 2)", last[misfire], after[0], rec.Missed, gap)
			}
		case "skip":
			// No catch-up: the first job after the restart is an on-time
			// tick, and every tick missed counts.
			if gap < 3 || rec.Missed != gap {
				t.Errorf("skip: last tick before %d, first after %d: missed %d, want %d (and at least 3)", last[misfire], after[0], rec.Missed, gap)
			}
		}
		if after[1]-after[0] != 2000 {
			t.Errorf("%s: after the restart ticks %v: the cadence did not resume", misfire, after)
		}
	}
}
