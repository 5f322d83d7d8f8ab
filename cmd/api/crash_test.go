package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

// TestServiceCrashLosesAndRepeatsNoJob runs the service binary against a
// redis-server of its own, has workers claim and complete jobs over HTTP,
// SIGKILLs the service when about a third of the jobs are done, and starts
// it again on the same port 1.5 s later. The workers retry on connection errors and
// drop a job whose complete answers 409 or 404 (the sweep gave it to
// another claim). Every job must end completed exactly once: one token
// completed it, none was lost, none is left pending, active or dead.
func TestServiceCrashLosesAndRepeatsNoJob(t *testing.T) {
	t.Parallel()
	const jobs, workers = 2000, 8
	bin := buildService(t)
	server := redistest.StartServer(t)
	addr := fmt.Sprintf("127.0.0.1:%d", loopbackPort(t))
	base := "http://" + addr
	// A job the crash made stall must not die of a second stall on a slow
	// machine: this test is about the crash, not the stall threshold.
	env := []string{"EMQ_ADDR=" + addr, "EMQ_REDIS_URL=redis://" + server.Addr, "EMQ_PREFIX=crash",
		"EMQ_SWEEP_INTERVAL=200ms", "EMQ_MAX_STALLED=10", "EMQ_LOG_LEVEL=warn"}
	svc := startBinary(t, bin, env, base)
	q := redistest.Queue(t)
	for from := 0; from < jobs; from += 1000 {
		mustCall(t, "POST", base+"/queues/"+q+"/jobs/batch", crashBatch(from, min(1000, jobs-from)), 200, nil)
	}

	ctx, stopWorkers := context.WithTimeout(context.Background(), 60*time.Second)
	idle := make(chan struct{}) // closed once every job is completed: the workers claim no more
	tally := newCompletions()
	var wg sync.WaitGroup
	defer func() { stopWorkers(); wg.Wait() }() // also when the test fails early
	for range workers {
		wg.Add(1)
		go func() { defer wg.Done(); crashWorker(ctx, idle, t, base+"/queues/"+q, tally) }()
	}

	eventually(t, 30*time.Second, "a third of the jobs completed before the crash", func() bool {
		return tally.ok.Load() >= jobs/3
	})
	atKill := tally.ok.Load()
	svc.kill()
	// Down for longer than a lease, so that leases lapse meanwhile: the
	// restarted reaper and the workers' retried completes race for them.
	time.Sleep(1500 * time.Millisecond)
	svc = startBinary(t, bin, env, base)
	var counts queueCounts
	eventually(t, 40*time.Second, fmt.Sprintf("all %d jobs completed after the crash", jobs), func() bool {
		a, err := call(ctx, "GET", base+"/queues/"+q, "")
		return err == nil && a.Status == 200 && json.Unmarshal(a.Body, &counts) == nil && counts.Counts["completed"] >= jobs
	})
	// The workers finish the calls they have begun: the counts can show a
	// job completed before its worker has read the 200.
	close(idle)
	wg.Wait()
	stopWorkers()
	svc.kill()

	completed, reclaimed := crashRows(t, server.Addr, q)
	lost, duplicated, unanswered := 0, 0, 0
	for i := range jobs {
		id := crashID(i)
		if !completed[id] {
			lost++
		}
		switch n := len(tally.tokens(id)); {
		case n > 1:
			duplicated++
			t.Errorf("job %s was completed under %d tokens %v: it ran to completion twice", id, n, tally.tokens(id))
		case n == 0:
			unanswered++
		}
	}
	t.Logf("crash test: %d jobs, service SIGKILLed after %d completes; lost %d, duplicated %d; "+
		"%d claimed more than once, %d completes dropped (409/404), %d calls retried after a connection error or a 503, %d completed with no 200 seen",
		jobs, atKill, lost, duplicated, reclaimed, tally.dropped.Load(), tally.retried.Load(), unanswered)
	want := map[string]int64{"completed": jobs, "pending": 0, "active": 0, "delayed": 0, "dead": 0, "cancelled": 0}
	for state, n := range want {
		if counts.Counts[state] != n {
			t.Errorf("counts %v, want %s = %d", counts.Counts, state, n)
		}
	}
	if lost > 0 || len(completed) != jobs {
		t.Errorf("%d of %d jobs are not completed (%d completed rows)", lost, jobs, len(completed))
	}
	if unanswered > 0 {
		t.Errorf("%d completed jobs never had a complete answered 200: a worker gave up", unanswered)
	}
}

// crashID names job i of the crash test.
func crashID(i int) string { return fmt.Sprintf("j%05d", i) }

func crashBatch(from, n int) string {
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprintf(`{"id":%q,"payload":%d}`, crashID(from+i), from+i)
	}
	return `{"jobs":[` + strings.Join(items, ",") + `]}`
}

