package main

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

// The live reshard's load: producers and workers, and how long the load
// runs around the two moves. On the project's 2-core machine under -race
// the test takes about 10-12 s when every promise holds, 15-20 s when jobs
// are stranded (the drain then waits two leases for them). A busy machine
// makes it take minutes; its waits go on while the load or a move makes
// progress, and end once none has been made for reshardStall, so that a
// service that hangs fails it within seconds of hanging.
const (
	reshardPrefix     = "reshard"
	reshardProducers  = 4
	reshardWorkers    = 6
	reshardWarmup     = 1500                   // completed jobs before the first move
	reshardStep       = 10 * time.Millisecond  // pause between MIGRATE batches
	reshardBetween    = 500 * time.Millisecond // steady load between and after the moves
	reshardLeaseMs    = 3000
	reshardSlack      = time.Second      // a 503 answered this long after a window is still its
	reshardRetryLimit = 10 * time.Second // how long a client repeats one call on 503s
	// reshardStall bounds the waits on the load and on the moves: the
	// warm-up fails once no job has completed for this long, the drain once
	// the queue's counts have not changed, a move once no key has left the
	// slot's source. A busy machine makes them slow, not stuck: a fixed
	// time for a number of jobs or keys would measure the machine.
	reshardStall = 10 * time.Second
)

// TestLiveReshardLosesNothing moves a busy queue's slot to another master
// and back, key by key, as redis-cli --cluster reshard does, while 4
// producers enqueue jobs with known ids (one at a time and in small
// batches) and 6 workers claim, extend, fail once (so that delayed jobs and
// retries exist) and complete them (some with claim-next), through two
// service replicas on a 3-master cluster. Clients repeat a call answered
// 503 or lost (every verb they use is safe to repeat) and drop a job
// answered 409 EMQSTALE.
//
// Before the load, a dead job, a job delayed by an hour and a cancelled
// job are parked in the queue (see park): a queue in use has them, and
// without them the scripts would never run while the queue's keys are split.
//
// The service's promises, checked afterwards: every answer during the whole
// run was 2xx, 409 EMQSTALE, or 503 with Retry-After, and every 503 came
// while the slot was moving (within 1 s of a move's end); every job a
// producer was answered 200/201 for was completed exactly once, under one
// token, its id in the completed set and no other, its row completed; the
// parked jobs are where they were; the queue ends with nothing pending or
// active, and nothing delayed, dead or cancelled but the parked jobs. A
// MIGRATE refused with BUSYKEY (the service wrote a key on the target while
// the source still held it) fails the test too.
func TestLiveReshardLosesNothing(t *testing.T) {
	t.Parallel()
	testLiveReshard(t, false)
}

// TestLiveReshardLosesNothingUnderFlowControl is the same reshard on a
// queue with flow control: the jobs spread over 8 groups, at most 2 of a
// group active at once. Its calls are refused whole (503) while the slot
// moves, as the flow control keys are not declared (docs/design.md#flow-control);
// the same promises hold, and the groups' counters end at zero.
func TestLiveReshardLosesNothingUnderFlowControl(t *testing.T) {
	t.Parallel()
	testLiveReshard(t, true)
}

