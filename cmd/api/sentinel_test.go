package main

// The service on Redis Sentinel: a master killed under load, a planned
// switch-over, and what EMQ_ACK_REPLICAS promises across both.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

// haPrefix is the key prefix of the services these tests start.
const haPrefix = "ha"

// haReplicaLag is how long the replica is stopped before its master is
// killed: well under the sentinels' down-after (2 s: a replica down that
// long is unfit for promotion), long enough for the master's stream to it
// to back up past the sockets' buffers under full load.
const haReplicaLag = 900 * time.Millisecond

// haLoad drives one queue through one service at full speed: producers
// enqueue jobs under ids of their own, workers claim and complete them.
// It records every write the service acknowledged (an enqueue answered
// 201 or 200, a complete answered 200), and fails the test on any answer
// but 2xx, 409 or 404 (a fenced complete) and 503 with Retry-After.
type haLoad struct {
	t         *testing.T
	queueURL  string
	mu        sync.Mutex
	enqueued  []string     // ids whose enqueue was acknowledged
	completed []string     // ids whose complete was acknowledged
	refused   atomic.Int64 // 503s (each with Retry-After) and transport errors, retried
	fenced    atomic.Int64 // completes answered 409 or 404
	wg        sync.WaitGroup
	stop      context.CancelFunc
}

// startLoad starts producers and workers on queueURL.
func startLoad(t *testing.T, queueURL string, producers, workers int) *haLoad {
	ctx, stop := context.WithCancel(context.Background())
	l := &haLoad{t: t, queueURL: queueURL, stop: stop}
	for p := range producers {
		l.wg.Add(1)
		go func() { defer l.wg.Done(); l.produce(ctx, p) }()
	}
	for range workers {
		l.wg.Add(1)
		go func() { defer l.wg.Done(); l.work(ctx) }()
	}
	t.Cleanup(l.halt)
	return l
}

// halt stops the load and waits for it.
func (l *haLoad) halt() { l.stop(); l.wg.Wait() }

// acked are the numbers of acknowledged enqueues and completes so far.
func (l *haLoad) acked() (enqueued, completed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.enqueued), len(l.completed)
}

// send sends one call until it is answered other than 503 or a transport
// error, and returns that answer; ok is false when ctx ended first.
func (l *haLoad) send(ctx context.Context, method, path, body string) (a answer, ok bool) {
	for ctx.Err() == nil {
		a, err := call(ctx, method, l.queueURL+path, body)
		switch {
		case ctx.Err() != nil:
			return a, false
		case err != nil:
			l.refused.Add(1)
		case a.Status == 503:
			if a.Header.Get("Retry-After") == "" {
				l.t.Errorf("%s %s: 503 without Retry-After: %s", method, path, a)
			}
			l.refused.Add(1)
		default:
			return a, true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return answer{}, false
}

// haPayload is every job's payload: 4 KB, so that a replica that lags
// lags by megabytes, more than the sockets between it and its master
// hold.
var haPayload = `"` + strings.Repeat("x", 4096) + `"`

// produce enqueues jobs p-000000, p-000001... one at a time, repeating an
// enqueue that was not acknowledged under the same id.
func (l *haLoad) produce(ctx context.Context, p int) {
	for n := 0; ; n++ {
		id := fmt.Sprintf("p%d-%06d", p, n)
		a, ok := l.send(ctx, "POST", "/jobs", fmt.Sprintf(`{"id":%q,"payload":%s}`, id, haPayload))
		if !ok {
			return
		}
		if a.Status != 201 && a.Status != 200 {
			l.t.Errorf("enqueue %s: got %s, want 201 or 200", id, a)
			return
		}
		l.mu.Lock()
		l.enqueued = append(l.enqueued, id)
		l.mu.Unlock()
	}
}

// work claims up to five jobs at a time and completes each, repeating a
// complete that was not acknowledged with the same token.
func (l *haLoad) work(ctx context.Context) {
	for {
		a, ok := l.send(ctx, "POST", "/claim", `{"lease_ms":3000,"count":5,"wait_ms":200}`)
		if !ok {
			return
		}
		var got heldJobs
		if a.Status != 200 || json.Unmarshal(a.Body, &got) != nil {
			l.t.Errorf("claim: got %s, want 200", a)
			return
		}
		for _, j := range got.Jobs {
			a, ok := l.send(ctx, "POST", "/jobs/"+j.ID+"/complete", fmt.Sprintf(`{"token":%d}`, j.Token))
			switch {
			case !ok:
				return
			case a.Status == 200:
				l.mu.Lock()
				l.completed = append(l.completed, j.ID)
				l.mu.Unlock()
			case a.Status == 409 || a.Status == 404:
				l.fenced.Add(1)
			default:
				l.t.Errorf("complete %s: got %s, want 200, 409 or 404", j.ID, a)
				return
			}
		}
	}
}

// lost counts the acknowledged writes that the Redis at addr does not
// hold: an enqueued job without its row, a completed one whose row is not
// completed.
func (l *haLoad) lost(t *testing.T, addr, queue string) (enqueues, completes int) {
	t.Helper()
	ctx := context.Background()
	rdb := newRedisClient(t, addr)
	keys := keyspace.NewQueue(haPrefix, queue)
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, id := range l.enqueued {
		if n, err := rdb.Exists(ctx, keys.Job(id)).Result(); err != nil || n != 1 {
			enqueues++
		}
	}
	for _, id := range l.completed {
		if state, err := rdb.HGet(ctx, keys.Job(id), "state").Result(); err != nil || state != "completed" {
			completes++
		}
	}
	return enqueues, completes
}

// haService starts the service on s with ackReplicas.
func haService(t *testing.T, s *redistest.Sentinel, ackReplicas int) (string, *logBuffer) {
	t.Helper()
	base, logs, stop := startService(t, map[string]string{"EMQ_REDIS_URL": s.URL(), "EMQ_PREFIX": haPrefix,
		"EMQ_ACK_REPLICAS": strconv.Itoa(ackReplicas), "EMQ_ACK_TIMEOUT": "500ms",
		"EMQ_KEEP_COMPLETED": "0", // every completed row kept, to be counted
		// A job a failover made stall must not die of it.
		"EMQ_SWEEP_INTERVAL": "200ms", "EMQ_MAX_STALLED": "100"})
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	})
	return base, logs
}

