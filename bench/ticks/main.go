// Command ticks measures schedules (docs/schedules.md) against running
// service replicas and their Redis: how late ticks are enqueued, and what
// idle schedules cost. bench/schedules starts Redis and the replicas and
// runs it; see docs/performance.md#schedules.
//
//	go run ./bench/ticks -url http://a:8080,http://b:8080 -redis 127.0.0.1:6379 -mode fire
//	go run ./bench/ticks -url ... -redis ... -mode idle -schedules 0   # the idle service, for the ratio
//
// fire: -schedules schedules of every_ms -every, over -queues queues, for
// -duration; then every job's lateness (its created_at, on the Redis
// server's clock, minus its tick), and whether each schedule's ticks are
// consecutive (none lost) and each fired once (runs = jobs).
// idle: -schedules schedules that tick once a year, then Redis's commands
// and CPU per second over -duration. Its queues are known queues, which the
// reaper sweeps: compare runs over the same -queues (bench/schedules runs
// one schedule per queue, then a hundred) to see what the schedules cost.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

func main() {
	urls := flag.String("url", "http://127.0.0.1:8080", "the service replicas, comma-separated")
	addr := flag.String("redis", "127.0.0.1:6379", "the replicas' Redis (host:port)")
	prefix := flag.String("prefix", "emq", "the replicas' EMQ_PREFIX")
	mode := flag.String("mode", "fire", "fire or idle")
	schedules := flag.Int("schedules", 1000, "schedules to make")
	queues := flag.Int("queues", 10, "queues to spread them over")
	every := flag.Duration("every", time.Second, "fire: each schedule's every_ms")
	duration := flag.Duration("duration", 20*time.Second, "how long to measure")
	flag.Parse()
	b := bench{urls: strings.Split(*urls, ","), rdb: redis.NewClient(&redis.Options{Addr: *addr}), prefix: *prefix}
	var err error
	switch *mode {
	case "fire":
		err = b.fire(*schedules, *queues, *every, *duration)
	case "idle":
		err = b.idle(*schedules, *queues, *duration)
	default:
		err = fmt.Errorf("-mode %q: fire or idle", *mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ticks:", err)
		os.Exit(1)
	}
}

type bench struct {
	urls   []string
	rdb    *redis.Client
	prefix string
}

func queueName(i int) string    { return fmt.Sprintf("ticks-%03d", i) }
func scheduleName(i int) string { return fmt.Sprintf("s%05d", i) }

// put makes n schedules with body over the queues, in turn over the
// replicas.
func (b bench) put(n, queues int, body string) error {
	for i := range n {
		path := fmt.Sprintf("/queues/%s/schedules/%s", queueName(i%queues), scheduleName(i))
		if _, err := b.call("PUT", b.urls[i%len(b.urls)]+path, body, 0); err != nil {
			return err
		}
	}
	return nil
}

// call sends one request and answers its body: an error unless the status
// is want (0: any 2xx).
func (b bench) call(method, url, body string, want int) ([]byte, error) {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want && (want != 0 || resp.StatusCode/100 != 2) {
		return nil, fmt.Errorf("%s %s: %d %s", method, url, resp.StatusCode, bytes.TrimSpace(out))
	}
	return out, nil
}

func (b bench) fire(n, queues int, every, duration time.Duration) error {
	if err := b.put(n, queues, fmt.Sprintf(`{"every_ms":%d,"job":{"payload":{}}}`, every.Milliseconds())); err != nil {
		return err
	}
	time.Sleep(duration)
	for i := range n { // stop them, so that what is counted is final
		path := fmt.Sprintf("/queues/%s/schedules/%s/pause", queueName(i%queues), scheduleName(i))
		if _, err := b.call("POST", b.urls[0]+path, "", http.StatusOK); err != nil {
			return err
		}
	}
	ctx := context.Background()
	var lateness []time.Duration
	ticks := map[string][]int64{}
	for q := range queues {
		base := b.prefix + ":{" + queueName(q) + "}:"
		ids, err := b.rdb.ZRange(ctx, base+"pending", 0, -1).Result()
		if err != nil {
			return err
		}
		pipe := b.rdb.Pipeline()
		created := make([]*redis.StringCmd, len(ids))
		for i, id := range ids {
			created[i] = pipe.HGet(ctx, base+"job:"+id, "created_at")
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return err
		}
		for i, id := range ids {
			name, tickText, _ := strings.Cut(id, ":")
			tick, _ := strconv.ParseInt(tickText, 10, 64)
			at, _ := strconv.ParseInt(created[i].Val(), 10, 64)
			lateness = append(lateness, time.Duration(at-tick)*time.Millisecond)
			ticks[name] = append(ticks[name], tick)
		}
	}
	lost, twice := 0, 0
	for i := range n {
		name := scheduleName(i)
		got := ticks[name]
		slices.Sort(got)
		for k := 1; k < len(got); k++ {
			lost += int((got[k]-got[k-1])/every.Milliseconds()) - 1
		}
		body, err := b.call("GET", fmt.Sprintf("%s/queues/%s/schedules/%s", b.urls[0], queueName(i%queues), name), "", http.StatusOK)
		if err != nil {
			return err
		}
		var rec struct{ Runs int }
		if err := json.Unmarshal(body, &rec); err != nil {
			return err
		}
		twice += rec.Runs - len(got)
	}
	slices.Sort(lateness)
	at := func(p float64) time.Duration { return lateness[min(len(lateness)-1, int(p*float64(len(lateness))))] }
	if len(lateness) == 0 {
		return fmt.Errorf("no tick fired")
	}
	fmt.Printf("replicas %d, schedules %d over %d queues, every %v, %v: %d ticks fired (%.0f/s)\n",
		len(b.urls), n, queues, every, duration, len(lateness), float64(len(lateness))/duration.Seconds())
	fmt.Printf("lateness (job created_at - tick, Redis clock, ms resolution): p50 %v  p90 %v  p99 %v  max %v\n",
		at(0.50), at(0.90), at(0.99), lateness[len(lateness)-1])
	fmt.Printf("ticks lost between fired ones: %d; fires beyond the jobs (runs - jobs): %d\n", lost, twice)
	return nil
}

func (b bench) idle(n, queues int, duration time.Duration) error {
	if err := b.put(n, queues, `{"cron":"0 0 1 1 *","job":{"payload":{}}}`); err != nil {
		return err
	}
	time.Sleep(6 * time.Second) // past a refresh, so that every replica watches them all
	ctx := context.Background()
	before, err := b.stats(ctx)
	if err != nil {
		return err
	}
	time.Sleep(duration)
	after, err := b.stats(ctx)
	if err != nil {
		return err
	}
	secs := duration.Seconds()
	fmt.Printf("replicas %d, %d idle schedules over %d queues, %v: Redis %.1f commands/s (%.1f script calls/s), %.2f ms CPU/s\n",
		len(b.urls), n, queues, duration, float64(after.commands-before.commands-1)/secs,
		float64(after.scripts-before.scripts)/secs, (after.cpu-before.cpu)*1000/secs)
	return nil
}

type redisStats struct {
	commands, scripts int64
	cpu               float64 // s, user + system
}

// stats reads Redis's commands processed, script calls (FCALL, EVALSHA)
// and CPU so far.
func (b bench) stats(ctx context.Context) (redisStats, error) {
	text, err := b.rdb.Info(ctx, "stats", "cpu", "commandstats").Result()
	if err != nil {
		return redisStats{}, err
	}
	var s redisStats
	for _, line := range strings.Split(text, "\r\n") {
		key, value, _ := strings.Cut(line, ":")
		switch {
		case key == "total_commands_processed":
			s.commands, _ = strconv.ParseInt(value, 10, 64)
		case key == "used_cpu_sys" || key == "used_cpu_user":
			f, _ := strconv.ParseFloat(value, 64)
			s.cpu += f
		case key == "cmdstat_fcall" || key == "cmdstat_evalsha" || key == "cmdstat_eval":
			calls, _, _ := strings.Cut(strings.TrimPrefix(value, "calls="), ",")
			n, _ := strconv.ParseInt(calls, 10, 64)
			s.scripts += n
		}
	}
	return s, nil
}