func testLiveReshard(t *testing.T, grouped bool) {
	began := time.Now()
	cluster := redistest.StartCluster(t, 3, 0)
	r := &reshardRun{t: t, tally: newCompletions(), acked: map[string]bool{}, tried: map[string]bool{},
		failed: map[string]bool{}, grouped: grouped}
	for range 2 {
		base, logs, stop := startService(t, map[string]string{"EMQ_REDIS_URL": cluster.URL(),
			"EMQ_PREFIX": reshardPrefix, "EMQ_SWEEP_INTERVAL": "200ms", "EMQ_MAX_STALLED": "10"})
		t.Cleanup(func() {
			if err := stop(); err != nil {
				t.Error(err)
			}
		})
		r.bases, r.logs = append(r.bases, base), append(r.logs, logs)
	}
	r.queue = redistest.Queue(t)
	keys := keyspace.NewQueue(reshardPrefix, r.queue)
	setup, cancelSetup := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancelSetup()
	slot, err := cluster.SlotOf(setup, keys.Meta())
	if err != nil {
		t.Fatal(err)
	}
	home, err := cluster.Owner(keys.Meta())
	if err != nil {
		t.Fatal(err)
	}
	masters, err := cluster.Masters(setup)
	if err != nil {
		t.Fatal(err)
	}
	away := ""
	for _, m := range masters {
		if m.Addr != home && away == "" {
			away = m.Addr
		}
	}
	if away == "" {
		t.Fatalf("no master other than %s among %d", home, len(masters))
	}

	r.park()
	if grouped {
		mustCall(t, "PUT", r.bases[0]+"/queues/"+r.queue+"/settings", `{"group_concurrency":2}`, 200, nil)
	}

	// The load: producers until stopProducers, workers until stopWorkers.
	workCtx, stopWorkers := context.WithCancel(context.Background())
	prodCtx, stopProducers := context.WithCancel(workCtx)
	idle := make(chan struct{}) // closed after the drain: the workers claim no more
	var producers, workers sync.WaitGroup
	defer func() { stopWorkers(); producers.Wait(); workers.Wait() }() // also when the test fails early
	for p := range reshardProducers {
		producers.Add(1)
		go func() { defer producers.Done(); r.produce(workCtx, prodCtx.Done(), p) }()
	}
	for w := range reshardWorkers {
		workers.Add(1)
		go func() { defer workers.Done(); r.work(workCtx, idle, w) }()
	}
	loadBegan := time.Now()
	whileProgressing(t, reshardStall, fmt.Sprintf("%d jobs completed before the first move", reshardWarmup),
		r.tally.ok.Load, reshardWarmup)
	t.Logf("warm-up: %d jobs completed in %v", reshardWarmup, time.Since(loadBegan).Round(100*time.Millisecond))

	// The moves: there and back, with steady load in between.
	var windows []redistest.Window
	var migrateErr error
	for i, move := range [][2]string{{home, away}, {away, home}} {
		if i > 0 {
			time.Sleep(reshardBetween)
		}
		w, err := moveSlot(cluster, slot, move[0], move[1])
		windows = append(windows, w)
		if err != nil {
			migrateErr = err
			break
		}
	}
	if migrateErr == nil {
		time.Sleep(reshardBetween)
	}
	stopProducers()
	producers.Wait()
	producedAt := time.Now()

	// The drain: the workers finish what the producers were answered for.
	var counts queueCounts
	drained := false
	if migrateErr == nil {
		drained = r.drain(workCtx, &counts)
	}
	// The workers finish the calls they have begun: the drain can see a
	// job completed before its worker has read the 200, and a call cut
	// short would leave that job completed with no 200 seen.
	close(idle)
	workers.Wait()
	stopWorkers()
	drainedAt := time.Now()

	r.logFigures(windows, loadBegan, producedAt, drainedAt, began)
	if migrateErr != nil {
		t.Errorf("the move of slot %d failed (the slot is left half moved: the drain and the job checks are skipped): %v",
			slot, migrateErr)
	}
	r.checkAnswers(windows)
	if migrateErr != nil {
		return
	}
	if !drained {
		t.Errorf("the queue did not drain (nothing left to claim for %v, or its counts unchanged for %v) after the producers stopped: counts %v, %d jobs acknowledged",
			2*reshardLeaseMs*time.Millisecond, reshardStall, counts.Counts, len(r.acked))
	}
	for state, want := range map[string]int64{"pending": 0, "active": 0, "delayed": 1, "dead": 1, "cancelled": 1} {
		if n := counts.Counts[state]; n != want {
			t.Errorf("counts %v at the end, want %s = %d (the parked jobs only)", counts.Counts, state, want)
		}
	}
	r.checkJobs(cluster, keys)
	if grouped {
		r.checkGroups(cluster, keys)
	}
}

// whileProgressing waits until count reaches want, failing the test once
// count has not grown for stall.
func whileProgressing(t *testing.T, stall time.Duration, what string, count func() int64, want int64) {
	t.Helper()
	began := time.Now()
	last, moved := count(), began
	for last < want {
		time.Sleep(50 * time.Millisecond)
		if n := count(); n > last {
			last, moved = n, time.Now()
		}
		if time.Since(moved) > stall {
			t.Fatalf("%s: %d after %v, none more in the last %v", what, last,
				time.Since(began).Round(100*time.Millisecond), stall)
		}
	}
}

