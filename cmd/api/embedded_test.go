package main

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"
)

// The embedded store expires keys as its clock runs, as Redis does: the
// reaper's turn on a queue ends, so a lapsed lease is recovered by every
// sweep, not only by the first (miniredis only expires keys on demand
// unless told otherwise).
func TestEmbeddedStoreReaperKeepsRecovering(t *testing.T) {
	t.Parallel()
	base, logs, stop := startService(t, map[string]string{"EMQ_SWEEP_INTERVAL": "100ms", "EMQ_MAX_STALLED": "5"})
	defer func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	}()
	q := base + "/queues/embedded-reaper"
	post(t, q+"/jobs", `{"id":"j1","payload":1}`, 201)
	for stalls := 1; stalls <= 3; stalls++ {
		claimed := post(t, q+"/claim", `{"lease_ms":100}`, 200)
		if n := len(claimed["jobs"].([]any)); n != 1 {
			t.Fatalf("claim %d got %d jobs, want j1 back; log:\n%s", stalls, n, logs)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			job := getJob(t, q+"/jobs/j1")
			if job.State == "pending" && job.Stalled == stalls {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("after lapse %d the job is %s with %d stalls, want pending with %d: the reaper stopped sweeping",
					stalls, job.State, job.Stalled, stalls)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

type jobState struct {
	State   string `json:"state"`
	Stalled int    `json:"stalled"`
}

func getJob(t *testing.T, url string) jobState {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var j jobState
	if err := json.NewDecoder(resp.Body).Decode(&j); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return j
}