// completions counts what the workers saw.
type completions struct {
	mu      sync.Mutex
	byToken map[string]map[int64]int // id -> token -> complete answers 200
	claims  map[string]int           // id -> claims
	ok      atomic.Int64             // first 200s per (id, token)
	dropped atomic.Int64             // completes answered 409 or 404
	retried atomic.Int64             // calls sent again after a connection error or a 503
}

func newCompletions() *completions {
	return &completions{byToken: map[string]map[int64]int{}}
}

func (c *completions) completed(id string, token int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byToken[id] == nil {
		c.byToken[id] = map[int64]int{}
	}
	if c.byToken[id][token]++; c.byToken[id][token] == 1 {
		c.ok.Add(1)
	}
}

func (c *completions) tokens(id string) []int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []int64
	for tok := range c.byToken[id] {
		out = append(out, tok)
	}
	return out
}

// crashWorker claims up to five jobs at a time and completes them one by
// one, until ctx ends or, between claims, idle is closed.
// A connection error or a 503 is retried (the same token for a complete);
// a 409 or 404 on complete drops the job.
func crashWorker(ctx context.Context, idle <-chan struct{}, t *testing.T, queueURL string, tally *completions) {
	for ctx.Err() == nil {
		select {
		case <-idle:
			return
		default:
		}
		a, err := call(ctx, "POST", queueURL+"/claim", `{"lease_ms":1000,"count":5,"wait_ms":500}`)
		if ctx.Err() != nil {
			return // the run is over: not a retry
		}
		if err != nil || a.Status == 503 {
			tally.retried.Add(1)
			time.Sleep(20 * time.Millisecond)
			continue
		}
		var got heldJobs
		if a.Status != 200 || json.Unmarshal(a.Body, &got) != nil {
			t.Errorf("claim: got %s, want 200", a)
			return
		}
		for _, j := range got.Jobs {
			if !crashComplete(ctx, t, queueURL, j, tally) {
				return
			}
		}
	}
}

// crashComplete completes j, retrying on connection errors. It reports
// false on an answer no worker expects.
func crashComplete(ctx context.Context, t *testing.T, queueURL string, j heldJob, tally *completions) bool {
	for ctx.Err() == nil {
		a, err := call(ctx, "POST", queueURL+"/jobs/"+j.ID+"/complete", fmt.Sprintf(`{"token":%d}`, j.Token))
		switch {
		case err != nil || a.Status == 503:
			tally.retried.Add(1)
			time.Sleep(20 * time.Millisecond)
		case a.Status == 200:
			var done heldJob
			if json.Unmarshal(a.Body, &done) != nil || done.State != "completed" {
				t.Errorf("complete %s: got %s, want the job completed", j.ID, a)
				return false
			}
			tally.completed(j.ID, j.Token)
			return true
		case a.Status == 409 || a.Status == 404:
			tally.dropped.Add(1)
			return true
		default:
			t.Errorf("complete %s: got %s, want 200, 409 or 404", j.ID, a)
			return false
		}
	}
	return true
}

// crashRows reads queue's completed set from Redis: the ids whose rows are
// completed, and how many of those were claimed more than once (the crash
// cost them a claim whose answer was lost, or a lease that lapsed).
func crashRows(t *testing.T, redisAddr, queue string) (completed map[string]bool, reclaimed int) {
	t.Helper()
	ctx := context.Background()
	c := newRedisClient(t, redisAddr)
	keys := keyspace.NewQueue("crash", queue)
	ids, err := c.ZRange(ctx, keys.Set("completed"), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	completed = make(map[string]bool, len(ids))
	for _, id := range ids {
		row, err := c.HMGet(ctx, keys.Job(id), "state", "attempts").Result()
		if err != nil || row[0] != "completed" {
			t.Errorf("job %s is in the completed set with row %v (%v)", id, row, err)
			continue
		}
		completed[id] = true
		if row[1] != "1" {
			reclaimed++
		}
	}
	return completed, reclaimed
}

// buildService builds this package's binary into a temporary directory.
func buildService(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	bin := filepath.Join(t.TempDir(), "emq")
	if out, err := exec.Command(goBin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// serviceProc is the service binary running as a process.
type serviceProc struct {
	cmd  *exec.Cmd
	done chan struct{}
	log  string
}

// startBinary runs bin with env and waits until base/healthz answers.
func startBinary(t *testing.T, bin string, env []string, base string) *serviceProc {
	t.Helper()
	p, err := launchBinary(t, bin, env, base)
	if err != nil {
		t.Fatalf("the service: %v", err)
	}
	return p
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *serviceProc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

func (p *serviceProc) logText() string {
	b, _ := os.ReadFile(p.log)
	return string(b)
}