// moveSlot moves slot from one master to another (cluster.MigrateSlot),
// and gives the move up once the keys left in the slot on the source have
// not fallen for reshardStall.
func moveSlot(cluster *redistest.Cluster, slot int, from, to string) (redistest.Window, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		src := redis.NewClient(&redis.Options{Addr: from})
		defer src.Close()
		least, moved := int64(-1), time.Now()
		for ctx.Err() == nil {
			if n, err := src.ClusterCountKeysInSlot(ctx, slot).Result(); err == nil && (least < 0 || n < least) {
				least, moved = n, time.Now()
			}
			if time.Since(moved) > reshardStall {
				cancel()
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	w, err := cluster.MigrateSlot(ctx, slot, from, to, reshardStep)
	stuck := ctx.Err() != nil
	cancel()
	<-watched
	if err != nil && stuck {
		err = fmt.Errorf("no key left the source for %v: %w", reshardStall, err)
	}
	return w, err
}

// checkGroups checks that a grouped run's groups ended as its jobs did:
// nothing active or delayed in any group, nothing indexed as pending.
func (r *reshardRun) checkGroups(cluster *redistest.Cluster, keys keyspace.Queue) {
	ctx := context.Background()
	rdb := cluster.Client(r.t)
	counters, err := rdb.HGetAll(ctx, keys.Flow()).Result()
	if err != nil {
		r.t.Fatal(err)
	}
	for field, v := range counters {
		if (strings.HasPrefix(field, "a:") || strings.HasPrefix(field, "d:")) && v != "0" {
			r.t.Errorf("flow %s = %s after the drain, want 0 (flow %v)", field, v, counters)
		}
	}
	if n := rdb.ZCard(ctx, keys.GroupPending()).Val(); n != 0 {
		r.t.Errorf("%d jobs indexed as pending in their groups after the drain", n)
	}
}

// reshardRun is the state of one TestLiveReshardLosesNothing: every call
// the clients made, and what they were answered.
type reshardRun struct {
	t     *testing.T
	queue string
	bases []string     // the service replicas
	logs  []*logBuffer // their logs, in the same order
	tally *completions // the completes answered 200, by id and token

	mu     sync.Mutex
	calls  []reshardCall
	acked  map[string]bool // ids a producer was answered 200/201 for
	tried  map[string]bool // every id a producer sent
	failed map[string]bool // ids whose one failed attempt was answered 200
	lb     atomic.Uint64   // round robin over the replicas
	// grouped puts every job in one of 8 groups, on a queue with
	// group_concurrency 2 (TestLiveReshardLosesNothingUnderFlowControl).
	grouped bool
}

// reshardCall is one HTTP call and its answer.
type reshardCall struct {
	op               string // enqueue, batch, claim, extend, fail, complete, counts
	replica          int
	path             string
	sent, answered   time.Time
	status           int    // 0: no answer (a transport error)
	code, retryAfter string // the problem's code, the Retry-After header
	body             string // of an answer that is not 2xx
}

// send sends one call to the next replica (round robin, as a load
// balancer would), records it, and returns its answer. A call cut short
// by ctx (the run is over) is not recorded.
func (r *reshardRun) send(ctx context.Context, op, method, path, body string) (answer, error) {
	replica := int(r.lb.Add(1) % uint64(len(r.bases)))
	c := reshardCall{op: op, replica: replica, path: path, sent: time.Now()}
	a, err := call(ctx, method, r.bases[replica]+path, body)
	c.answered = time.Now()
	if err != nil && ctx.Err() != nil {
		return a, err
	}
	if err != nil {
		c.body = err.Error()
	} else {
		c.status, c.retryAfter = a.Status, a.Header.Get("Retry-After")
		if a.Status/100 != 2 {
			c.body = string(a.Body)
			var p struct {
				Code string `json:"code"`
			}
			_ = json.Unmarshal(a.Body, &p)
			c.code = p.Code
		}
	}
	r.mu.Lock()
	r.calls = append(r.calls, c)
	r.mu.Unlock()
	return a, err
}

// repeat sends a call until it is answered something other than 503 (or
// not at all), as a client does with a verb that is safe to repeat, for
// at most reshardRetryLimit. It reports false when it gave up or ctx
// ended.
func (r *reshardRun) repeat(ctx context.Context, op, method, path, body string) (answer, bool) {
	deadline := time.Now().Add(reshardRetryLimit)
	for {
		a, err := r.send(ctx, op, method, path, body)
		if ctx.Err() != nil {
			return a, false
		}
		if err == nil && a.Status != 503 {
			return a, true
		}
		if time.Now().After(deadline) {
			return a, false
		}
		r.tally.retried.Add(1)
		time.Sleep(20 * time.Millisecond)
	}
}

// produce enqueues jobs p<p>-<n>, alternating one job and batches of 2 to
// 5, until stop ends; a call answered 503 or lost is repeated with the
// same ids (an enqueue of an id that exists adds nothing), also after
// stop, within reshardRetryLimit, unless ctx ends.
func (r *reshardRun) produce(ctx context.Context, stop <-chan struct{}, p int) {
	n := 0
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		size := 1
		if i%2 == 1 {
			size = 2 + i/2%4
		}
		ids := make([]string, size)
		items := make([]string, size)
		for k := range ids {
			ids[k] = fmt.Sprintf("p%d-%05d", p, n)
			items[k] = fmt.Sprintf(`{"id":%q,"payload":{"n":%d},"max_attempts":20}`, ids[k], n)
			if r.grouped {
				items[k] = fmt.Sprintf(`{"id":%q,"payload":{"n":%d},"max_attempts":20,"group":"g%d"}`, ids[k], n, n%8)
			}
			n++
		}
		r.mu.Lock()
		for _, id := range ids {
			r.tried[id] = true
		}
		r.mu.Unlock()
		var a answer
		var ok bool
		if size == 1 {
			a, ok = r.repeat(ctx, "enqueue", "POST", "/queues/"+r.queue+"/jobs", items[0])
			ok = ok && (a.Status == 201 || a.Status == 200)
		} else {
			a, ok = r.repeat(ctx, "batch", "POST", "/queues/"+r.queue+"/jobs/batch", `{"jobs":[`+strings.Join(items, ",")+`]}`)
			ok = ok && a.Status == 200
		}
		if ok {
			r.mu.Lock()
			for _, id := range ids {
				r.acked[id] = true
			}
			r.mu.Unlock()
		}
		time.Sleep(time.Duration(2+i%4*2) * time.Millisecond)
	}
}

// parkedJobs are the jobs park leaves in the queue for the whole run, by
// the state they stay in.
var parkedJobs = map[string]string{"parked-dead": "dead", "parked-delayed": "delayed", "parked-cancelled": "cancelled"}

// park leaves a dead job, a job delayed by an hour and a cancelled one in
// the queue, before the load starts, as a queue in use has: so that every
// key the scripts name (the dead and cancelled sets too) exists while the
// slot moves. (A script that names a key the node does not have is
// refused outright during a move, ASK or TRYAGAIN, before it runs: on a
// queue with no dead job the scripts would never run with the queue's
// keys split between two nodes.)
func (r *reshardRun) park() {
	t, q := r.t, r.bases[0]+"/queues/"+r.queue
	mustCall(t, "POST", q+"/jobs", `{"id":"parked-dead","payload":null,"max_attempts":1}`, 201, nil)
	var held heldJobs
	mustCall(t, "POST", q+"/claim", `{"count":1}`, 200, &held)
	if len(held.Jobs) != 1 || held.Jobs[0].ID != "parked-dead" {
		t.Fatalf("claimed %+v, want parked-dead", held.Jobs)
	}
	mustCall(t, "POST", q+"/jobs/parked-dead/fail", fmt.Sprintf(`{"token":%d,"error":"parked","fatal":true}`, held.Jobs[0].Token), 200, nil)
	mustCall(t, "POST", q+"/jobs", `{"id":"parked-delayed","payload":null,"delay_ms":3600000}`, 201, nil)
	mustCall(t, "POST", q+"/jobs", `{"id":"parked-cancelled","payload":null,"delay_ms":3600000}`, 201, nil)
	mustCall(t, "POST", q+"/jobs/parked-cancelled/cancel", `{"reason":"parked"}`, 200, nil)
	var counts queueCounts
	mustCall(t, "GET", q, "", 200, &counts)
	for state, want := range map[string]int64{"pending": 0, "active": 0, "delayed": 1, "dead": 1, "cancelled": 1} {
		if counts.Counts[state] != want {
			t.Fatalf("counts %v after parking, want %s = %d", counts.Counts, state, want)
		}
	}
}

// reshardJob is a job as a claim or a claim-next answers it.
type reshardJob struct {
	ID       string `json:"id"`
	Token    int64  `json:"token"`
	Attempts int    `json:"attempts"`
	State    string `json:"state"`
}

// pick is a stable choice by job id: true for about one id in every n.
func pick(id string, salt string, n uint32) bool {
	h := fnv.New32a()
	h.Write([]byte(salt + id))
	return h.Sum32()%n == 0
}

// work claims up to 3 jobs at a time (a short long poll) until ctx ends
// or, with no job in hand, idle is closed, and handles each: about one in
// five gets a lease extension first, about one in six fails its first
// attempt (retried 100 ms later), and the rest complete. Odd workers
// complete their last job with claim-next and work on what it brought.
func (r *reshardRun) work(ctx context.Context, idle <-chan struct{}, w int) {
	q := "/queues/" + r.queue
	var next []reshardJob
	for ctx.Err() == nil {
		jobs := next
		next = nil
		if len(jobs) == 0 {
			select {
			case <-idle:
				return
			default:
			}
			a, ok := r.repeat(ctx, "claim", "POST", q+"/claim",
				fmt.Sprintf(`{"lease_ms":%d,"count":3,"wait_ms":100,"worker":"w%d"}`, reshardLeaseMs, w))
			var got struct {
				Jobs []reshardJob `json:"jobs"`
			}
			if !ok || a.Status != 200 || json.Unmarshal(a.Body, &got) != nil {
				time.Sleep(20 * time.Millisecond) // an answer no worker expects: recorded, and checked at the end
				continue
			}
			jobs = got.Jobs
		}
		for i, j := range jobs {
			next = append(next, r.handle(ctx, w, j, w%2 == 1 && i == len(jobs)-1)...)
		}
	}
}

// handle does what work decided for j, and returns the jobs a claim-next
// brought.
func (r *reshardRun) handle(ctx context.Context, w int, j reshardJob, claimNext bool) []reshardJob {
	path := "/queues/" + r.queue + "/jobs/" + j.ID
	// held reports whether the job is still the worker's after answer a.
	held := func(a answer, ok bool) bool {
		if ok && a.Status == 409 {
			r.tally.dropped.Add(1)
		}
		return ok && a.Status == 200
	}
	if j.Attempts == 1 && pick(j.ID, "fail", 6) {
		a, ok := r.repeat(ctx, "fail", "POST", path+"/fail",
			fmt.Sprintf(`{"token":%d,"error":"transient","retry_in_ms":100}`, j.Token))
		if held(a, ok) {
			r.mu.Lock()
			r.failed[j.ID] = true
			r.mu.Unlock()
		}
		return nil
	}
	if pick(j.ID, "extend", 5) {
		a, ok := r.repeat(ctx, "extend", "POST", path+"/lease",
			fmt.Sprintf(`{"token":%d,"lease_ms":%d,"progress":{"pct":50}}`, j.Token, reshardLeaseMs))
		if !held(a, ok) {
			return nil
		}
	}
	body := fmt.Sprintf(`{"token":%d,"result":{"by":"w%d"}}`, j.Token, w)
	if claimNext {
		body = fmt.Sprintf(`{"token":%d,"result":{"by":"w%d"},"claim":{"count":1,"lease_ms":%d,"worker":"w%d"}}`,
			j.Token, w, reshardLeaseMs, w)
	}
	a, ok := r.repeat(ctx, "complete", "POST", path+"/complete", body)
	if !held(a, ok) {
		return nil
	}
	var done struct {
		reshardJob
		Next []reshardJob `json:"next"`
	}
	if json.Unmarshal(a.Body, &done) != nil || done.State != "completed" {
		r.t.Errorf("complete %s: got %s, want the job completed", j.ID, a)
		return nil
	}
	r.tally.completed(j.ID, j.Token)
	return done.Next
}

// drain waits until the queue holds nothing pending, active or delayed and
// has completed every acknowledged job, or until nothing has been pending,
// active or delayed for two leases (what is missing then will not come),
// or its counts have not changed for reshardStall (nothing is moving). It
// reports whether every acknowledged job was completed.
func (r *reshardRun) drain(ctx context.Context, counts *queueCounts) bool {
	acked := int64(len(r.acked)) // the producers are done
	moved := time.Now()          // when the counts last changed
	var idleSince time.Time
	for time.Since(moved) < reshardStall {
		a, err := r.send(ctx, "counts", "GET", "/queues/"+r.queue, "")
		var c queueCounts
		if err == nil && a.Status == 200 && json.Unmarshal(a.Body, &c) == nil {
			if !maps.Equal(c.Counts, counts.Counts) {
				moved = time.Now()
			}
			*counts = c
			left := c.Counts["pending"] + c.Counts["active"] + c.Counts["delayed"] - 1 // the parked delayed job
			switch {
			case left == 0 && c.Counts["completed"] >= acked:
				return true
			case left > 0:
				idleSince = time.Time{}
			case idleSince.IsZero():
				idleSince = time.Now()
			case time.Since(idleSince) > 2*reshardLeaseMs*time.Millisecond:
				return false
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

// checkAnswers fails the test for every answer the service may not give:
// anything but 2xx, 409 EMQSTALE, or 503 with Retry-After answered within
// a move's window (or reshardSlack after it); and for every call with no
// answer at all.
func (r *reshardRun) checkAnswers(windows []redistest.Window) {
	t := r.t
	var bad, outside []reshardCall
	for _, c := range r.calls {
		switch {
		case c.status/100 == 2, c.status == 409 && c.code == "EMQSTALE":
		case c.status == 503 && c.retryAfter != "":
			in := false
			for _, w := range windows {
				in = in || w.Contains(c.answered, reshardSlack)
			}
			if !in {
				outside = append(outside, c)
			}
		default:
			bad = append(bad, c)
		}
	}
	if len(bad) > 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "%d answers neither 2xx, 409 EMQSTALE nor 503 with Retry-After (by op and status: %s)",
			len(bad), tallyCalls(bad))
		fmt.Fprintf(&b, "\nerrors the service logged for its 500s: %s", r.loggedErrors("ERROR", "Request failed"))
		for i, c := range bad {
			if i == 5 {
				fmt.Fprintf(&b, "\n... and %d more", len(bad)-i)
				break
			}
			fmt.Fprintf(&b, "\n--- %s %s at %s (+%v after it was sent), replica %d, in a move: %v: status %d: %s",
				c.op, c.path, c.answered.Format("15:04:05.000"), c.answered.Sub(c.sent).Round(time.Millisecond),
				c.replica, inAny(windows, c.answered), c.status, strings.TrimSpace(c.body))
			for _, line := range r.logLinesOf(c) {
				fmt.Fprintf(&b, "\n    log: %s", line)
			}
		}
		t.Error(b.String())
	}
	if len(outside) > 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "%d answers 503 outside every move's window (+%v), by op and status: %s; windows %v",
			len(outside), reshardSlack, tallyCalls(outside), windowSpans(windows))
		for i, c := range outside {
			if i == 5 {
				break
			}
			fmt.Fprintf(&b, "\n--- %s %s at %s: %s", c.op, c.path, c.answered.Format("15:04:05.000"), strings.TrimSpace(c.body))
			for _, line := range r.logLinesOf(c) {
				fmt.Fprintf(&b, "\n    log: %s", line)
			}
		}
		t.Error(b.String())
	}
}

// checkJobs reads the queue's sets and rows from the cluster directly:
// every job a producer was answered for must be completed alone (its id in
// the completed set and no other, its row completed) and completed
// exactly once by the workers' tally (one token answered 200); a job sent
// but never acknowledged may be absent, or completed alone.
func (r *reshardRun) checkJobs(cluster *redistest.Cluster, keys keyspace.Queue) {
	t := r.t
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rdb := cluster.Client(t)
	states := []string{"pending", "active", "delayed", "completed", "dead", "cancelled"}
	ids := make([]string, 0, len(r.tried)+len(parkedJobs))
	for id := range r.tried {
		ids = append(ids, id)
	}
	for id := range parkedJobs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	misplaced := map[string][]string{} // what is wrong -> the ids
	wrong, unackedDone, duplicated, unanswered := 0, 0, 0, 0
	for chunk := range slices.Chunk(ids, 200) {
		scores := make([][]*redis.FloatCmd, len(chunk))
		rows := make([]*redis.StringCmd, len(chunk))
		_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, id := range chunk {
				for _, s := range states {
					scores[i] = append(scores[i], p.ZScore(ctx, keys.Set(s), id))
				}
				rows[i] = p.HGet(ctx, keys.Job(id), "state")
			}
			return nil
		})
		if err != nil && err != redis.Nil {
			t.Fatalf("reading the queue's sets: %v", err)
		}
		for i, id := range chunk {
			var in []string
			for k, s := range states {
				if scores[i][k].Err() == nil {
					in = append(in, s)
				}
			}
			state, _ := rows[i].Result()
			want, parked := parkedJobs[id]
			if !parked {
				want = "completed"
			}
			absent := len(in) == 0 && state == ""
			alone := len(in) == 1 && in[0] == want && state == want
			var what string
			switch {
			case alone, absent && !parked && !r.acked[id]:
			case absent:
				what = "gone: in no set, no row"
			case len(in) == 0:
				what = fmt.Sprintf("stranded: its row %q, in no set", state)
			case len(in) > 1:
				what = fmt.Sprintf("in %d sets %v, its row %q", len(in), in, state)
			default:
				what = fmt.Sprintf("in the %s set, its row %q", in[0], state)
			}
			if what != "" {
				wrong++
				kind := "an acknowledged job"
				switch {
				case parked:
					kind = "a parked job (want " + want + ")"
				case !r.acked[id]:
					kind = "a job sent, never acknowledged"
				}
				misplaced[kind+" "+what] = append(misplaced[kind+" "+what], id)
			}
			if parked || !r.acked[id] {
				if alone && !parked {
					unackedDone++
				}
				continue
			}
			switch n := len(r.tally.tokens(id)); {
			case n > 1:
				duplicated++
				t.Errorf("job %s was completed under %d tokens %v: it ran to completion twice", id, n, r.tally.tokens(id))
			case n == 0 && alone:
				unanswered++ // completed, but its worker never heard so (the rest are misplaced)
			}
		}
	}
	if wrong > 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "%d of %d jobs are not where they belong (acknowledged ones must be completed alone: in the completed set, and no other, their row completed):", wrong, len(ids))
		kinds := make([]string, 0, len(misplaced))
		for k := range misplaced {
			kinds = append(kinds, k)
		}
		sort.Slice(kinds, func(i, j int) bool { return len(misplaced[kinds[i]]) > len(misplaced[kinds[j]]) })
		for _, k := range kinds {
			fmt.Fprintf(&b, "\n  %d x %s, e.g. %v", len(misplaced[k]), k, misplaced[k][:min(5, len(misplaced[k]))])
		}
		t.Error(b.String())
	}
	if unanswered > 0 {
		t.Errorf("%d acknowledged jobs are completed, but no complete of theirs was answered 200", unanswered)
	}
	t.Logf("jobs: %d sent, %d acknowledged, %d completed with no acknowledgement, %d failed once; "+
		"%d completed under two tokens, %d completed with no 200 seen, %d not where they belong",
		len(r.tried), len(r.acked), unackedDone, len(r.failed), duplicated, unanswered, wrong)
}

