package push_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/admin"
	"github.com/echo-mq/echo_mq/internal/events"
	emqhttp "github.com/echo-mq/echo_mq/internal/http"
	"github.com/echo-mq/echo_mq/internal/lease"
	"github.com/echo-mq/echo_mq/internal/push"
	"github.com/echo-mq/echo_mq/internal/redistest"
	"github.com/echo-mq/echo_mq/internal/stall"
	"github.com/echo-mq/echo_mq/internal/wake"
)

func TestMain(m *testing.M) { os.Exit(redistest.Run(m)) }

// concurrency is the deliveries (or the pull workers) at once in the
// benchmark.
const concurrency = 16

// BenchmarkDelivery is what a push delivery costs beside a pull worker's
// claim and complete of the same jobs, on one redis-server of its own:
//
//   - push: a Deliverer POSTs each job to a local receiver that answers
//     200 at once, and completes it;
//   - pull-http: 16 workers claim a job and complete it over the HTTP API
//     (POST .../claim, POST .../complete), as workers do;
//   - pull: 16 goroutines claim a job and complete it, straight through the
//     lease service (no HTTP at all): the floor of a job's life.
//
// Each reports jobs/s and redis-µs/job (the time Redis spent in script
// calls, INFO commandstats). Run it with
//
//	go test -run '^$' -bench Delivery -benchtime 5000x ./internal/push
func BenchmarkDelivery(b *testing.B) {
	b.Run("push", func(b *testing.B) {
		rdb, leases, q := benchSetup(b)
		receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(`{"ok":true}`))
		}))
		b.Cleanup(receiver.Close)
		allow, err := push.ParseAllow("127.0.0.1")
		if err != nil {
			b.Fatal(err)
		}
		store := push.NewStore(rdb, "bench")
		hub := wake.NewHub(rdb, "bench", slog.New(slog.DiscardHandler))
		ctx, stop := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() { hub.Run(ctx) })
		defer func() { stop(); wg.Wait() }()
		fill(b, leases, q, b.N)
		if _, _, err := store.Put(ctx, q, push.Target{URL: receiver.URL, Concurrency: concurrency}.WithDefaults(), push.Actor{}); err != nil {
			b.Fatal(err)
		}
		must(b, rdb.ConfigResetStat(ctx).Err())
		b.ResetTimer()
		// Started with the target there: its first look finds the queue.
		d := push.NewDeliverer(push.Config{Store: store, Leases: leases, Waiters: hub, Allow: allow, Encode: emqhttp.PushBody,
			MaxResultBytes: 1 << 20, Interval: 100 * time.Millisecond})
		wg.Go(func() { d.Run(ctx) })
		waitCompleted(b, rdb, q, b.N)
		report(b, rdb)
	})
	b.Run("pull-http", func(b *testing.B) {
		rdb, leases, q := benchSetup(b)
		hub := wake.NewHub(rdb, "bench", slog.New(slog.DiscardHandler))
		api := httptest.NewServer(emqhttp.NewHandler(emqhttp.Config{Leases: leases, Admin: admin.NewService(rdb, "bench"),
			Sweeper: stall.NewService(rdb, "bench"), Waiters: hub, Events: events.NewLog(rdb, "bench"),
			Stopping: make(chan struct{}), Logger: slog.New(slog.DiscardHandler)}))
		b.Cleanup(api.Close)
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: concurrency}}
		post := func(path, body string, out any) error {
			resp, err := client.Post(api.URL+path, "application/json", strings.NewReader(body))
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("POST %s: %s", path, resp.Status)
			}
			if out == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				return err
			}
			return json.NewDecoder(resp.Body).Decode(out)
		}
		pullWith(b, rdb, leases, q, func() bool {
			var claimed struct {
				Jobs []struct {
					ID    string `json:"id"`
					Token int64  `json:"token"`
				} `json:"jobs"`
			}
			if err := post("/queues/"+q+"/claim", `{"lease_ms":60000}`, &claimed); err != nil || len(claimed.Jobs) == 0 {
				if err != nil {
					b.Error(err)
				}
				return false
			}
			j := claimed.Jobs[0]
			if err := post("/queues/"+q+"/jobs/"+j.ID+"/complete", fmt.Sprintf(`{"token":%d,"result":{"ok":true}}`, j.Token), nil); err != nil {
				b.Error(err)
				return false
			}
			return true
		})
	})
	b.Run("pull", func(b *testing.B) {
		rdb, leases, q := benchSetup(b)
		ctx := context.Background()
		pullWith(b, rdb, leases, q, func() bool {
			c, err := leases.Claim(ctx, q, lease.ClaimParams{Count: 1, Lease: time.Minute})
			if err != nil || len(c.Jobs) == 0 {
				return false
			}
			j := c.Jobs[0]
			if _, _, err := leases.Complete(ctx, q, j.ID, j.Token, []byte(`{"ok":true}`), nil); err != nil {
				b.Error(err)
				return false
			}
			return true
		})
	})
}

// pullWith fills q with b.N jobs and works them with concurrency
// goroutines, each calling work until it reports false (nothing left),
// then reports.
func pullWith(b *testing.B, rdb *redis.Client, leases *lease.Service, q string, work func() bool) {
	fill(b, leases, q, b.N)
	must(b, rdb.ConfigResetStat(context.Background()).Err())
	b.ResetTimer()
	var wg sync.WaitGroup
	for range concurrency {
		wg.Go(func() {
			for work() {
			}
		})
	}
	wg.Wait()
	waitCompleted(b, rdb, q, b.N)
	report(b, rdb)
}

func benchSetup(b *testing.B) (*redis.Client, *lease.Service, string) {
	b.Helper()
	server := redistest.StartServer(b, "--hash-max-listpack-value", "1024")
	rdb := redis.NewClient(&redis.Options{Addr: server.Addr, PoolSize: 64})
	b.Cleanup(func() { rdb.Close() })
	return rdb, lease.NewService(rdb, "bench", lease.KeepCompleted(0)), "hooks" // all kept: waitCompleted counts them
}

// fill enqueues n jobs of a 100-byte payload.
func fill(b *testing.B, leases *lease.Service, q string, n int) {
	b.Helper()
	payload := []byte(`{"data":"` + strings.Repeat("x", 89) + `"}`)
	for done := 0; done < n; {
		batch := make([]lease.NewJob, min(n-done, 1000))
		for i := range batch {
			batch[i] = lease.NewJob{Payload: payload}
		}
		if _, err := leases.Enqueue(context.Background(), q, batch); err != nil {
			b.Fatal(err)
		}
		done += len(batch)
	}
}

// waitCompleted waits until n jobs of q are completed.
func waitCompleted(b *testing.B, rdb *redis.Client, q string, n int) {
	b.Helper()
	key := "bench:{" + q + "}:completed"
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(2 * time.Millisecond) {
		if got, err := rdb.ZCard(context.Background(), key).Result(); err == nil && got >= int64(n) {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d jobs not completed within a minute", n)
		}
	}
}

// report stops the timer and reports jobs/s and Redis's script time per job.
func report(b *testing.B, rdb *redis.Client) {
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
	b.ReportMetric(redistest.ScriptMicros(b, rdb)/float64(b.N), "redis-µs/job")
}

func must(b *testing.B, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(fmt.Errorf("bench: %w", err))
	}
}
