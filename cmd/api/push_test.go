package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/redistest"
)

// deliveryLog is what a push receiver saw: every delivery of each job, and
// any that came while another of the same job, or more than the target's
// concurrency, was under way.
type deliveryLog struct {
	mu         sync.Mutex
	delivered  map[string]int // job id -> deliveries
	running    map[string]int // job id -> deliveries under way
	overlapped []string
	now, most  int
}

func (l *deliveryLog) start(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.delivered[id]++
	if l.running[id]++; l.running[id] > 1 {
		l.overlapped = append(l.overlapped, id)
	}
	l.now++
	l.most = max(l.most, l.now)
}

func (l *deliveryLog) end(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.running[id]--
	l.now--
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
// queue's jobs to a receiver, SIGKILLs one of them while deliveries are
// under way, and keeps the other: every job ends completed, none is lost,
// none was delivered while a delivery of it was under way, and the two
// replicas never had more deliveries open at once than the target's
// concurrency. The deliveries the killed replica left open go out again
// once their leases lapse and the sweep takes them back.
func TestPushSurvivesAKilledReplica(t *testing.T) {
	t.Parallel()
	const jobs, concurrency = 300, 8
	bin := buildService(t)
	server := redistest.StartServer(t)
	log := &deliveryLog{delivered: map[string]int{}, running: map[string]int{}}
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var j struct {
			ID string `json:"id"`
		}
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &j); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		log.start(j.ID)
		defer log.end(j.ID)
		time.Sleep(40 * time.Millisecond)
		fmt.Fprintf(w, `{"done":%q}`, j.ID)
	}))
	t.Cleanup(receiver.Close)

	replicas := make([]*serviceProc, 2)
	bases := make([]string, 2)
	for i := range replicas {
		addr := fmt.Sprintf("127.0.0.1:%d", loopbackPort(t))
		bases[i] = "http://" + addr
		replicas[i] = startBinary(t, bin, []string{"EMQ_ADDR=" + addr, "EMQ_REDIS_URL=redis://" + server.Addr,
			"EMQ_PREFIX=pushcrash", "EMQ_SWEEP_INTERVAL=200ms", "EMQ_MAX_STALLED=10", "EMQ_LOG_LEVEL=warn",
			"EMQ_PUSH_ALLOW=127.0.0.1"}, bases[i])
	}
	q := redistest.Queue(t)
	for from := 0; from < jobs; from += 100 {
		mustCall(t, "POST", bases[0]+"/queues/"+q+"/jobs/batch", crashBatch(from, 100), 200, nil)
	}
	mustCall(t, "PUT", bases[1]+"/queues/"+q+"/push",
		fmt.Sprintf(`{"url":%q,"concurrency":%d,"timeout_ms":1000,"lease_ms":1500}`, receiver.URL, concurrency), 200, nil)

	eventually(t, 30*time.Second, "a third of the jobs delivered", func() bool { return log.total() >= jobs/3 })
	replicas[0].kill()
	var counts queueCounts
	eventually(t, 60*time.Second, fmt.Sprintf("all %d jobs completed with one replica left", jobs), func() bool {
		a := mustCall(t, "GET", bases[1]+"/queues/"+q, "", 200, &counts)
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
		}
	}
	if len(log.overlapped) > 0 || log.most > concurrency {
		t.Errorf("delivered while under way: %v; %d deliveries at once, over the concurrency of %d", log.overlapped, log.most, concurrency)
	}
	if counts.Counts["completed"] != jobs || counts.Counts["dead"] != 0 || counts.Counts["active"] != 0 || counts.Counts["pending"] != 0 {
		t.Errorf("counts %v, want %d completed and nothing else", counts.Counts, jobs)
	}
	t.Logf("%d jobs, %d delivered again after the kill, at most %d at once", jobs, again, log.most)
}