// logFigures logs what happened: the moves, the answers by op and status,
// and what the service logged for its 503s and 500s.
func (r *reshardRun) logFigures(windows []redistest.Window, loadBegan, producedAt, drainedAt, began time.Time) {
	t := r.t
	for i, w := range windows {
		t.Logf("move %d: %v (began %v into the load)", i+1, w, w.Begin.Sub(loadBegan).Round(time.Millisecond))
	}
	n503 := 0
	for _, c := range r.calls {
		if c.status == 503 {
			n503++
		}
	}
	t.Logf("%d calls, %d answered 503; by op and status: %s", len(r.calls), n503, tallyCalls(r.calls))
	for i, w := range windows {
		var in []reshardCall
		for _, c := range r.calls {
			if w.Contains(c.answered, 0) {
				in = append(in, c)
			}
		}
		t.Logf("answered during move %d: %d calls; %s", i+1, len(in), tallyCalls(in))
	}
	t.Logf("workers: %d completes answered 200, %d jobs dropped on 409, %d calls repeated after a 503 or no answer",
		r.tally.ok.Load(), r.tally.dropped.Load(), r.tally.retried.Load())
	t.Logf("why the service answered 503 (its log): %s", r.loggedErrors("WARN", "Redis unavailable"))
	t.Logf("wall time: %v (load %v, drain %v)", time.Since(began).Round(100*time.Millisecond),
		producedAt.Sub(loadBegan).Round(100*time.Millisecond), drainedAt.Sub(producedAt).Round(100*time.Millisecond))
}