// readyMaster waits until /readyz names addr as the master in use.
func readyMaster(t *testing.T, base, addr string) {
	t.Helper()
	var last string
	eventually(t, 20*time.Second, "/readyz naming the master "+addr, func() bool {
		a, err := call(context.Background(), "GET", base+"/readyz", "")
		var h struct {
			RedisMaster string `json:"redis_master"`
		}
		if err == nil && a.Status == 200 && json.Unmarshal(a.Body, &h) == nil {
			last = h.RedisMaster
		}
		return last == addr
	})
}

// killUnderLoad kills the master of a Sentinel deployment with one
// replica under four producers and four workers, brings the killed node
// back (Sentinel makes it a replica of the promoted one), and returns
// the acknowledged writes the promoted master does not hold. Just before
// the kill the replica lags: its process is stopped for replicaLag, so
// that the master's replication stream backs up behind it, as behind a
// slow network or a busy replica. (Without that, a master killed on one
// machine loses nothing it answered: the kernel still delivers what it
// had written to the replica's socket. A machine or network failure
// does not.)
func killUnderLoad(t *testing.T, ackReplicas int, replicaLag time.Duration) (enqueued, completed, lostEnqueues, lostCompletes int) {
	s := redistest.StartSentinel(t, 1)
	base, _ := haService(t, s, ackReplicas)
	ctx := context.Background()
	master, err := s.Master(ctx)
	if err != nil {
		t.Fatal(err)
	}
	replicas, err := s.Replicas(ctx)
	if err != nil || len(replicas) != 1 {
		t.Fatalf("replicas %v, %v; want 1", replicas, err)
	}
	readyMaster(t, base, master.Addr)
	q := redistest.Queue(t)
	load := startLoad(t, base+"/queues/"+q, 4, 4)
	eventually(t, 30*time.Second, "300 enqueues acknowledged before the kill", func() bool {
		n, _ := load.acked()
		return n >= 300
	})

	// The master by its process: the fixture's KillMaster would ask the
	// stopped replica who is master, and wait.
	masterPID, killed := processOf(t, master.Addr), master.Addr
	resume := pauseProcess(t, replicas[0].Addr)
	time.Sleep(replicaLag)
	if err := syscall.Kill(masterPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	master.Stop() // reaps the killed process: the fixture then knows it is down
	resume()
	promoted := s.WaitNewMaster(t, killed, 75*time.Second) // past a TILT on a starved machine
	s.Restart(t, killed)
	readyMaster(t, base, promoted)
	before, _ := load.acked()
	eventually(t, 30*time.Second, "300 more enqueues acknowledged after the failover", func() bool {
		n, _ := load.acked()
		return n >= before+300
	})
	load.halt()

	enqueued, completed = load.acked()
	lostEnqueues, lostCompletes = load.lost(t, promoted, q)
	t.Logf("EMQ_ACK_REPLICAS=%d: the replica stopped %v, then master %s killed, %s promoted; %d enqueues and %d completes acknowledged, "+
		"%d enqueues and %d completes of those lost; %d calls retried (503 or no answer), %d completes fenced",
		ackReplicas, replicaLag, killed, promoted, enqueued, completed, lostEnqueues, lostCompletes, load.refused.Load(), load.fenced.Load())
	return enqueued, completed, lostEnqueues, lostCompletes
}

// processOf is the process id of the redis-server at addr.
func processOf(t *testing.T, addr string) int {
	t.Helper()
	info, err := newRedisClient(t, addr).Info(context.Background(), "server").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			if pid, err := strconv.Atoi(v); err == nil {
				return pid
			}
		}
	}
	t.Fatalf("no process_id in %s's INFO", addr)
	return 0
}

