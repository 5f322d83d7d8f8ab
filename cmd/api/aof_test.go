package main

import (
	"context"
	"fmt"
	"os"
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

// TestAOFKeepsAcknowledgedJobs enqueues jobs one by one through the service
// on a redis-server with the append-only file on, SIGKILLs redis-server in
// the middle of the writes (no clean shutdown), starts it again on the same
// directory and counts the acknowledged jobs that are still there. With
// appendfsync always every one must be; with everysec up to about a second
// of writes may be lost, so the test reports the figure without asserting.
func TestAOFKeepsAcknowledgedJobs(t *testing.T) {
	t.Parallel()
	for _, fsync := range []string{"always", "everysec"} {
		t.Run(fsync, func(t *testing.T) {
			t.Parallel()
			server := redistest.StartServer(t, "--appendonly", "yes", "--appendfsync", fsync)
			base, _, stop := startService(t, map[string]string{"EMQ_REDIS_URL": "redis://" + server.Addr, "EMQ_PREFIX": "aof"})
			defer func() {
				if err := stop(); err != nil {
					t.Errorf("run returned %v", err)
				}
			}()
			q := redistest.Queue(t)
			acked := enqueueUntilKilled(t, base+"/queues/"+q+"/jobs", func() { killRedis(t, server.Addr) })
			server.Restart(t)

			survived := survivors(t, server.Addr, q, acked)
			t.Logf("appendfsync %s: %d jobs acknowledged, %d survived a SIGKILL of redis-server, %d lost",
				fsync, len(acked), survived, len(acked)-survived)
			if len(acked) == 0 {
				t.Fatal("no enqueue was acknowledged before the kill")
			}
			if fsync == "always" && survived != len(acked) {
				t.Errorf("appendfsync always lost %d of %d acknowledged jobs", len(acked)-survived, len(acked))
			}
			waitReady(t, base)
			mustCall(t, "GET", base+"/queues/"+q+"/jobs/"+acked[0], "", 200, nil)
		})
	}
}

// enqueueUntilKilled enqueues jobs one by one from a few goroutines, calls
// kill once a few hundred are acknowledged (or a second has passed), keeps
// enqueueing a moment longer (those calls fail) and returns the ids
// acknowledged with a 2xx.
func enqueueUntilKilled(t *testing.T, jobsURL string, kill func()) []string {
	t.Helper()
	var (
		mu     sync.Mutex
		acked  []string
		n      atomic.Int64
		done   atomic.Bool
		wg     sync.WaitGroup
		others = map[int]int{}
	)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !done.Load(); i++ {
				id := fmt.Sprintf("g%d-%06d", g, i)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				a, err := call(ctx, "POST", jobsURL, fmt.Sprintf(`{"id":%q,"payload":%d}`, id, i))
				cancel()
				mu.Lock()
				switch {
				case err == nil && a.Status/100 == 2:
					acked = append(acked, id)
					n.Add(1)
				case err == nil:
					others[a.Status]++
				}
				mu.Unlock()
			}
		}()
	}
	defer func() { done.Store(true); wg.Wait() }() // also when kill fails the test
	start := time.Now()
	for n.Load() < 300 && time.Since(start) < time.Second {
		time.Sleep(5 * time.Millisecond)
	}
	kill()
	time.Sleep(200 * time.Millisecond)
	done.Store(true)
	wg.Wait()
	for status := range others {
		if status != 503 {
			t.Errorf("enqueue answered %d %d times; want 201, or 503 once Redis was killed", status, others[status])
		}
	}
	return acked
}

// killRedis sends SIGKILL to the redis-server at addr: no clean shutdown,
// nothing flushed that was not written before.
func killRedis(t *testing.T, addr string) {
	t.Helper()
	info, err := newRedisClient(t, addr).Info(context.Background(), "server").Result()
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(info, "process_id:")
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(rest, "\n", 2)[0]))
	if !ok || err != nil {
		t.Fatalf("no process_id in INFO server: %v", err)
	}
	proc, err := os.FindProcess(pid)
	if err == nil {
		err = proc.Kill()
	}
	if err != nil {
		t.Fatalf("SIGKILL redis-server %d: %v", pid, err)
	}
}

// survivors counts the job rows of ids that queue still has in Redis.
func survivors(t *testing.T, addr, queue string, ids []string) int {
	t.Helper()
	ctx := context.Background()
	c := newRedisClient(t, addr)
	keys := keyspace.NewQueue("aof", queue)
	exists := make([]*redis.IntCmd, len(ids))
	pipe := c.Pipeline()
	for i, id := range ids {
		exists[i] = pipe.Exists(ctx, keys.Job(id))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	survived := 0
	for _, cmd := range exists {
		survived += int(cmd.Val())
	}
	return survived
}