// tallyCalls counts calls by op and status, as "op status=n ...".
func tallyCalls(calls []reshardCall) string {
	n := map[string]int{}
	for _, c := range calls {
		k := fmt.Sprintf("%s %d", c.op, c.status)
		if c.code != "" {
			k += " " + c.code
		}
		n[k]++
	}
	keys := make([]string, 0, len(n))
	for k := range n {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s: %d", k, n[k])
	}
	return strings.Join(parts, ", ")
}

func inAny(windows []redistest.Window, at time.Time) bool {
	for _, w := range windows {
		if w.Contains(at, 0) {
			return true
		}
	}
	return false
}

func windowSpans(windows []redistest.Window) []string {
	var out []string
	for _, w := range windows {
		end := "not ended"
		if !w.End.IsZero() {
			end = w.End.Format("15:04:05.000")
		}
		out = append(out, w.Begin.Format("15:04:05.000")+"-"+end)
	}
	return out
}

var (
	logTimeRE  = regexp.MustCompile(`^time=(\S+)`)
	logErrorRE = regexp.MustCompile(`error=("(?:[^"\\]|\\.)*"|\S+)`)
	digitsRE   = regexp.MustCompile(`[0-9]+`)
)

// logLinesOf is the lines of the log of the replica that answered c that
// name c's path and were logged while c was in flight (the last 4: the
// one that explains c's answer is logged just before it).
func (r *reshardRun) logLinesOf(c reshardCall) []string {
	from, to := c.sent.Add(-time.Millisecond), c.answered.Add(time.Millisecond)
	var out []string
	for _, line := range strings.Split(r.logs[c.replica].String(), "\n") {
		if !strings.Contains(line, " path="+c.path+" ") && !strings.HasSuffix(line, " path="+c.path) {
			continue
		}
		m := logTimeRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if at, err := time.Parse(time.RFC3339Nano, m[1]); err == nil && !at.Before(from) && !at.After(to) {
			out = append(out, line)
		}
	}
	return out[max(0, len(out)-4):]
}