// pauseProcess stops the redis-server at addr (SIGSTOP) and returns what
// resumes it (SIGCONT), which the test's end also does.
func pauseProcess(t *testing.T, addr string) (resume func()) {
	t.Helper()
	pid := processOf(t, addr)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	resume = func() { once.Do(func() { _ = syscall.Kill(pid, syscall.SIGCONT) }) }
	t.Cleanup(resume)
	return resume
}

// TestSentinelKilledMasterLosesNoAcknowledgedWrite kills the master with
// SIGKILL under load with EMQ_ACK_REPLICAS=1: every enqueue and complete
// the service acknowledged is on the promoted replica, and the service
// writes again, on its own, once the killed node is back as a replica.
func TestSentinelKilledMasterLosesNoAcknowledgedWrite(t *testing.T) {
	t.Parallel()
	_, _, lostEnqueues, lostCompletes := killUnderLoad(t, 1, haReplicaLag)
	if lostEnqueues > 0 || lostCompletes > 0 {
		t.Errorf("with EMQ_ACK_REPLICAS=1 a failover lost %d acknowledged enqueues and %d acknowledged completes; want none",
			lostEnqueues, lostCompletes)
	}
}

// TestSentinelKilledMasterWithoutAck runs the same failover without
// EMQ_ACK_REPLICAS: the service follows the new master, answers only what
// a worker expects, and the test logs how many acknowledged writes the
// failover lost (asynchronous replication: the writes of the last moments
// before the kill). docs/scaling.md gives the figures of ten runs.
func TestSentinelKilledMasterWithoutAck(t *testing.T) {
	t.Parallel()
	enqueued, completed, _, _ := killUnderLoad(t, 0, haReplicaLag)
	if enqueued < 600 || completed == 0 {
		t.Errorf("%d enqueues and %d completes acknowledged; want 600 and some", enqueued, completed)
	}
}

