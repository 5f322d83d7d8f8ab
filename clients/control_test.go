package clients

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// The control server does what the suites rely on: a steal leaves the
// holder's token fencing nothing, and a restart keeps the jobs.
func TestControlStealsAndRestarts(t *testing.T) {
	t.Parallel()
	h := startHarness(t)
	ctx := context.Background()
	q := "/queues/control"
	if _, err := h.call(ctx, "POST", q+"/jobs", `{"id":"held","payload":1}`); err != nil {
		t.Fatal(err)
	}
	if _, err := h.call(ctx, "POST", q+"/jobs", `{"id":"waiting","payload":2}`); err != nil {
		t.Fatal(err)
	}
	body, err := h.call(ctx, "POST", q+"/claim", `{"count":1}`)
	if err != nil {
		t.Fatal(err)
	}
	var claimed struct {
		Jobs []struct {
			ID    string `json:"id"`
			Token int64  `json:"token"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal(body, &claimed); err != nil || len(claimed.Jobs) != 1 || claimed.Jobs[0].ID != "held" {
		t.Fatalf("claimed %s (%v), want the job held", body, err)
	}
	token := claimed.Jobs[0].Token

	status, answer := h.post(t, "/steal", `{"queue":"control","id":"held"}`)
	if status != 200 {
		t.Fatalf("steal: %d %s", status, answer)
	}
	if _, err := h.call(ctx, "POST", q+"/jobs/held/complete", fmt.Sprintf(`{"token":%d}`, token)); err == nil ||
		!bytes.Contains([]byte(err.Error()), []byte("EMQSTALE")) {
		t.Fatalf("the old holder's complete after a steal: %v, want 409 EMQSTALE", err)
	}
	h.wantJob(t, "held", "completed", `{"stolen":true}`)
	h.wantJob(t, "waiting", "pending", "")

	if status, answer := h.post(t, "/restart-redis", `{"down_ms":3000}`); status != 200 {
		t.Fatalf("restart-redis: %d %s", status, answer)
	}
	if _, err := h.call(ctx, "GET", q+"/jobs/waiting", ""); err == nil {
		t.Fatal("a read while Redis is down was answered 2xx")
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := h.call(ctx, "GET", q+"/jobs/waiting", ""); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("Redis not back 30 s after a restart of 3 s: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	h.wantJob(t, "waiting", "pending", "")
	h.wantJob(t, "held", "completed", `{"stolen":true}`)
}

// post sends a request to the control server.
func (h *harness) post(t *testing.T, path, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(h.control.URL+path, "application/json", bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

// wantJob fails the test unless job id of the queue control is in state,
// with result (when not "").
func (h *harness) wantJob(t *testing.T, id, state, result string) {
	t.Helper()
	body, err := h.call(context.Background(), "GET", "/queues/control/jobs/"+id, "")
	if err != nil {
		t.Fatal(err)
	}
	var j struct {
		State  string          `json:"state"`
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(body, &j); err != nil {
		t.Fatal(err)
	}
	if j.State != state || result != "" && string(j.Result) != result {
		t.Fatalf("job %s: %s, want state %s result %s", id, body, state, result)
	}
}
