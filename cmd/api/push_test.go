package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/redistest"
)

// pushWorker is the worker name of a replica's deliveries.
func pushWorker(p *serviceProc) string {
	host, _ := os.Hostname()
	return "push@" + host + ":" + strconv.Itoa(p.cmd.Process.Pid)
}

// deliveryLog is what a push receiver saw: every delivery of each job, and
// any that came while another of the same job, or more than the target's
// concurrency, was under way.
type deliveryLog struct {
	mu         sync.Mutex
	delivered  map[string]int    // job id -> deliveries
	first      map[string]string // job id -> the worker of its first delivery
	running    map[string]int    // job id -> deliveries under way
	byWorker   map[string]int    // worker -> deliveries under way
	overlapped []string
	now, most  int
}

func (l *deliveryLog) start(id, worker string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.delivered[id]++; l.delivered[id] == 1 {
		l.first[id] = worker
	}
	l.byWorker[worker]++
	if l.running[id]++; l.running[id] > 1 {
		l.overlapped = append(l.overlapped, id)
	}
	l.now++
	l.most = max(l.most, l.now)
}

func (l *deliveryLog) end(id, worker string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.byWorker[worker]--
	l.running[id]--
	l.now--
}

// underWay is how many deliveries worker has under way.
func (l *deliveryLog) underWay(worker string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.byWorker[worker]
}

func (l *deliveryLog) total() (n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.delivered {
		n += c
	}
	return n
}

// TestPushSurvivesAKilledReplica runs two service replicas delivering one
// queue's jobs to a receiver, SIGKILLs one while it has deliveries under
// way, and keeps the other: every job ends completed, none is lost,
// none was delivered while a delivery of it was under way, and the two
// replicas never had more deliveries open at once than the target's
// concurrency. The deliveries the killed replica left open go out again
// once their leases lapse and the sweep takes them back, from the replica
// left.
func TestPushSurvivesAKilledReplica(t *testing.T) {
	t.Parallel()
	bin := buildService(t)
	t.Run("redis", func(t *testing.T) {
		t.Parallel()
		killAReplicaMidDelivery(t, bin, "redis://"+redistest.StartServer(t).Addr)
	})
	t.Run("cluster", func(t *testing.T) {
		t.Parallel()
		killAReplicaMidDelivery(t, bin, redistest.StartCluster(t, 3, 0).URL())
	})
}

// killAReplicaMidDelivery is TestPushSurvivesAKilledReplica on the Redis
// (or Cluster) at redisURL.
func killAReplicaMidDelivery(t *testing.T, bin, redisURL string) {
	const jobs, concurrency = 300, 8
	log := &deliveryLog{delivered: map[string]int{}, first: map[string]string{}, running: map[string]int{}, byWorker: map[string]int{}}
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var j struct {
			ID     string `json:"id"`
			Worker string `json:"worker"`
		}
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &j); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		log.start(j.ID, j.Worker)
		defer log.end(j.ID, j.Worker)
		time.Sleep(100 * time.Millisecond)
		fmt.Fprintf(w, `{"done":%q}`, j.ID)
	}))
	t.Cleanup(receiver.Close)

	replicas := make([]*serviceProc, 2)
	bases := make([]string, 2)
	for i := range replicas {
		addr := fmt.Sprintf("127.0.0.1:%d", loopbackPort(t))
		bases[i] = "http://" + addr
		replicas[i] = startBinary(t, bin, []string{"EMQ_ADDR=" + addr, "EMQ_REDIS_URL=" + redisURL,
			"EMQ_PREFIX=pushcrash", "EMQ_SWEEP_INTERVAL=200ms", "EMQ_MAX_STALLED=10", "EMQ_LOG_LEVEL=warn",
			"EMQ_PUSH_ALLOW=127.0.0.1"}, bases[i])
	}
	q := redistest.Queue(t)
	for from := 0; from < jobs; from += 100 {
		mustCall(t, "POST", bases[0]+"/queues/"+q+"/jobs/batch", crashBatch(from, 100), 200, nil)
	}
	mustCall(t, "PUT", bases[1]+"/queues/"+q+"/push",
		fmt.Sprintf(`{"url":%q,"concurrency":%d,"timeout_ms":1000,"lease_ms":2000}`, receiver.URL, concurrency), 200, nil)

	// The replica killed is one with deliveries under way (the one that
	// frees a slot claims the next job at once, so one replica may well
	// do them all); the other must take over.
	var doomed string
	eventually(t, 30*time.Second, "a quarter of the jobs delivered, and a replica with deliveries under way", func() bool {
		for _, p := range replicas {
			if w := pushWorker(p); log.underWay(w) > 0 && log.total() >= jobs/4 {
				doomed = w
				p.kill()
				return true
			}
		}
		return false
	})
	survivor := 0
	if doomed == pushWorker(replicas[0]) {
		survivor = 1
	}
	var counts queueCounts
	eventually(t, 60*time.Second, fmt.Sprintf("all %d jobs completed with one replica left", jobs), func() bool {
		a := mustCall(t, "GET", bases[survivor]+"/queues/"+q, "", 200, &counts)
		return a.Status == 200 && counts.Counts["completed"] >= jobs
	})

	log.mu.Lock()
	defer log.mu.Unlock()
	again := 0
	for i := range jobs {
		switch n := log.delivered[crashID(i)]; {
		case n == 0:
			t.Errorf("%s was never delivered", crashID(i))
		case n > 1:
			again++
			if log.first[crashID(i)] != doomed {
				t.Errorf("%s was delivered again, but the replica killed did not have it", crashID(i))
			}
		}
	}
	if again == 0 {
		t.Error("no delivery the killed replica had under way went out again")
	}
	if len(log.overlapped) > 0 || log.most > concurrency {
		t.Errorf("delivered while under way: %v; %d deliveries at once, over the concurrency of %d", log.overlapped, log.most, concurrency)
	}
	if counts.Counts["completed"] != jobs || counts.Counts["dead"] != 0 || counts.Counts["active"] != 0 || counts.Counts["pending"] != 0 {
		t.Errorf("counts %v, want %d completed and nothing else", counts.Counts, jobs)
	}
	t.Logf("%d jobs, %d delivered again after the kill, at most %d at once", jobs, again, log.most)
}