// TestSentinelSwitchOverCarriesOn switches the master over (SENTINEL
// FAILOVER, as for maintenance) under load with EMQ_ACK_REPLICAS=1:
// nothing acknowledged is lost, /readyz names the new master within
// seconds, and what was waiting carries on: a long poll is handed a job
// enqueued after the switch, an event stream shows that job's enqueue
// (resuming with Last-Event-ID if the switch cut it), and the reaper
// recovers a job whose lease lapsed.
func TestSentinelSwitchOverCarriesOn(t *testing.T) {
	t.Parallel()
	s := redistest.StartSentinel(t, 1)
	base, logs := haService(t, s, 1)
	ctx := context.Background()
	q, orphans, waiting := redistest.Queue(t), redistest.Queue(t), redistest.Queue(t)

	// A job whose holder will vanish: the reaper must recover it after the switch.
	mustCall(t, "POST", base+"/queues/"+orphans+"/jobs", `{"id":"orphan","payload":1}`, 201, nil)
	mustCall(t, "POST", base+"/queues/"+orphans+"/claim", `{"lease_ms":1500}`, 200, nil)
	events := followEvents(t, base+"/queues/"+waiting+"/events")
	handed := make(chan string, 1)
	go pollUntilHanded(t, base+"/queues/"+waiting+"/claim", handed)

	load := startLoad(t, base+"/queues/"+q, 2, 2)
	eventually(t, 30*time.Second, "200 enqueues acknowledged before the switch", func() bool {
		n, _ := load.acked()
		return n >= 200
	})
	from, to := s.Failover(t)
	switched := time.Now()
	readyMaster(t, base, to)
	followed := time.Since(switched)
	for _, addr := range []string{from, to} {
		if !strings.Contains(logs.String(), `msg="Redis master in use" master_name=emq addr=`+addr) {
			t.Errorf("the log does not name %s as the master in use", addr)
		}
	}
	if !slices.ContainsFunc(strings.Split(logs.String(), "\n"), func(line string) bool {
		return strings.Contains(line, "persistence is off") && strings.Contains(line, "master="+from)
	}) {
		t.Errorf("the start-up check of persistence does not name the master it read, %s", from)
	}
	before, _ := load.acked()
	eventually(t, 30*time.Second, "200 more enqueues acknowledged after the switch", func() bool {
		n, _ := load.acked()
		return n >= before+200
	})

	eventually(t, 20*time.Second, "the orphaned job recovered by the reaper after the switch", func() bool {
		a, err := call(ctx, "GET", base+"/queues/"+orphans+"/jobs/orphan", "")
		return err == nil && a.Status == 200 && strings.Contains(string(a.Body), `"state":"pending"`)
	})
	mustCall(t, "POST", base+"/queues/"+waiting+"/jobs", `{"id":"after-switch","payload":2}`, 201, nil)
	select {
	case id := <-handed:
		if id != "after-switch" {
			t.Errorf("the long poll was handed %q, want after-switch", id)
		}
	case <-time.After(30 * time.Second):
		t.Error("the long poll waiting across the switch was handed no job")
	}
	eventually(t, 30*time.Second, "the event stream showing the enqueue made after the switch", func() bool {
		return events.saw(`"job_id":"after-switch"`)
	})

	load.halt()
	enqueued, completed := load.acked()
	lostEnqueues, lostCompletes := load.lost(t, to, q)
	t.Logf("switch-over %s -> %s: /readyz named the new master %v after; %d enqueues, %d completes acknowledged, %d and %d lost; %d calls retried; event stream reconnected %d times",
		from, to, followed.Round(10*time.Millisecond), enqueued, completed, lostEnqueues, lostCompletes, load.refused.Load(), events.reconnects.Load())
	if lostEnqueues > 0 || lostCompletes > 0 {
		t.Errorf("a planned switch-over lost %d acknowledged enqueues and %d acknowledged completes; want none", lostEnqueues, lostCompletes)
	}
}

// pollUntilHanded claims from url with long waits, retrying a 503 or a transport
// error, until it is handed a job, whose id it sends on handed.
func pollUntilHanded(t *testing.T, url string, handed chan<- string) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		a, err := call(ctx, "POST", url, `{"lease_ms":60000,"wait_ms":10000}`)
		if err != nil || a.Status == 503 {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		var got heldJobs
		if a.Status != 200 || json.Unmarshal(a.Body, &got) != nil {
			t.Errorf("long poll: got %s, want 200", a)
			return
		}
		if len(got.Jobs) > 0 {
			handed <- got.Jobs[0].ID
			return
		}
	}
}

// eventFollower reads a queue's event stream, reconnecting with
// Last-Event-ID when the stream ends, and keeps what it read.
type eventFollower struct {
	mu         sync.Mutex
	text       strings.Builder
	reconnects atomic.Int64
}

func (f *eventFollower) saw(s string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Contains(f.text.String(), s)
}

// followEvents follows url's events until the test ends.
func followEvents(t *testing.T, url string) *eventFollower {
	f := &eventFollower{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		last := ""
		for ctx.Err() == nil {
			last = f.read(ctx, url, last)
			if ctx.Err() == nil {
				f.reconnects.Add(1)
				time.Sleep(100 * time.Millisecond)
			}
		}
	}()
	return f
}

// read reads one connection of the stream, from after lastID, and
// returns the last event id it saw.
func (f *eventFollower) read(ctx context.Context, url, lastID string) string {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return lastID
	}
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req) // no timeout: a stream lasts

	if err != nil {
		return lastID
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return lastID
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if id, ok := strings.CutPrefix(line, "id: "); ok {
			lastID = id
		}
		f.mu.Lock()
		f.text.WriteString(line + "\n")
		f.mu.Unlock()
	}
	return lastID
}
