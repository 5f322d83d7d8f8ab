package http_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/redistest"
	"github.com/echo-mq/echo_mq/internal/wake"
)

// fcalls is how many FCALLs (and EVALSHA or EVAL, the fallbacks) the
// Redis of rdb has run since its last CONFIG RESETSTAT, from INFO
// commandstats.
func fcalls(tb testing.TB, rdb redis.UniversalClient) int {
	tb.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		tb.Fatal(err)
	}
	total := 0
	for _, line := range strings.Split(info, "\n") {
		name, stats, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || (name != "cmdstat_fcall" && name != "cmdstat_evalsha" && name != "cmdstat_eval") {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(stats, "calls="), ",")
		n, err := strconv.Atoi(calls)
		if err != nil {
			tb.Fatalf("cannot read %s: %v", line, err)
		}
		total += n
	}
	return total
}

// TestLongPollClaimsPerJob counts, with INFO commandstats on a Redis of
// the test's own, the claims Redis runs per job for a queue with more
// long-polling workers than jobs, as workers use it: each takes a job and
// polls again at once, on its own replica. A job costs one claim on each
// replica (its wake is broadcast, and each replica sends one of its
// sleepers), and a poll that comes to a queue its replica knows to be
// empty costs none: 1 per job with one replica, 2 with two. The earlier
// design paid one claim more per job, the new poll's (2 and 3).
func TestLongPollClaimsPerJob(t *testing.T) {
	t.Parallel()
	const workers, jobs = 10, 40
	for _, replicas := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d replicas", replicas), func(t *testing.T) {
			t.Parallel()
			srv := redistest.StartServer(t)
			clients := make([]redis.UniversalClient, replicas)
			for i := range clients {
				clients[i] = closeLater(t, redis.NewClient(&redis.Options{Addr: srv.Addr}))
			}
			h := newReplicas(t, clients)
			admin := closeLater(t, redis.NewClient(&redis.Options{Addr: srv.Addr}))
			q := redistest.Queue(t)

			got := make(chan string, jobs)
			var wg sync.WaitGroup
			for k := range workers {
				on := h.only(k % replicas) // each replica has waiters
				wg.Go(func() {
					for {
						r := on.do(t, "POST", "/queues/"+q+"/claim", `{"wait_ms":30000,"lease_ms":60000}`)
						list := must[jobList](t, r, http.StatusOK).Jobs
						if len(list) == 0 {
							return // stopped
						}
						got <- list[0].ID
					}
				})
			}
			for deadline := time.Now().Add(20 * time.Second); h.sleeping(q) < workers; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%d of %d workers asleep after 20s", h.sleeping(q), workers)
				}
			}
			if err := admin.ConfigResetStat(context.Background()).Err(); err != nil {
				t.Fatal(err)
			}
			for i := range jobs {
				h.add(t, q, fmt.Sprint("j", i))
				select {
				case <-got:
				case <-time.After(20 * time.Second):
					t.Fatalf("job j%d was not claimed within 20s", i)
				}
				time.Sleep(5 * time.Millisecond) // its worker polls again
			}
			claims := fcalls(t, admin) - jobs // every other call was an enqueue
			h.stop()
			wg.Wait()
			perJob := float64(claims) / jobs
			t.Logf("%d replicas, %d workers: %d claims for %d jobs, %.2f per job", replicas, workers, claims, jobs, perJob)
			if limit := float64(replicas) + 0.25; perJob > limit {
				t.Errorf("%.2f claims per job, want at most %.2f (one per replica reached, a few refreshes)", perJob, limit)
			}
		})
	}
}

// loseWakes is a go-redis hook that sends the scripts' wake messages to a
// channel nobody listens to: a replica whose client has it enqueues, and
// nobody hears of it, as when a message is lost.
type loseWakes struct{}

func (loseWakes) DialHook(next redis.DialHook) redis.DialHook { return next }