// loggedErrors groups the error= values of the replicas' log lines of
// level and msg, digits masked, most frequent first, with an example each.
func (r *reshardRun) loggedErrors(level, msg string) string {
	type group struct {
		n       int
		example string
	}
	groups := map[string]*group{}
	quoted := strconv.Quote(msg)
	for _, logs := range r.logs {
		for _, line := range strings.Split(logs.String(), "\n") {
			if !strings.Contains(line, "level="+level+" ") || !strings.Contains(line, "msg="+quoted) {
				continue
			}
			text := "(no error)"
			if m := logErrorRE.FindStringSubmatch(line); m != nil {
				text = m[1]
				if u, err := strconv.Unquote(text); err == nil {
					text = u
				}
			}
			k := digitsRE.ReplaceAllString(text, "N")
			if groups[k] == nil {
				groups[k] = &group{example: text}
			}
			groups[k].n++
		}
	}
	if len(groups) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return groups[keys[i]].n > groups[keys[j]].n })
	var b strings.Builder
	for i, k := range keys {
		if i == 8 {
			fmt.Fprintf(&b, "\n  ... and %d kinds more", len(keys)-i)
			break
		}
		fmt.Fprintf(&b, "\n  %d x %s", groups[k].n, groups[k].example)
	}
	return b.String()
}
