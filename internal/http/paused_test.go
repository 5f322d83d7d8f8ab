package http_test

import (
	"context"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/redistest"
)

// scriptCalls is how many script calls (FCALL, EVALSHA, EVAL) rdb's server
// has answered since its start.
func scriptCalls(t *testing.T, rdb redis.UniversalClient) int {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range regexp.MustCompile(`cmdstat_(?:fcall|evalsha|eval|fcall_ro):calls=(\d+)`).FindAllStringSubmatch(info, -1) {
		c, _ := strconv.Atoi(m[1])
		n += c
	}
	return n
}

// onOwnServer is a harness on a redis-server of the test's own, whose
// command counts (scriptCalls) are the test's alone, and that server's
// client.
func onOwnServer(t *testing.T) (*harness, redis.UniversalClient) {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: redistest.StartServer(t).Addr})
	t.Cleanup(func() { rdb.Close() })
	return newHarness(t, rdb), rdb
}

// A long poll on a paused queue with jobs pending (answered held_by
// "paused", retry_after_ms 1000) sleeps until the resume: it does not claim
// again every second. A complete that claims next on a paused queue
// claims nothing and answers as before.
func TestPausedQueueLongPollDoesNotSpin(t *testing.T) {
	t.Parallel()
	h, rdb := onOwnServer(t)
	q := redistest.Queue(t)
	h.add(t, q, "a", "b")
	held := h.claimOne(t, q, "a", 30_000)
	h.pause(t, q)
	before := scriptCalls(t, rdb)
	poll := h.pollAsync(t, q, `{"wait_ms":4500}`)
	a := await(t, poll, 10*time.Second)
	calls := scriptCalls(t, rdb) - before
	if got := decode[claimView](t, a.reply); len(got.Jobs) != 0 {
		t.Fatalf("a paused queue's poll answered %s", a.reply)
	}
	if calls > 3 {
		t.Fatalf("a 4.5 s long poll of a paused queue made %d script calls, want at most 3 (no spin)", calls)
	}
	type completed struct {
		jobView
		Next []jobView `json:"next"`
	}
	done := must[completed](t, h.complete(t, q, "a", held.Token, `,"claim":{"count":5}`), http.StatusOK)
	if done.State != "completed" || len(done.Next) != 0 {
		t.Fatalf("complete with claim on a paused queue: %+v", done)
	}
}

// A lapsed lease holds its concurrency slot until a sweep recovers it: a
// claim held back by it is told to look again in a second, not at once,
// so that a long poll behind it does not spin on Redis.
func TestALapsedLeaseHoldingASlotMakesNoPollSpin(t *testing.T) {
	t.Parallel()
	h, rdb := onOwnServer(t)
	q := redistest.Queue(t)
	h.putSettings(t, q, `{"concurrency":1}`)
	h.add(t, q, "a", "b")
	h.claimOne(t, q, "a", 100)
	time.Sleep(300 * time.Millisecond) // a's lease lapses; no sweep runs here
	c := h.claimAnswer(t, q, nil)
	t.Logf("claim: %d jobs held_by %q retry_after_ms %v", len(c.Jobs), c.HeldBy, *c.RetryAfterMs)
	before := scriptCalls(t, rdb)
	a := await(t, h.pollAsync(t, q, `{"wait_ms":2000}`), 10*time.Second)
	calls := scriptCalls(t, rdb) - before
	if calls > 10 {
		t.Fatalf("a 2 s long poll behind a lapsed lease made %d script calls (answer %s)", calls, a.reply)
	}
}