func (loseWakes) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		lose(cmd)
		return next(ctx, cmd)
	}
}

func (loseWakes) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			lose(cmd)
		}
		return next(ctx, cmds)
	}
}

// lose renames the wake channel a script call names (ARGV[2]).
func lose(cmd redis.Cmder) {
	for i, a := range cmd.Args() {
		if s, ok := a.(string); ok && strings.Contains(s, ":wake:") {
			cmd.Args()[i] = strings.Replace(s, ":wake:", ":lost:", 1)
		}
	}
}

// answered is a poll's reply and when it came.
type answered struct {
	reply
	at time.Time
}

// TestALostWakeStrandsNoJob: pub/sub is at most once, so a replica trusts
// that a queue is empty for wake.TrustFor at most; a job whose wake is
// lost is claimed by a poll already waiting, on either replica, within
// that bound and never only when the poll's wait ends.
func TestALostWakeStrandsNoJob(t *testing.T) {
	t.Parallel()
	// The polls wait 30 s: a job claimed within TrustFor and a busy
	// machine's slack was not left for a poll's wait to end.
	const slack = 5 * time.Second
	for _, tc := range []struct {
		name string
		lose func(t *testing.T, admin redis.UniversalClient) // before the enqueue through replica 1
		hook bool                                            // replica 1 publishes to nobody
	}{
		{name: "publish lost", hook: true},
		{name: "subscription dropped", lose: func(t *testing.T, admin redis.UniversalClient) {
			if err := admin.Do(context.Background(), "client", "kill", "type", "pubsub").Err(); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.StartServer(t)
			admin := closeLater(t, redis.NewClient(&redis.Options{Addr: srv.Addr}))
			enqueuer := closeLater(t, redis.NewClient(&redis.Options{Addr: srv.Addr}))
			if tc.hook {
				enqueuer.AddHook(loseWakes{})
			}
			h := newReplicas(t, []redis.UniversalClient{closeLater(t, redis.NewClient(&redis.Options{Addr: srv.Addr})), enqueuer})
			q := redistest.Queue(t)
			// A first exchange loads the spec the harness checks answers
			// against, which is slow under the race detector.
			must[jobList](t, h.do(t, "POST", "/queues/"+q+"/claim", `{}`), http.StatusOK)
			answers := make(chan answered, 3)
			for _, i := range []int{0, 0, 1} {
				go func() {
					r := h.only(i).do(t, "POST", "/queues/"+q+"/claim", `{"wait_ms":30000}`)
					answers <- answered{r, time.Now()}
				}()
			}
			for deadline := time.Now().Add(5 * time.Second); h.sleeping(q) < 3; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%d of 3 polls asleep after 5s", h.sleeping(q))
				}
			}
			time.Sleep(100 * time.Millisecond) // well inside what the replicas trust
			if tc.lose != nil {
				tc.lose(t, admin)
			}
			enqueued := time.Now()
			h.only(1).add(t, q, "j")
			var a answered
			select {
			case a = <-answers:
			case <-time.After(25 * time.Second):
				t.Fatal("no poll answered within 25s")
			}
			if jobs := must[jobList](t, a.reply, http.StatusOK).Jobs; len(jobs) != 1 || jobs[0].ID != "j" {
				t.Fatalf("the first poll to answer got %s, want j", a.reply)
			}
			took := a.at.Sub(enqueued)
			t.Logf("%s: j claimed %v after its enqueue", tc.name, took)
			if took > wake.TrustFor+slack {
				t.Fatalf("j was claimed %v after its enqueue, want within %v (wake.TrustFor) and %v", took, wake.TrustFor, slack)
			}
			h.stop()
			for range 2 {
				if a := <-answers; len(must[jobList](t, a.reply, http.StatusOK).Jobs) != 0 {
					t.Fatalf("another poll got %s, want none", a.reply)
				}
			}
		})
	}
}
