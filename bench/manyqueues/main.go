// Command manyqueues measures what many queues cost (docs/scaling.md,
// docs/performance.md#many-queues) against a running service and its
// Redis; bench/queues starts both and runs it.
//
//	go run ./bench/manyqueues -url http://127.0.0.1:8080 -redis 127.0.0.1:6379 -service-pid 1234 -mode memory -queues 2000
//	go run ./bench/manyqueues ... -mode scale -queues 100000 -idle 60s
//	go run ./bench/manyqueues ... -mode busy -queues 1000 -duration 30s
//
// memory: one job into each of -queues new queues, claimed and completed;
// Redis's memory per queue (used_memory before and after, and MEMORY
// USAGE of one queue's keys), and the Lua memory of the library.
// scale: a pending job into each of -queues new queues; then Redis's and
// the service's CPU over -idle with nothing due; the time a lapsed lease
// of one queue takes to be recovered; and the latency of GET /queues
// pages walked through every queue.
// busy: -queues queues that each get a job a second (enqueue, claim,
// complete) for -duration, then one queue that gets as many: Redis's CPU
// per job of each.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

type bench struct {
	base   string
	rdb    *redis.Client
	prefix string
	pid    int
	http   *http.Client
}

func main() {
	base := flag.String("url", "http://127.0.0.1:8080", "the service")
	addr := flag.String("redis", "127.0.0.1:6379", "its Redis (host:port)")
	prefix := flag.String("prefix", "emq", "its EMQ_PREFIX")
	pid := flag.Int("service-pid", 0, "the service's process id, for its CPU (0: not measured)")
	mode := flag.String("mode", "memory", "memory, scale or busy")
	queues := flag.Int("queues", 2000, "how many queues")
	idle := flag.Duration("idle", time.Minute, "scale: how long idle CPU is measured")
	duration := flag.Duration("duration", 30*time.Second, "busy: how long each load runs")
	sweep := flag.Duration("sweep-interval", 5*time.Second, "the service's EMQ_SWEEP_INTERVAL, for the recovery goal")
	flag.Parse()
	b := &bench{base: strings.TrimRight(*base, "/"), rdb: redis.NewClient(&redis.Options{Addr: *addr}), prefix: *prefix, pid: *pid,
		http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}}
	ctx := context.Background()
	var err error
	switch *mode {
	case "memory":
		err = b.memory(ctx, *queues, 30*time.Second+2*(*sweep))
	case "scale":
		err = b.scale(ctx, *queues, *idle, *sweep)
	case "busy":
		err = b.busy(ctx, *queues, *duration)
	default:
		err = fmt.Errorf("unknown -mode %q", *mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "manyqueues:", err)
		os.Exit(1)
	}
}

// call sends a JSON request and decodes a JSON answer into out (nil: none).
func (b *bench) call(method, path string, body, out any) error {
	var r io.Reader
	if body != nil {
		data, _ := json.Marshal(body)
		r = bytes.NewReader(data)
	}
	req, _ := http.NewRequest(method, b.base+path, r)
	req.Header.Set("Content-Type", "application/json")
	resp, err := b.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, data)
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

type claimed struct {
	Jobs []struct {
		ID    string `json:"id"`
		Token int64  `json:"token"`
	} `json:"jobs"`
}

// oneJob enqueues a job into queue; with work, claims and completes it.
func (b *bench) oneJob(queue string, work bool) error {
	if err := b.call("POST", "/queues/"+queue+"/jobs", map[string]any{"payload": 1}, nil); err != nil {
		return err
	}
	if !work {
		return nil
	}
	var c claimed
	if err := b.call("POST", "/queues/"+queue+"/claim", map[string]any{"count": 1, "lease_ms": 30000}, &c); err != nil {
		return err
	}
	if len(c.Jobs) != 1 {
		return fmt.Errorf("queue %s: claimed %d jobs", queue, len(c.Jobs))
	}
	return b.call("POST", "/queues/"+queue+"/jobs/"+c.Jobs[0].ID+"/complete", map[string]any{"token": c.Jobs[0].Token}, nil)
}

// each runs f for 0..n-1 on 32 goroutines, and answers the first error.
func each(n int, f func(i int) error) error {
	var next atomic.Int64
	var first atomic.Value
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n && first.Load() == nil; i = int(next.Add(1) - 1) {
				if err := f(i); err != nil {
					first.CompareAndSwap(nil, err)
				}
			}
		}()
	}
	wg.Wait()
	if err, _ := first.Load().(error); err != nil {
		return err
	}
	return nil
}

