// Package clients runs the test suites of the Python and Node client
// packages (clients/python, clients/node) against a real service, each on
// the package as a user installs it. clients/README.md is the contract
// between this harness and the suites.
package clients

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/redistest"
	"github.com/echo-mq/echo_mq/internal/servicetest"
)

// prefix is the service's EMQ_PREFIX, which the control server needs to
// name a queue's keys.
const prefix = "clients"

// serviceBin is the service binary TestMain builds once.
var serviceBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "emq-clients-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	serviceBin, err = servicetest.Build(dir)
	code := 1
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		code = m.Run()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// harness is what a suite runs against: a redis-server of its own, the
// service on it with a key of each role, and the control server.
type harness struct {
	t                   *testing.T
	redis               *redistest.Server
	rdb                 *redis.Client
	service             *servicetest.Service
	control             *httptest.Server
	admin, worker, read string // the keys

	restarts sync.WaitGroup // Redis starts still to come
	restart  sync.Mutex     // one restart at a time
}

// startHarness starts Redis (with an append-only file, so that a restart
// keeps the jobs), the service and the control server; all stop when the
// test ends, and the service's log is shown when it failed.
func startHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{t: t, admin: secret(t), worker: secret(t), read: secret(t)}
	h.redis = redistest.StartServer(t, "--appendonly", "yes", "--appendfsync", "always")
	t.Cleanup(h.restarts.Wait) // before the server is stopped: cleanups run last first
	h.rdb = redis.NewClient(&redis.Options{Addr: h.redis.Addr})
	t.Cleanup(func() { h.rdb.Close() })
	h.service = servicetest.Start(t, serviceBin,
		"EMQ_REDIS_URL=redis://"+h.redis.Addr+"/0",
		"EMQ_PREFIX="+prefix,
		"EMQ_SWEEP_INTERVAL=200ms",
		"EMQ_API_KEYS=harness:admin:"+h.admin+",suite-worker:worker:"+h.worker+",suite-reader:reader:"+h.read)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the service's log:\n%s", h.service.Log())
		}
	})
	mux := http.NewServeMux()
	mux.HandleFunc("POST /steal", h.steal)
	mux.HandleFunc("POST /restart-redis", h.restartRedis)
	h.control = httptest.NewServer(mux)
	t.Cleanup(h.control.Close)
	return h
}

// secret returns 32 random hex digits, for an API key.
func secret(t *testing.T) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// env is what a suite is given (clients/README.md), on top of the
// process's environment without its EMQ_ variables.
func (h *harness) env() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "EMQ_") {
			env = append(env, kv)
		}
	}
	return append(env,
		"EMQ_TEST_URL="+h.service.URL(),
		"EMQ_TEST_ADMIN_KEY="+h.admin,
		"EMQ_TEST_WORKER_KEY="+h.worker,
		"EMQ_TEST_READER_KEY="+h.read,
		"EMQ_TEST_CONTROL="+h.control.URL,
		"EMQ_TEST_BEHAVIOUR="+repoPath(h.t, "clients", "behaviour.json"))
}

// steal takes an active job from its holder as a lapsed lease does: its
// lease is made past, a sweep recovers it to the front of pending, and the
// harness claims it and completes it with {"stolen": true}. The holder's
// token then fences nothing: its next extend or complete is 409.
func (h *harness) steal(w http.ResponseWriter, r *http.Request) {
	var req struct{ Queue, ID string }
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Queue == "" || req.ID == "" {
		http.Error(w, `want {"queue", "id"}`, http.StatusBadRequest)
		return
	}
	token, err := h.take(r.Context(), req.Queue, req.ID)
	if err != nil {
		h.t.Errorf("control: steal %s/%s: %v", req.Queue, req.ID, err)
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"token":%d}`+"\n", token)
}

// take does steal's work and returns the token the harness completed the
// job with.
func (h *harness) take(ctx context.Context, queue, id string) (int64, error) {
	active := keyspace.NewQueue(prefix, queue).Set("active")
	lapsed := redis.ZAddArgs{XX: true, Ch: true, Members: []redis.Z{{Score: 0, Member: id}}}
	if n, err := h.rdb.ZAddArgs(ctx, active, lapsed).Result(); err != nil {
		return 0, err
	} else if n != 1 {
		return 0, fmt.Errorf("job %s is not active", id)
	}
	if _, err := h.call(ctx, "POST", "/queues/"+queue+"/sweep", `{}`); err != nil {
		return 0, err
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		body, err := h.call(ctx, "POST", "/queues/"+queue+"/claim", `{"count":1,"lease_ms":30000,"wait_ms":1000,"worker":"harness"}`)
		if err != nil {
			return 0, err
		}
		var got struct {
			Jobs []struct {
				ID    string `json:"id"`
				Token int64  `json:"token"`
			} `json:"jobs"`
		}
		if err := json.Unmarshal(body, &got); err != nil {
			return 0, err
		}
		for _, j := range got.Jobs {
			path := "/queues/" + queue + "/jobs/" + j.ID
			if j.ID != id { // another job of the case: give it back, its attempt unspent
				if _, err := h.call(ctx, "POST", path+"/snooze", fmt.Sprintf(`{"token":%d,"delay_ms":0}`, j.Token)); err != nil {
					return 0, err
				}
				continue
			}
			_, err := h.call(ctx, "POST", path+"/complete", fmt.Sprintf(`{"token":%d,"result":{"stolen":true}}`, j.Token))
			return j.Token, err
		}
	}
	return 0, fmt.Errorf("job %s was not claimed within 30 s of its sweep", id)
}

// call sends an admin request to the service and returns the answer's
// body; an answer that is not 2xx is an error.
func (h *harness) call(ctx context.Context, method, path, body string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, h.service.URL()+path, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+h.admin)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	return b, nil
}

// restartRedis stops Redis, answers, and starts it again down_ms later.
func (h *harness) restartRedis(w http.ResponseWriter, r *http.Request) {
	var req struct {
		DownMs int `json:"down_ms"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.DownMs < 0 || req.DownMs > 30000 {
		http.Error(w, `want {"down_ms": 0 to 30000}`, http.StatusBadRequest)
		return
	}
	h.restart.Lock()
	h.redis.Stop()
	h.restarts.Add(1)
	go func() {
		defer h.restarts.Done()
		defer h.restart.Unlock()
		time.Sleep(time.Duration(req.DownMs) * time.Millisecond)
		if err := h.redis.Start(); err != nil {
			h.t.Errorf("control: Redis did not start again: %v", err)
		}
	}()
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintln(w, `{"stopped":true}`)
}
