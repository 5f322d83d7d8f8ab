package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

// TestClusterFailoverLosesNoJob runs two service replicas on a Redis
// Cluster of three masters, each with a replica, has workers claim and
// complete jobs through both replicas, and fails the queue's master over
// to its replica three times while they run (CLUSTER FAILOVER, the
// coordinated kind of maintenance and upgrades: the master stops writes,
// the replica catches up and takes over). The workers retry on a 503 or a
// connection error and drop a job whose complete answers 409 or 404. Every
// job must end completed exactly once, under one token, its id in the
// completed set and in no other.
func TestClusterFailoverLosesNoJob(t *testing.T) {
	t.Parallel()
	const jobs, workers, failovers = 1500, 8, 3
	cluster := redistest.StartCluster(t, 3, 1)
	env := func() map[string]string {
		// A job a failover made stall must not die of it: this test is
		// about the failover, not the stall threshold.
		return map[string]string{"EMQ_REDIS_URL": cluster.URL(), "EMQ_PREFIX": "failover",
			"EMQ_SWEEP_INTERVAL": "200ms", "EMQ_MAX_STALLED": "10"}
	}
	bases := make([]string, 2)
	for i := range bases {
		var stop func() error
		bases[i], _, stop = startService(t, env())
		t.Cleanup(func() {
			if err := stop(); err != nil {
				t.Error(err)
			}
		})
	}
	q := redistest.Queue(t)
	for from := 0; from < jobs; from += 500 {
		mustCall(t, "POST", bases[from/500%2]+"/queues/"+q+"/jobs/batch", crashBatch(from, min(500, jobs-from)), 200, nil)
	}

	ctx, stopWorkers := context.WithTimeout(context.Background(), 90*time.Second)
	idle := make(chan struct{}) // closed once every job is completed: the workers claim no more
	tally := newCompletions()
	var wg sync.WaitGroup
	defer func() { stopWorkers(); wg.Wait() }() // also when the test fails early
	for i := range workers {
		wg.Add(1)
		go func() { defer wg.Done(); crashWorker(ctx, idle, t, bases[i%2]+"/queues/"+q, tally) }()
	}
	meta := keyspace.NewQueue("failover", q).Meta()
	var moves []string
	for i := range failovers {
		eventually(t, 30*time.Second, fmt.Sprintf("failover %d: jobs completed before it", i+1), func() bool {
			return tally.ok.Load() >= int64((i+1)*jobs/(failovers+2))
		})
		from, to := cluster.Failover(t, meta)
		moves = append(moves, from+" -> "+to)
	}
	var counts queueCounts
	eventually(t, 40*time.Second, fmt.Sprintf("all %d jobs completed", jobs), func() bool {
		a, err := call(ctx, "GET", bases[1]+"/queues/"+q, "")
		return err == nil && a.Status == 200 && json.Unmarshal(a.Body, &counts) == nil && counts.Counts["completed"] >= jobs
	})
	close(idle) // the workers finish the calls they have begun (a complete whose 200 is on its way)
	wg.Wait()
	stopWorkers()

	misplaced := inOneSetOnly(t, cluster, q, jobs)
	duplicated, unanswered := 0, 0
	for i := range jobs {
		switch n := len(tally.tokens(crashID(i))); {
		case n > 1:
			duplicated++
		case n == 0:
			unanswered++
		}
	}
	t.Logf("failover test: %d jobs through 2 replicas, the queue's master failed over %v; "+
		"%d completes dropped (409/404), %d calls retried after a connection error or a 503",
		jobs, moves, tally.dropped.Load(), tally.retried.Load())
	want := map[string]int64{"completed": jobs, "pending": 0, "active": 0, "delayed": 0, "dead": 0, "cancelled": 0}
	for state, n := range want {
		if counts.Counts[state] != n {
			t.Errorf("counts %v, want %s = %d", counts.Counts, state, n)
		}
	}
	if misplaced > 0 || duplicated > 0 || unanswered > 0 {
		t.Errorf("%d jobs not completed or in two sets, %d completed under two tokens, %d never answered 200",
			misplaced, duplicated, unanswered)
	}
}

// inOneSetOnly counts the jobs of queue (crashID 0..n-1) that are not in
// the completed set alone with a completed row, reading the cluster
// directly.
func inOneSetOnly(t *testing.T, cluster *redistest.Cluster, queue string, n int) int {
	t.Helper()
	ctx := context.Background()
	rdb := cluster.Client(t)
	keys := keyspace.NewQueue("failover", queue)
	states := []string{"pending", "active", "delayed", "completed", "dead", "cancelled"}
	bad := 0
	for i := range n {
		id := crashID(i)
		var in []string
		for _, s := range states {
			if err := rdb.ZScore(ctx, keys.Set(s), id).Err(); err == nil {
				in = append(in, s)
			}
		}
		state, err := rdb.HGet(ctx, keys.Job(id), "state").Result()
		if len(in) != 1 || in[0] != "completed" || state != "completed" {
			bad++
			t.Errorf("job %s is in sets %v with row state %q (%v), want completed alone", id, in, state, err)
		}
	}
	return bad
}

// TestClusterMasterDeathRecovers kills (SIGKILL) the master of a queue's
// slot: once Redis Cluster has promoted its replica, the service serves the
// queue again by itself, with every job that had reached the replica.
func TestClusterMasterDeathRecovers(t *testing.T) {
	t.Parallel()
	const jobs = 100
	cluster := redistest.StartCluster(t, 3, 1)
	base, _, stop := startService(t, map[string]string{"EMQ_REDIS_URL": cluster.URL(), "EMQ_PREFIX": "death"})
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	})
	q := redistest.Queue(t)
	mustCall(t, "POST", base+"/queues/"+q+"/jobs/batch", crashBatch(0, jobs), 200, nil)
	master, err := cluster.Owner(keyspace.NewQueue("death", q).Meta())
	if err != nil {
		t.Fatal(err)
	}
	// Wait until the replica has every job, then kill the master.
	if n, err := newRedisClient(t, master).Do(context.Background(), "WAIT", 1, 5000).Int(); err != nil || n != 1 {
		t.Fatalf("WAIT for the replica: %d, %v", n, err)
	}
	killRedis(t, master)
	killed := time.Now()

	var counts queueCounts
	// Redis takes a few seconds to promote the replica (cluster-node-timeout
	// 2 s, then an election); go-redis alone would wait a minute more.
	eventually(t, 30*time.Second, "the queue served again after its master died", func() bool {
		a, err := call(context.Background(), "GET", base+"/queues/"+q, "")
		return err == nil && a.Status == 200 && json.Unmarshal(a.Body, &counts) == nil
	})
	t.Logf("master %s killed; the queue was served again %v later", master, time.Since(killed).Round(100*time.Millisecond))
	if counts.Counts["pending"] != jobs {
		t.Errorf("counts %v after the failover, want %d pending", counts.Counts, jobs)
	}
	var held heldJobs
	mustCall(t, "POST", base+"/queues/"+q+"/claim", `{"count":5}`, 200, &held)
	if len(held.Jobs) != 5 {
		t.Fatalf("claimed %d jobs after the failover, want 5", len(held.Jobs))
	}
	mustCall(t, "POST", base+"/queues/"+q+"/jobs/"+held.Jobs[0].ID+"/complete",
		fmt.Sprintf(`{"token":%d}`, held.Jobs[0].Token), 200, nil)
}
