// Command emqbench measures echo_mq end to end. It drives a running service
// through its HTTP API only, producers and workers at once, in the shapes
// of issue 5 (single: one request per step; next: complete with claim-next;
// batch: batch enqueue, claim many, batch complete with claim-next; extend:
// lease renewals at a fixed rate), and runs the same shapes through the
// service's own script layer straight to Redis (no HTTP) in the same run,
// so that the cost of the HTTP hop reads as a ratio on a noisy machine.
//
//	go run ./cmd/emqbench -url http://127.0.0.1:8080 -redis redis://127.0.0.1:6379
//
// -queues spreads each run over many queues, the way load is spread over
// the shards of a Redis Cluster (one queue lives in one slot); -redis then
// takes the Cluster's seed URLs, comma-separated.
//
// -summary FILE also writes each run's figures there, machine-readable:
// shape, via, jobs/s, Redis's CPU µs per job and the service's CPU µs per
// HTTP request, tab-separated, unrounded.
//
// With -service-pid, each run through HTTP also reports the service's CPU
// (user + system, from /proc) per HTTP request it answered, over the whole
// run as Redis's CPU per job is: what the service spends on a request
// besides Redis, to read against bench/minimal's floor (bench/run).
//
// bench/run starts a redis-server and the service on free ports and runs it
// (and BullMQ on a redis-server of its own, to print the ratios from the
// summary); bench/cluster does the same on Redis Clusters of 1, 2 and 3
// masters.
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"
)

// options are the command's flags.
type options struct {
	url, key, redisURL, prefix string
	shapes, via                string
	summary                    string
	set                        settings
	extend                     extendLoad
	servicePID                 int
	queues                     int
	groups                     int    // jobs spread over this many groups (0: none)
	flowSettings               string // flow control settings put on each queue (JSON), or ""
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("emqbench", flag.ContinueOnError)
	fs.StringVar(&o.url, "url", "http://127.0.0.1:8080", "the service's base URL")
	fs.StringVar(&o.key, "key", os.Getenv("EMQ_BENCH_KEY"), "an admin API key, when the service has keys (or EMQ_BENCH_KEY)")
	fs.StringVar(&o.redisURL, "redis", "", "the service's Redis, for the no-HTTP baseline and Redis's CPU (empty: neither); several comma-separated redis:// URLs are the seeds of a Redis Cluster")
	fs.StringVar(&o.prefix, "prefix", "emq", "the service's key prefix (EMQ_PREFIX)")
	fs.StringVar(&o.shapes, "shapes", "single,next,batch,extend", "shapes to run, in order")
	fs.StringVar(&o.via, "via", "http,direct", "drivers to run each shape through: http, direct (needs -redis), or both")
	fs.IntVar(&o.set.producers, "producers", 8, "enqueueing goroutines")
	fs.IntVar(&o.set.workers, "workers", 50, "claiming and completing goroutines")
	fs.IntVar(&o.set.enqueueBatch, "batch", 100, "jobs per enqueue request in the batch shape")
	fs.IntVar(&o.set.claimCount, "claim", 16, "jobs per claim in the batch shape")
	fs.Int64Var(&o.set.backlog, "backlog", 2000, "producers wait while this many jobs are enqueued and not completed, in all: each queue holds an even share (backlog/queues)")
	fs.IntVar(&o.groups, "groups", 0, "spread each queue's jobs over this many groups, in turn (flow control; 0: no groups)")
	fs.StringVar(&o.flowSettings, "settings", "", `flow control settings to put on each queue before its run, as the API's JSON, e.g. '{"concurrency":40}' (HTTP only)`)
	fs.IntVar(&o.queues, "queues", 1, "queues each run spreads its load over: producers take them in turn, worker i serves queue i mod queues (with fewer workers than queues, several each)")
	fs.DurationVar(&o.set.warmup, "warmup", 2*time.Second, "time before measuring, per run")
	fs.DurationVar(&o.set.duration, "duration", 10*time.Second, "time measured, per run")
	fs.Float64Var(&o.extend.rate, "extend-rate", 5000, "extends per second in the extend shape")
	fs.IntVar(&o.extend.jobs, "extend-jobs", 1000, "leases held and renewed in the extend shape")
	fs.IntVar(&o.extend.goroutines, "extend-goroutines", 50, "renewing goroutines in the extend shape")
	fs.IntVar(&o.servicePID, "service-pid", 0, "the service's pid, to report its memory and its CPU per HTTP request (Linux)")
	fs.StringVar(&o.summary, "summary", "", "also write each run's figures to this file once every run is done: a header, then shape, via, jobs/s, redis cpu µs/job, service cpu µs/req, tab-separated (\"-\": none)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.extend.warmup, o.extend.duration = o.set.warmup, o.set.duration
	if o.set.producers < 1 || o.set.workers < 1 || o.set.enqueueBatch < 1 || o.set.claimCount < 1 || o.extend.goroutines < 1 || o.extend.rate <= 0 || o.queues < 1 {
		return o, fmt.Errorf("producers, workers, batch, claim, extend-goroutines, extend-rate and queues must be positive")
	}
	if o.groups < 0 {
		return o, fmt.Errorf("groups must not be negative")
	}
	if o.flowSettings != "" && strings.Contains(o.via, "direct") {
		return o, fmt.Errorf("-settings is put through the API: run it with -via http")
	}
	if o.extend.jobs < o.extend.goroutines {
		return o, fmt.Errorf("extend-jobs must be at least extend-goroutines: each renews jobs of its own")
	}
	return o, nil
}

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400) // as the service: the load generator's GC is only overhead
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "emqbench:", err)
		os.Exit(1)
	}
}

