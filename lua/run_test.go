package lua

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/redistest"
)

func TestMain(m *testing.M) { os.Exit(redistest.Run(m)) }

// slowCount counts its runs in KEYS[1], then keeps Redis busy for ARGV[3]
// ms, longer than the client waits for an answer.
const slowCount = `-- KEYS[1] meta
redis.call('INCR', META)
local function now_ms()
  local t = redis.call('TIME')
  return t[1] * 1000 + math.floor(t[2] / 1000)
end
local deadline = now_ms() + tonumber(ARGV[3])
while now_ms() < deadline do end
return 1
`

// TestRunNeverResendsALostAnswer: when a script's answer is lost (here, a
// read timeout while the script still runs), go-redis's cluster client
// resends the command whatever MaxRetries says; Runner.Run does not, on a
// Cluster as on one node.
func TestRunNeverResendsALostAnswer(t *testing.T) {
	t.Parallel()
	const key = "emq-runtest:{q}:runs"
	cluster := redistest.SharedCluster(t)
	clients := map[string]redis.UniversalClient{
		// go-redis's default retries, which Run must keep from resending.
		"node": redis.NewClient(&redis.Options{Addr: redistest.Addr(), ReadTimeout: 100 * time.Millisecond}),
		"cluster": redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.Addrs(),
			ReadTimeout: 100 * time.Millisecond}),
	}
	ctx := context.Background()
	runs := func(rdb redis.UniversalClient) int {
		t.Helper()
		// Let the last slow run end before reading.
		for range 50 {
			if n, err := rdb.Get(ctx, key).Int(); err == nil {
				time.Sleep(300 * time.Millisecond)
				if m, _ := rdb.Get(ctx, key).Int(); m == n {
					return n
				}
			}
		}
		t.Fatal("the run counter did not settle")
		return 0
	}
	slow, err := newScript("slow", slowCount)
	if err != nil {
		t.Fatal(err)
	}
	lib := newLibrary([]*Script{slow}, nil)
	for name, rdb := range clients {
		t.Cleanup(func() { rdb.Close() })
		rdb.Del(ctx, key)
		run := NewRunner(rdb)
		run.lib = lib
		run.Load(ctx)
		if err := run.Run(ctx, Call{script: slow, keys: []string{key}, args: []any{"", "", 250}}).Err(); err == nil {
			t.Fatalf("%s: a 250 ms script answered within a 100 ms read timeout", name)
		}
		if n := runs(rdb); n != 1 {
			t.Errorf("%s: Runner.Run ran the script %d times after losing its answer, want 1", name, n)
		}
	}
	// The baseline, which the test guards against: go-redis's own script
	// runner on the cluster client sends it again.
	rdb := clients["cluster"]
	rdb.Del(ctx, key)
	_ = redis.NewScript(slow.Source()).Run(ctx, rdb, []string{key}, "", "", 250).Err()
	if n := runs(rdb); n < 2 {
		t.Logf("go-redis's runner ran the script %d times: its cluster client no longer resends", n)
	}
}
