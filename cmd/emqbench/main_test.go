package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/admin"
	"github.com/echo-mq/echo_mq/internal/events"
	emqhttp "github.com/echo-mq/echo_mq/internal/http"
	"github.com/echo-mq/echo_mq/internal/lease"
	"github.com/echo-mq/echo_mq/internal/redistest"
	"github.com/echo-mq/echo_mq/internal/scheduler"
	"github.com/echo-mq/echo_mq/internal/stall"
	"github.com/echo-mq/echo_mq/internal/wake"
)

func TestMain(m *testing.M) { os.Exit(redistest.Run(m)) }

// service serves the API over the test Redis under prefix, as cmd/api
// wires it, and returns its URL.
func service(t *testing.T, prefix string) string {
	t.Helper()
	rdb := redistest.Client(t)
	hub := wake.NewHub(rdb, prefix, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); hub.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	srv := httptest.NewServer(emqhttp.NewHandler(emqhttp.Config{
		Leases: lease.NewService(rdb, prefix), Admin: admin.NewService(rdb, prefix), Schedules: scheduler.NewService(rdb, prefix),
		Sweeper: stall.NewService(rdb, prefix), Waiters: hub, Events: events.NewLog(rdb, prefix),
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestRunMeasuresEveryShape runs every shape briefly through both drivers
// and checks that each moved jobs without an error, and that the queues it
// made are gone afterwards.
func TestRunMeasuresEveryShape(t *testing.T) {
	const prefix = "emqbench-test"
	var out bytes.Buffer
	err := run(context.Background(), []string{
		"-url", service(t, prefix), "-redis", "redis://" + redistest.Addr(), "-prefix", prefix,
		"-warmup", "100ms", "-duration", "800ms", "-producers", "4", "-workers", "4", "-batch", "10",
		"-extend-jobs", "20", "-extend-rate", "200", "-extend-goroutines", "4",
	}, &out)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	seen := map[string]bool{}
	shape := ""
	for _, line := range strings.Split(out.String(), "\n") {
		f := strings.Fields(line)
		if len(f) < 10 || (f[1] != "http" && f[1] != "direct") {
			continue
		}
		shape = f[0]
		seen[shape+" "+f[1]] = true
		if rate, _ := strconv.ParseFloat(f[2], 64); shape != "extend" && rate <= 0 {
			t.Errorf("%s via %s moved no jobs: %q", shape, f[1], line)
		}
		if calls, _ := strconv.ParseFloat(f[len(f)-4], 64); calls <= 0 { // routes may hold spaces: count from the end
			t.Errorf("%s via %s made no calls: %q", shape, f[1], line)
		}
		if f[len(f)-1] != "0" {
			t.Errorf("%s via %s had errors: %q", shape, f[1], line)
		}
	}
	for _, s := range []string{"single", "next", "batch", "extend"} {
		for _, via := range []string{"http", "direct"} {
			if !seen[s+" "+via] {
				t.Errorf("no figures for %s via %s in:\n%s", s, via, out.String())
			}
		}
	}
	keys, err := redistest.Client(t).Keys(context.Background(), prefix+":{*").Result()
	if err != nil || len(keys) != 0 {
		t.Errorf("keys left behind: %v (%v)", keys, err)
	}
}

// TestRunWritesSummary runs two shapes through both drivers with
// -summary and checks that the file holds a header and one line per run,
// with the table's figures unrounded: jobs/s for a shape that completes
// jobs, "-" for extend's, Redis's CPU per job for each, and the service's
// CPU per request through HTTP ("-" direct). The service is this process.
func TestRunWritesSummary(t *testing.T) {
	const prefix = "emqbench-summary"
	file := filepath.Join(t.TempDir(), "summary.tsv")
	var out bytes.Buffer
	err := run(context.Background(), []string{
		"-url", service(t, prefix), "-redis", "redis://" + redistest.Addr(), "-prefix", prefix,
		"-shapes", "next,extend", "-summary", file, "-warmup", "100ms", "-duration", "400ms", "-service-pid", strconv.Itoa(os.Getpid()),
		"-producers", "2", "-workers", "4", "-extend-jobs", "8", "-extend-rate", "200", "-extend-goroutines", "4",
	}, &out)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 5 || lines[0] != "shape\tvia\tjobs/s\tredis cpu µs/job\tservice cpu µs/req" {
		t.Fatalf("summary:\n%s", data)
	}
	table := map[string][]string{} // "<shape> <via>" to the table's jobs/s, redis cpu µs/job and service cpu µs/req
	for _, line := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(line); len(f) >= 10 && (f[1] == "http" || f[1] == "direct") {
			table[f[0]+" "+f[1]] = f[2:5]
		}
	}
	var runs []string
	for _, line := range lines[1:] {
		f := strings.Split(line, "\t")
		if len(f) != 5 {
			t.Fatalf("summary line %q: %d fields, want 5", line, len(f))
		}
		run := f[0] + " " + f[1]
		runs = append(runs, run)
		rate, shown := f[2], table[run]
		if f[0] == "extend" {
			if rate != "-" {
				t.Errorf("%s: jobs/s %q, want -", run, rate)
			}
		} else if r, err := strconv.ParseFloat(rate, 64); err != nil || r <= 0 || !near(r, shown, 0, 0.5+0.05) {
			t.Errorf("%s: jobs/s %q, the table's %v", run, rate, shown)
		}
		if c, err := strconv.ParseFloat(f[3], 64); err != nil || c <= 0 || !near(c, shown, 1, 0.05+0.005) {
			t.Errorf("%s: redis cpu µs/job %q, the table's %v", run, f[3], shown)
		}
		if f[1] == "direct" {
			if f[4] != "-" || shown[2] != "-" {
				t.Errorf("%s: service cpu µs/req %q, the table's %v, want -", run, f[4], shown)
			}
		} else if c, err := strconv.ParseFloat(f[4], 64); err != nil || c <= 0 || !near(c, shown, 2, 0.05+0.005) {
			t.Errorf("%s: service cpu µs/req %q, the table's %v", run, f[4], shown)
		}
	}
	if want := []string{"next http", "next direct", "extend http", "extend direct"}; !slices.Equal(runs, want) {
		t.Errorf("summary runs %v, want %v", runs, want)
	}
}

// near reports whether v, unrounded, is within by of the table's cell i
// of shown, rounded (both roundings: by is half a unit of each).
func near(v float64, shown []string, i int, by float64) bool {
	if len(shown) <= i {
		return false
	}
	cell, err := strconv.ParseFloat(shown[i], 64)
	return err == nil && math.Abs(v-cell) <= by
}

// spreadLines reads the per-queue lines of run's output: "<shape> via
// <via>" to the fewest jobs one queue completed.
func spreadLines(t *testing.T, out string) map[string]int {
	t.Helper()
	mins := map[string]int{}
	for _, line := range strings.Split(out, "\n") {
		run, rest, ok := strings.Cut(strings.TrimSpace(line), ": min ")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSuffix(strings.Fields(rest)[0], ","))
		if err != nil {
			t.Fatalf("spread line %q: %v", line, err)
		}
		mins[run] = n
	}
	return mins
}

// TestRunSpreadsOverQueues runs two shapes over three queues through the
// service and the direct driver, and checks that every queue of every run
// moved jobs and that every queue is gone afterwards.
func TestRunSpreadsOverQueues(t *testing.T) {
	const prefix = "emqbench-queues"
	var out bytes.Buffer
	err := run(context.Background(), []string{
		"-url", service(t, prefix), "-redis", "redis://" + redistest.Addr(), "-prefix", prefix,
		"-shapes", "next,extend", "-queues", "3", "-warmup", "100ms", "-duration", "400ms",
		"-producers", "2", "-workers", "6", "-extend-jobs", "12", "-extend-rate", "200", "-extend-goroutines", "4",
	}, &out)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	mins := spreadLines(t, out.String())
	for _, r := range []string{"next via http", "next via direct", "extend via http", "extend via direct"} {
		if n, ok := mins[r]; !ok || n <= 0 {
			t.Errorf("%s: a queue moved nothing (min %d, reported %v) in:\n%s", r, n, ok, out.String())
		}
	}
	keys, err := redistest.Client(t).Keys(context.Background(), prefix+":{*").Result()
	if err != nil || len(keys) != 0 {
		t.Errorf("keys left behind: %v (%v)", keys, err)
	}
}

// TestDirectOnCluster runs the batch shape through the direct driver over
// four queues on a real three-master Redis Cluster, given as seed URLs
// (batches of 10, so that the producers' turns reach every queue within
// the run even when a busy machine moves only a few hundred jobs a second):
// every queue moves jobs with no error (a plain client would meet MOVED
// on the queues other masters own), Redis is reported node by node, and
// nothing is left on any master.
func TestDirectOnCluster(t *testing.T) {
	const prefix = "emqbench-cluster"
	cluster := redistest.SharedCluster(t)
	var out bytes.Buffer
	err := run(context.Background(), []string{
		"-via", "direct", "-redis", cluster.URL(), "-prefix", prefix, "-shapes", "batch", "-queues", "4",
		"-warmup", "100ms", "-duration", "1500ms", "-producers", "2", "-workers", "4", "-batch", "10",
	}, &out)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	if n, ok := spreadLines(t, out.String())["batch via direct"]; !ok || n <= 0 {
		t.Errorf("a queue moved nothing (min %d, reported %v) in:\n%s", n, ok, out.String())
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(line); len(f) >= 9 && f[0] == "batch" && f[1] == "direct" && f[len(f)-1] != "0" {
			t.Errorf("errors: %q", line)
		}
	}
	if got := strings.Count(out.String(), "\nredis 127.0.0.1:"); got != len(cluster.Nodes) {
		t.Errorf("Redis memory reported for %d nodes, want %d:\n%s", got, len(cluster.Nodes), out.String())
	}
	err = cluster.Client(t).ForEachMaster(context.Background(), func(ctx context.Context, node *redis.Client) error {
		keys, err := node.Keys(ctx, prefix+":*").Result()
		if err == nil && len(keys) != 0 {
			err = fmt.Errorf("keys left behind on %s: %v", node.Options().Addr, keys)
		}
		return err
	})
	if err != nil {
		t.Error(err)
	}
}

// TestServedBy checks that workers cover every queue, each as often as
// any other within one, whether they outnumber the queues or not.
func TestServedBy(t *testing.T) {
	for _, c := range []struct{ workers, queues int }{{1, 1}, {50, 1}, {64, 64}, {50, 4}, {50, 64}, {3, 10}} {
		served := make([]int, c.queues)
		for w := range c.workers {
			for _, q := range servedBy(w, c.workers, c.queues) {
				served[q]++
			}
		}
		lo, hi := slices.Min(served), slices.Max(served)
		if lo < 1 || hi-lo > 1 {
			t.Errorf("%d workers over %d queues: workers per queue %v", c.workers, c.queues, served)
		}
	}
}

// TestConnect checks that one URL makes a plain client and several a
// Cluster client that knows every seed.
func TestConnect(t *testing.T) {
	one, err := connect("redis://127.0.0.1:1", 4)
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	if _, ok := one.(*redis.Client); !ok {
		t.Errorf("one URL: %T, want *redis.Client", one)
	}
	several, err := connect("redis://127.0.0.1:1, redis://127.0.0.1:2,redis://127.0.0.1:3", 4)
	if err != nil {
		t.Fatal(err)
	}
	defer several.Close()
	c, ok := several.(*redis.ClusterClient)
	if !ok {
		t.Fatalf("several URLs: %T, want *redis.ClusterClient", several)
	}
	if addrs := c.Options().Addrs; !slices.Equal(addrs, []string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"}) || c.Options().PoolSize != 4 {
		t.Errorf("seeds %v, pool %d", addrs, c.Options().PoolSize)
	}
	if _, err := connect("redis://127.0.0.1:1,http://x", 4); err == nil {
		t.Error("a bad seed was taken")
	}
}

// TestReserveHoldsTheCap has many producers reserve room at once, none of
// their enqueues back yet: each queue takes one batch past its share and
// no more (counted after the call instead, every producer would pile onto
// the first queue with room).
func TestReserveHoldsTheCap(t *testing.T) {
	l := newLoad(nil, queueNames("batch", "direct", 8), batch, settings{backlog: 8 * 10})
	var wg sync.WaitGroup
	var got atomic.Int64
	for p := range 64 {
		wg.Go(func() {
			if _, ok := l.reserve(p%2, 100); ok {
				got.Add(1)
			}
		})
	}
	wg.Wait()
	if got.Load() != 8 {
		t.Errorf("%d reservations of 100 took room, want 8 (one per queue)", got.Load())
	}
	for q := range l.pending {
		if n := l.pending[q].Load(); n != 100 {
			t.Errorf("queue %d: %d pending, want 100", q, n)
		}
	}
}