// info reads fields of Redis's INFO.
func (b *bench) info(ctx context.Context, sections ...string) (map[string]string, error) {
	text, err := b.rdb.Info(ctx, sections...).Result()
	fields := map[string]string{}
	for _, line := range strings.Split(text, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			fields[k] = v
		}
	}
	return fields, err
}

func (b *bench) usedMemory(ctx context.Context) (int64, int64, error) {
	f, err := b.info(ctx, "memory")
	used, _ := strconv.ParseInt(f["used_memory"], 10, 64)
	lua, _ := strconv.ParseInt(f["used_memory_vm_functions"], 10, 64)
	return used, lua, err
}

// cpu is Redis's CPU so far and the service's (0 without -service-pid).
func (b *bench) cpu(ctx context.Context) (redisCPU, service float64, err error) {
	f, err := b.info(ctx, "cpu")
	user, _ := strconv.ParseFloat(f["used_cpu_user"], 64)
	sys, _ := strconv.ParseFloat(f["used_cpu_sys"], 64)
	return user + sys, b.serviceCPU(), err
}

// serviceCPU is the service's user + system CPU so far, in seconds, from
// /proc (Linux); 0 without a pid.
func (b *bench) serviceCPU() float64 {
	if b.pid == 0 {
		return 0
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", b.pid))
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+2:]))
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	return (utime + stime) / 100 // USER_HZ
}

func queueName(run string, i int) string { return fmt.Sprintf("%s-%06d", run, i) }

func (b *bench) memory(ctx context.Context, n int, settle time.Duration) error {
	run := fmt.Sprintf("m%d", time.Now().Unix()%100000)
	used0, lua0, err := b.usedMemory(ctx)
	if err != nil {
		return err
	}
	if err := each(n, func(i int) error { return b.oneJob(queueName(run, i), true) }); err != nil {
		return err
	}
	if err := b.printMemory(ctx, "at once", run, n, used0, lua0); err != nil {
		return err
	}
	time.Sleep(settle)
	return b.printMemory(ctx, fmt.Sprintf("%v later, the reaper's visit done", settle), run, n, used0, lua0)
}