// via is one driver under the name the table shows.
type via struct {
	name string
	d    driver
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	o, err := parseFlags(args)
	if err != nil {
		return err
	}
	conns := max(o.set.producers+o.set.workers, o.extend.goroutines)
	var drivers []via
	if strings.Contains(o.via, "http") {
		drivers = append(drivers, via{"http", newHTTPDriver(strings.TrimRight(o.url, "/"), o.key, conns, o.groups)})
	}
	var rdb redis.UniversalClient
	if o.redisURL != "" {
		if rdb, err = connect(o.redisURL, conns); err != nil {
			return fmt.Errorf("-redis: %w", err)
		}
		defer rdb.Close()
		if strings.Contains(o.via, "direct") {
			drivers = append(drivers, via{"direct", newDirectDriver(rdb, o.prefix, o.groups)})
		}
	}
	if len(drivers) == 0 {
		return fmt.Errorf("-via %q runs nothing (http, direct with -redis)", o.via)
	}
	fmt.Fprintf(stdout, "emqbench: %s, producers %d, workers %d, queues %d, batch %d, claim %d, warmup %s, measured %s per run\n",
		o.url, o.set.producers, o.set.workers, o.queues, o.set.enqueueBatch, o.set.claimCount, o.set.warmup, o.set.duration)
	if o.groups > 0 || o.flowSettings != "" {
		fmt.Fprintf(stdout, "flow control: %d groups, settings %s\n", o.groups, cmp.Or(o.flowSettings, "none"))
	}
	fmt.Fprintln(stdout)
	table := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(table, "shape\tvia\tjobs/s\tredis cpu µs/job\tservice cpu µs/req\troute\tcalls/s\tp50 ms\tp99 ms\terrors\t")
	var spreads []string
	summary := []string{summaryHeader}
	for _, name := range strings.Split(o.shapes, ",") {
		name = strings.TrimSpace(name)
		perVia := map[string]float64{}
		for _, v := range drivers {
			queues := queueNames(name, v.name, o.queues)
			if err := putSettings(ctx, v.d, queues, o.flowSettings); err != nil {
				return err
			}
			out, err := measure(ctx, v, queues, name, o, rdb)
			if cerr := cleanup(v.d, queues); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("%s via %s: %w", name, v.name, err)
			}
			perVia[v.name] = out.jobsPerSec
			printOutcome(table, name, v.name, out, o.set.duration)
			summary = append(summary, summaryLine(name, v.name, out))
			if len(queues) > 1 {
				spreads = append(spreads, spread(name, v.name, out.perQueue))
			}
			if out.firstErr != nil {
				fmt.Fprintf(os.Stderr, "emqbench: %s via %s: first error: %v\n", name, v.name, out.firstErr)
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
		if http, direct := perVia["http"], perVia["direct"]; http > 0 && direct > 0 {
			fmt.Fprintf(table, "%s\thttp/direct\t%.2f\t\t\t\t\t\t\t\t\n", name, http/direct)
		}
		table.Flush()
	}
	table.Flush()
	if len(spreads) > 0 {
		fmt.Fprintf(stdout, "\njobs completed (extends made) per queue over the whole run, of %d queues:\n%s", o.queues, strings.Join(spreads, ""))
	}
	reportMemory(ctx, stdout, o.servicePID, rdb)
	if o.summary != "" {
		if err := os.WriteFile(o.summary, []byte(strings.Join(summary, "")), 0o644); err != nil {
			return fmt.Errorf("-summary: %w", err)
		}
	}
	return nil
}

// measure runs one shape through one driver on fresh queues, and what the
// whole run cost in CPU: Redis's per job completed (with rdb), and the
// service's per HTTP request (through HTTP, with -service-pid).
func measure(ctx context.Context, v via, queues []string, name string, o options, rdb redis.UniversalClient) (outcome, error) {
	pid := 0
	if v.name == "http" {
		pid = o.servicePID
	}
	busy, served := redisCPU(ctx, rdb), procCPU(pid)
	out, err := runOne(ctx, v.d, queues, name, o)
	if after := redisCPU(ctx, rdb); busy >= 0 && after >= 0 && out.total > 0 {
		out.redisPerJob = float64(after-busy) / float64(out.total)
	}
	if after := procCPU(pid); served >= 0 && after >= 0 && out.calls > 0 {
		out.servicePerCall = float64(after-served) / float64(out.calls)
	}
	return out, err
}

// putSettings puts the flow control settings (JSON, "" for none) on
// each of a run's queues before it starts.
func putSettings(ctx context.Context, d driver, queues []string, settings string) error {
	if settings == "" {
		return nil
	}
	h, ok := d.(*httpDriver)
	if !ok {
		return fmt.Errorf("-settings is put through the API: run it with -via http")
	}
	for _, q := range queues {
		if err := h.call(ctx, "PUT", h.queueURL(q)+"/settings", []byte(settings), nil); err != nil {
			return fmt.Errorf("-settings on %s: %w", q, err)
		}
	}
	return nil
}

// summaryHeader is the first line of a -summary file.
const summaryHeader = "shape\tvia\tjobs/s\tredis cpu µs/job\tservice cpu µs/req\n"

// summaryLine is one run's line of a -summary file: the figures of the
// table's first five columns, unrounded, "-" where the table has none
// (jobs/s of the extend shape, a CPU figure when unknown).
func summaryLine(name, via string, out outcome) string {
	rate := fmt.Sprintf("%.1f", out.jobsPerSec)
	if name == "extend" {
		rate = "-"
	}
	return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\n", name, via, rate, figure(out.redisPerJob, "%.2f"), figure(out.servicePerCall, "%.2f"))
}

// figure formats a CPU figure, "-" when it is unknown (0).
func figure(v float64, format string) string {
	if v <= 0 {
		return "-"
	}
	return fmt.Sprintf(format, v)
}

// queueNames names a run's fresh queues: bench-<shape>-<via>-<nanos>, and
// with several, that name with -0, -1 and so on after it. Each name is
// its own hash tag, so a Cluster spreads the queues over its slots.
func queueNames(name, via string, n int) []string {
	base := fmt.Sprintf("bench-%s-%s-%d", name, via, time.Now().UnixNano())
	if n == 1 {
		return []string{base}
	}
	queues := make([]string, n)
	for i := range queues {
		queues[i] = fmt.Sprintf("%s-%d", base, i)
	}
	return queues
}

// cleanup deletes every queue of a run, and says the first that failed.
func cleanup(d driver, queues []string) error {
	var first error
	for _, q := range queues {
		if err := d.cleanup(context.Background(), q); err != nil && first == nil {
			first = fmt.Errorf("cleanup %s: %w", q, err)
		}
	}
	return first
}

// spread is one run's line of how evenly its queues were worked: the
// fewest, the mean and the most jobs one queue completed.
func spread(name, via string, perQueue []int64) string {
	lo, hi, sum := perQueue[0], perQueue[0], int64(0)
	for _, n := range perQueue {
		lo, hi, sum = min(lo, n), max(hi, n), sum+n
	}
	return fmt.Sprintf("  %s via %s: min %d, mean %.0f, max %d\n", name, via, lo, float64(sum)/float64(len(perQueue)), hi)
}

// runOne runs one shape through one driver on fresh queues.
func runOne(ctx context.Context, d driver, queues []string, name string, o options) (outcome, error) {
	switch shape(name) {
	case single, next, batch:
		return runShape(ctx, d, queues, shape(name), o.set), nil
	case "extend":
		return runExtend(ctx, d, queues, o.extend)
	}
	return outcome{}, fmt.Errorf("unknown shape %q (single, next, batch, extend)", name)
}

func printOutcome(w io.Writer, name, via string, out outcome, window time.Duration) {
	rate := fmt.Sprintf("%.0f", out.jobsPerSec)
	if name == "extend" {
		rate = "-"
	}
	for i, r := range out.routes {
		shown := [5]string{name, via, rate, figure(out.redisPerJob, "%.1f"), figure(out.servicePerCall, "%.1f")}
		if i > 0 {
			shown = [5]string{}
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%.0f\t%.2f\t%.2f\t%d\t\n", shown[0], shown[1], shown[2], shown[3], shown[4], r.route,
			float64(r.calls)/window.Seconds(), ms(r.p50), ms(r.p99), out.errors)
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
