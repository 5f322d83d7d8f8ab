package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// answer is an HTTP answer of the service.
type answer struct {
	Status int
	Header http.Header
	Body   []byte
}

func (a answer) String() string { return fmt.Sprintf("%d %s", a.Status, bytes.TrimSpace(a.Body)) }

// callClient is the client of the reliability tests: no keep-alive
// surprises across a killed service, and a bound on every call.
var callClient = &http.Client{Timeout: 40 * time.Second}

// call sends method url with a JSON body ("" for none) and reads the whole
// answer. It fails only on a transport error.
func call(ctx context.Context, method, url, body string) (answer, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return answer{}, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := callClient.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, err
	}
	return answer{Status: resp.StatusCode, Header: resp.Header, Body: raw}, nil
}

// mustCall sends method url with body and fails the test unless the answer
// has status; it decodes the answer into out when out is not nil.
func mustCall(t testing.TB, method, url, body string, status int, out any) answer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, err := call(ctx, method, url, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	if a.Status != status {
		t.Fatalf("%s %s: got %s, want status %d", method, url, a, status)
	}
	if out != nil {
		if err := json.Unmarshal(a.Body, out); err != nil {
			t.Fatalf("%s %s: decode %s: %v", method, url, a, err)
		}
	}
	return a
}

// heldJob is a job as a claim answers it.
type heldJob struct {
	ID    string `json:"id"`
	State string `json:"state"`
	Token int64  `json:"token"`
}

type heldJobs struct {
	Jobs []heldJob `json:"jobs"`
}

// queueCounts is GET /queues/{queue}.
type queueCounts struct {
	Name   string           `json:"name"`
	Paused bool             `json:"paused"`
	Counts map[string]int64 `json:"counts"`
}

// eventually polls check every interval until it reports true, and fails
// the test with what if it has not within limit.
func eventually(t testing.TB, limit time.Duration, what string, check func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !check() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// loopbackPort returns a port free on 127.0.0.1 a moment ago.
func loopbackPort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// newRedisClient returns a client of addr, closed when the test ends.
func newRedisClient(t testing.TB, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { c.Close() })
	return c
}