// printMemory prints Redis's memory per queue since used0 and lua0, and
// the size of each key of run's first queue.
func (b *bench) printMemory(ctx context.Context, when, run string, n int, used0, lua0 int64) error {
	used1, lua1, err := b.usedMemory(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("memory, %s: %d queues with one completed job each: %.0f B of Redis memory per queue (used_memory %d -> %d); Lua memory %d -> %d (%.0f B per queue)\n",
		when, n, float64(used1-used0)/float64(n), used0, used1, lua0, lua1, float64(lua1-lua0)/float64(n))
	keys, err := b.rdb.Keys(ctx, b.prefix+":{"+queueName(run, 0)+"}:*").Result()
	if err != nil {
		return err
	}
	slices.Sort(keys)
	total := int64(0)
	for _, key := range keys {
		size, _ := b.rdb.MemoryUsage(ctx, key, 0).Result()
		total += size
		fmt.Printf("  %-40s %6d B\n", strings.TrimPrefix(key, b.prefix+":{"+queueName(run, 0)+"}:"), size)
	}
	fmt.Printf("  %-40s %6d B (MEMORY USAGE of its keys: without the registry and indexes)\n", "total", total)
	return nil
}

func (b *bench) scale(ctx context.Context, n int, idle, sweep time.Duration) error {
	run := fmt.Sprintf("s%d", time.Now().Unix()%100000)
	start := time.Now()
	used0, _, err := b.usedMemory(ctx)
	if err != nil {
		return err
	}
	if err := each(n, func(i int) error { return b.oneJob(queueName(run, i), false) }); err != nil {
		return err
	}
	used1, _, _ := b.usedMemory(ctx)
	fmt.Printf("scale: %d queues with a pending job each in %v: %.0f B of Redis memory per queue\n",
		n, time.Since(start).Round(time.Second), float64(used1-used0)/float64(n))

	// Each new queue is settled a minute after its first job (its events
	// compacted): wait for that wave to pass, until the due index is
	// empty, then measure.
	wave := time.Now()
	time.Sleep(time.Minute)
	for {
		n, err := b.rdb.ZCard(ctx, b.prefix+":due").Result()
		if err != nil {
			return err
		}
		if n == 0 {
			break
		}
		time.Sleep(sweep)
	}
	used2, _, _ := b.usedMemory(ctx)
	fmt.Printf("settled (every queue visited once, its events compacted) %v after the last enqueue: %.0f B of Redis memory per queue\n",
		time.Since(wave).Round(time.Second), float64(used2-used0)/float64(n))
	time.Sleep(2 * sweep)
	r0, s0, err := b.cpu(ctx)
	if err != nil {
		return err
	}
	cmds0, _ := b.info(ctx, "stats")
	time.Sleep(idle)
	r1, s1, _ := b.cpu(ctx)
	cmds1, _ := b.info(ctx, "stats")
	c0, _ := strconv.ParseFloat(cmds0["total_commands_processed"], 64)
	c1, _ := strconv.ParseFloat(cmds1["total_commands_processed"], 64)
	secs := idle.Seconds()
	fmt.Printf("idle over %v: Redis %.2f%% of a core (%.1f commands/s), service %.2f%% of a core\n",
		idle, (r1-r0)*100/secs, (c1-c0)/secs, (s1-s0)*100/secs)

	// A lapsed lease in one of them: how long until it is pending again.
	queue := queueName(run, n*7/9)
	var c claimed
	if err := b.call("POST", "/queues/"+queue+"/claim", map[string]any{"count": 1, "lease_ms": 1000}, &c); err != nil {
		return err
	}
	if len(c.Jobs) != 1 {
		return fmt.Errorf("claimed %d jobs of %s", len(c.Jobs), queue)
	}
	lapse := time.Now().Add(time.Second)
	for {
		var j struct {
			State string `json:"state"`
		}
		if err := b.call("GET", "/queues/"+queue+"/jobs/"+c.Jobs[0].ID, nil, &j); err != nil {
			return err
		}
		if j.State == "pending" {
			break
		}
		if time.Since(lapse) > 10*sweep {
			return fmt.Errorf("the lapsed lease of %s was not recovered within %v", queue, 10*sweep)
		}
		time.Sleep(50 * time.Millisecond)
	}
	took := time.Since(lapse)
	fmt.Printf("a lapsed lease in queue %d of %d recovered %v after it lapsed (goal: within 2 sweep intervals, %v)\n",
		n*7/9, n, took.Round(10*time.Millisecond), 2*sweep)
	return b.pages(ctx)
}

// pages walks GET /queues 100 a page, and a prefix search, and prints the
// latency of a page.
func (b *bench) pages(ctx context.Context) error {
	var took []time.Duration
	cursor, pages := "", 0
	for pages < 1100 {
		var page struct {
			Queues     []json.RawMessage `json:"queues"`
			NextCursor string            `json:"next_cursor"`
		}
		t0 := time.Now()
		if err := b.call("GET", "/queues?limit=100&cursor="+url.QueryEscape(cursor), nil, &page); err != nil {
			return err
		}
		took = append(took, time.Since(t0))
		pages++
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	slices.Sort(took)
	fmt.Printf("GET /queues?limit=100: %d pages, p50 %v, p99 %v, max %v\n", len(took),
		took[len(took)/2].Round(100*time.Microsecond), took[len(took)*99/100].Round(100*time.Microsecond), took[len(took)-1].Round(100*time.Microsecond))
	return nil
}

// busy runs n queues that each get a job a second, then one queue that
// gets n a second, and prints Redis's CPU per job of each.
func (b *bench) busy(ctx context.Context, n int, d time.Duration) error {
	run := fmt.Sprintf("b%d", time.Now().Unix()%100000)
	many, err := b.load(ctx, d, n, func(i int) string { return queueName(run, i) })
	if err != nil {
		return err
	}
	one, err := b.load(ctx, d, n, func(int) string { return queueName(run+"-one", 0) })
	if err != nil {
		return err
	}
	fmt.Printf("busy: %d queues at a job a second each: Redis %.1f us CPU per job; one queue at %d jobs a second: %.1f us; ratio %.2f\n",
		n, many*1e6, n, one*1e6, many/one)
	return nil
}

// load runs rate jobs a second for d, job i of a second into queue(i),
// and answers Redis's CPU per job in seconds.
func (b *bench) load(ctx context.Context, d time.Duration, rate int, queue func(i int) string) (float64, error) {
	r0, _, err := b.cpu(ctx)
	if err != nil {
		return 0, err
	}
	jobs := 0
	for end := time.Now().Add(d); time.Now().Before(end); {
		second := time.Now()
		if err := each(rate, func(i int) error { return b.oneJob(queue(i), true) }); err != nil {
			return 0, err
		}
		jobs += rate
		time.Sleep(time.Until(second.Add(time.Second)))
	}
	r1, _, err := b.cpu(ctx)
	return (r1 - r0) / float64(jobs), err
}
