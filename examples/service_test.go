package examples

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/redistest"
	"github.com/echo-mq/echo_mq/internal/servicetest"
)

// serviceBin is the service binary TestMain builds once for every test.
var serviceBin string

// service is the service binary running on a loopback port of its own,
// against the redis-server TestMain started, with the calls the tests make
// to it.
type service struct{ *servicetest.Service }

// startService runs the service and waits until it answers. It is killed
// when the test ends.
func startService(t *testing.T) service {
	t.Helper()
	// Sweeps a second apart: a lapsed lease is recovered soon, and a worker
	// that a busy machine kept off the CPU past its lease for less than that
	// may still extend it.
	return service{servicetest.Start(t, serviceBin, "EMQ_REDIS_URL=redis://"+redistest.Addr()+"/0",
		"EMQ_PREFIX=examples", "EMQ_SWEEP_INTERVAL=1s")}
}

// job is the part of a job's JSON the tests look at.
type job struct {
	ID        string          `json:"id"`
	State     string          `json:"state"`
	Payload   json.RawMessage `json:"payload"`
	Result    json.RawMessage `json:"result"`
	LastError string          `json:"last_error"`
	Attempts  int             `json:"attempts"`
	Stalled   int             `json:"stalled"`
	StartedAt time.Time       `json:"started_at"`
	Worker    string          `json:"worker"`
}

// counts is how many jobs of a queue are in each state.
type counts struct {
	Pending   int `json:"pending"`
	Active    int `json:"active"`
	Delayed   int `json:"delayed"`
	Completed int `json:"completed"`
	Dead      int `json:"dead"`
	Cancelled int `json:"cancelled"`
}

func (c counts) total() int {
	return c.Pending + c.Active + c.Delayed + c.Completed + c.Dead + c.Cancelled
}

// counts reads how many jobs the queue holds in each state.
func (s service) counts(t *testing.T, queue string) counts {
	t.Helper()
	var q struct {
		Counts counts `json:"counts"`
	}
	s.mustCall(t, "GET", "/queues/"+queue, "", 200, &q)
	return q.Counts
}

// enqueue posts body to the queue's jobs and returns the new job's id.
func (s service) enqueue(t *testing.T, queue, body string) string {
	t.Helper()
	var j job
	s.mustCall(t, "POST", "/queues/"+queue+"/jobs", body, 201, &j)
	return j.ID
}

// job reads one job; it fails the test unless the answer is 200.
func (s service) job(t *testing.T, queue, id string) job {
	t.Helper()
	var j job
	s.mustCall(t, "GET", "/queues/"+queue+"/jobs/"+id, "", 200, &j)
	return j
}

// rawJob reads one job's JSON as the service answers it, for a failure
// message; it never fails the test.
func (s service) rawJob(queue, id string) string {
	a, err := call("GET", s.URL()+"/queues/"+queue+"/jobs/"+id, "")
	if err != nil {
		return err.Error()
	}
	return a.String()
}

// waitState waits until the job is in state, and returns it.
func (s service) waitState(t *testing.T, queue, id, state string, limit time.Duration) job {
	t.Helper()
	var j job
	eventually(t, limit, fmt.Sprintf("job %s %s", id, state), func() bool {
		j = s.job(t, queue, id)
		return j.State == state
	})
	return j
}

// mustCall sends method path with body and fails the test unless the
// answer has status; it decodes the answer into out when out is not nil.
func (s service) mustCall(t *testing.T, method, path, body string, status int, out any) {
	t.Helper()
	a, err := call(method, s.URL()+path, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	if a.status != status {
		t.Fatalf("%s %s: got %s, want status %d", method, path, a, status)
	}
	if out != nil {
		if err := json.Unmarshal(a.body, out); err != nil {
			t.Fatalf("%s %s: decode %s: %v", method, path, a, err)
		}
	}
}

// answer is an HTTP answer of the service.
type answer struct {
	status int
	body   []byte
}

func (a answer) String() string { return fmt.Sprintf("%d %s", a.status, bytes.TrimSpace(a.body)) }

var client = &http.Client{Timeout: 30 * time.Second}

// call sends method url with a JSON body ("" for none) and reads the whole
// answer. It fails only on a transport error.
func call(method, url, body string) (answer, error) {
	req, err := http.NewRequestWithContext(context.Background(), method, url, strings.NewReader(body))
	if err != nil {
		return answer{}, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, body: raw}, err
}

// eventually polls check until it reports true, and fails the test with
// what if it has not within limit.
func eventually(t *testing.T, limit time.Duration, what string, check func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !check() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// readFile returns a file's text, or why it could not be read.
func readFile(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return string(b)
}
