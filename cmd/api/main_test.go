package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/redistest"
)

func TestMain(m *testing.M) { os.Exit(redistest.Run(m)) }

// logBuffer collects run's log lines; safe for the server's goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

var listeningRE = regexp.MustCompile(`msg=Listening addr=(\S+)`)

// startService runs run with env on 127.0.0.1:0 and returns its base URL,
// its log, and a stop that cancels it and returns run's error.
func startService(t *testing.T, env map[string]string) (string, *logBuffer, func() error) {
	t.Helper()
	env["EMQ_ADDR"] = "127.0.0.1:0"
	ctx, cancel := context.WithCancel(context.Background())
	logs := &logBuffer{}
	done := make(chan error, 1)
	environ := make([]string, 0, len(env))
	for name, value := range env {
		environ = append(environ, name+"="+value)
	}
	go func() { done <- run(ctx, environ, logs) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if m := listeningRE.FindStringSubmatch(logs.String()); m != nil {
			stop := func() error {
				cancel()
				select {
				case err := <-done:
					return err
				case <-time.After(20 * time.Second):
					t.Fatal("run did not return within 20 s of its context ending")
					return nil
				}
			}
			return "http://" + m[1], logs, stop
		}
		select {
		case err := <-done:
			t.Fatalf("run returned %v before listening; log:\n%s", err, logs)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no Listening line after 10 s; log:\n%s", logs)
		}
	}
}

func post(t *testing.T, url, body string, wantStatus int) map[string]any {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	dec := json.NewDecoder(resp.Body)
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil {
		t.Fatalf("POST %s: decode: %v", url, err)
	}
	if resp.StatusCode != wantStatus {
		t.Fatalf("POST %s: status %d, want %d: %v", url, resp.StatusCode, wantStatus, out)
	}
	return out
}

// workerLoop drives one job through the service as a worker would: a long
// poll that an enqueue answers, a checkpoint, a complete.
func workerLoop(t *testing.T, base string) {
	t.Helper()
	q := base + "/queues/" + redistest.Queue(t)
	claimed := make(chan map[string]any, 1)
	go func() { claimed <- post(t, q+"/claim", `{"wait_ms":10000,"lease_ms":5000}`, 200) }()
	time.Sleep(100 * time.Millisecond) // let the claim start waiting
	post(t, q+"/jobs", `{"id":"j1","payload":{"to":"a@example.com"}}`, 201)
	var got map[string]any
	select {
	case got = <-claimed:
	case <-time.After(9 * time.Second):
		t.Fatal("the long poll was not answered after the enqueue")
	}
	jobs := got["jobs"].([]any)
	if len(jobs) != 1 {
		t.Fatalf("claimed %v, want j1", got)
	}
	tok := jobs[0].(map[string]any)["token"].(json.Number).String()
	ext := post(t, q+"/jobs/j1/lease", `{"token":`+tok+`,"lease_ms":10000,"progress":{"pct":50}}`, 200)
	if ext["cancel_requested"] != false {
		t.Fatalf("extend %v, want no cancel", ext)
	}
	done := post(t, q+"/jobs/j1/complete", `{"token":`+tok+`,"result":{"sent":true}}`, 200)
	if done["state"] != "completed" {
		t.Fatalf("complete %v, want completed", done)
	}
}

func TestRunServesOnRedisAndStopsGracefully(t *testing.T) {
	t.Parallel()
	base, logs, stop := startService(t, map[string]string{
		"EMQ_REDIS_URL": "redis://" + redistest.Addr(), "EMQ_PREFIX": "e2e", "EMQ_SWEEP_INTERVAL": "100ms"})
	workerLoop(t, base)
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get(base + path)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET %s: %v %v, want 200", path, resp, err)
		}
		resp.Body.Close()
	}
	if err := stop(); err != nil {
		t.Fatalf("run returned %v after a graceful stop, want nil", err)
	}
	if !strings.Contains(logs.String(), "msg=Stopped") {
		t.Fatalf("no Stopped line; log:\n%s", logs)
	}
}

func TestRunOnTheEmbeddedStoreSaysNothingPersists(t *testing.T) {
	t.Parallel()
	base, logs, stop := startService(t, map[string]string{})
	workerLoop(t, base)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "NOTHING PERSISTS") {
		t.Fatalf("the embedded store was not announced loudly; log:\n%s", logs)
	}
}

func TestShutdownAnswersWaitingLongPollsEmpty(t *testing.T) {
	t.Parallel()
	base, _, stop := startService(t, map[string]string{"EMQ_REDIS_URL": "redis://" + redistest.Addr()})
	answered := make(chan map[string]any, 1)
	go func() {
		answered <- post(t, base+"/queues/"+redistest.Queue(t)+"/claim", `{"wait_ms":30000}`, 200)
	}()
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-answered:
		if jobs := got["jobs"].([]any); len(jobs) != 0 {
			t.Fatalf("got %v, want an empty answer", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting long poll was not answered at shutdown")
	}
	if waited := time.Since(start); waited > 15*time.Second {
		t.Fatalf("shutdown took %v: it waited out the long poll", waited)
	}
}

func TestLoadConfigRefusesBadValues(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"EMQ_SWEEP_INTERVAL":     "5",
		"EMQ_MAX_STALLED":        "0",
		"EMQ_LOG_LEVEL":          "loud",
		"EMQ_PREFIX":             "a{b}",
		"EMQ_API_KEYS":           "admin:short",
		"EMQ_REDIS_AUTOPIPELINE": "maybe",
		"EMQ_PUSH_ALLOW":         "hooks.example.com,*",
		"EMQ_MAX_STREAMS":        "0",
		"EMQ_MAX_QUEUES":         "-1",
		"EMQ_METRICS_MAX_QUEUES": "0",
		// A share larger than the whole EMQ_MAX_WAITERS (10,000).
		"EMQ_MAX_WAITERS_PER_KEY": "10001",
		// No EMQ_REDIS_URL: the embedded store has no replicas to wait for.
		"EMQ_ACK_REPLICAS": "1",
		"EMQ_ACK_TIMEOUT":  "0s",
	}
	for name, value := range cases {
		_, err := loadConfig(func(k string) string {
			if k == name {
				return value
			}
			return ""
		})
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=%q: got %v, want an error naming %s", name, value, err, name)
		}
	}
	c, err := loadConfig(func(string) string { return "" })
	if err != nil || c.Addr != "127.0.0.1:8080" || c.Prefix != "emq" || c.SweepInterval != 5*time.Second || c.MaxStalled != 2 || !c.AutoPipeline ||
		c.PushAllow.On() || c.MaxQueues != 100_000 || c.MetricsMaxQueues != 1000 {
		t.Fatalf("defaults %+v (%v), want 127.0.0.1:8080, emq, 5s, 2, autopipelining on, push off, 100,000 queues, 1,000 in the metrics", c, err)
	}
}

// TestLoadConfigWaiterShare: EMQ_MAX_WAITERS_PER_KEY defaults to three
// quarters of EMQ_MAX_WAITERS, may equal it, and may not exceed it;
// EMQ_MAX_STREAMS defaults to 100.
func TestLoadConfigAckReplicas(t *testing.T) {
	t.Parallel()
	load := func(vars map[string]string) (config, error) {
		return loadConfig(func(k string) string { return vars[k] })
	}
	c, err := load(map[string]string{"EMQ_REDIS_URL": "redis://127.0.0.1:1"})
	if err != nil || c.AckReplicas != 0 || c.AckTimeout != time.Second {
		t.Errorf("defaults: %d replicas, %v (%v); want 0, 1s", c.AckReplicas, c.AckTimeout, err)
	}
	c, err = load(map[string]string{"EMQ_REDIS_URL": "redis://127.0.0.1:1", "EMQ_ACK_REPLICAS": "2", "EMQ_ACK_TIMEOUT": "250ms"})
	if err != nil || c.AckReplicas != 2 || c.AckTimeout != 250*time.Millisecond {
		t.Errorf("got %d replicas, %v (%v); want 2, 250ms", c.AckReplicas, c.AckTimeout, err)
	}
	for _, bad := range []map[string]string{
		{"EMQ_REDIS_URL": "redis://127.0.0.1:1", "EMQ_ACK_REPLICAS": "-1"},
		{"EMQ_REDIS_URL": "redis://127.0.0.1:1", "EMQ_ACK_REPLICAS": "one"},
		{"EMQ_REDIS_URL": "redis://127.0.0.1:1", "EMQ_ACK_TIMEOUT": "500us"},
		{"EMQ_REDIS_URL": "redis://127.0.0.1:1", "EMQ_ACK_TIMEOUT": "26s"},
		{"EMQ_ACK_REPLICAS": "1"},
	} {
		if _, err := load(bad); err == nil || !strings.Contains(err.Error(), "EMQ_ACK_") {
			t.Errorf("%v: got %v, want an error naming the setting", bad, err)
		}
	}
	// A read timeout shorter than the wait is made long enough for it.
	if got := readTimeout(0, config{AckReplicas: 1, AckTimeout: 5 * time.Second}); got != 6*time.Second {
		t.Errorf("read timeout %v under a 5 s wait, want 6s", got)
	}
	if got := readTimeout(0, config{AckTimeout: 5 * time.Second}); got != 0 {
		t.Errorf("read timeout %v without EMQ_ACK_REPLICAS, want go-redis's default (0)", got)
	}
}

func TestLoadConfigWaiterShare(t *testing.T) {
	t.Parallel()
	load := func(vars map[string]string) (config, error) {
		return loadConfig(func(k string) string { return vars[k] })
	}
	for _, tc := range []struct {
		waiters, share string
		want           int
	}{
		{"", "", 7500},
		{"400", "", 300},
		{"1", "", 1},
		{"400", "400", 400},
		{"400", "10", 10},
	} {
		c, err := load(map[string]string{"EMQ_MAX_WAITERS": tc.waiters, "EMQ_MAX_WAITERS_PER_KEY": tc.share})
		if err != nil || c.MaxWaitersPerKey != tc.want {
			t.Errorf("EMQ_MAX_WAITERS=%q EMQ_MAX_WAITERS_PER_KEY=%q: share %d (%v), want %d", tc.waiters, tc.share, c.MaxWaitersPerKey, err, tc.want)
		}
	}
	_, err := load(map[string]string{"EMQ_MAX_WAITERS": "400", "EMQ_MAX_WAITERS_PER_KEY": "401"})
	if err == nil || !strings.Contains(err.Error(), "EMQ_MAX_WAITERS_PER_KEY") {
		t.Errorf("a share of 401 of 400 waiters: %v, want an error naming EMQ_MAX_WAITERS_PER_KEY", err)
	}
	c, err := load(nil)
	if err != nil || c.MaxStreams != 100 {
		t.Errorf("EMQ_MAX_STREAMS unset: %d (%v), want 100", c.MaxStreams, err)
	}
	if c, err = load(map[string]string{"EMQ_MAX_STREAMS": "3"}); err != nil || c.MaxStreams != 3 {
		t.Errorf("EMQ_MAX_STREAMS=3: %d (%v), want 3", c.MaxStreams, err)
	}
}

// TestWorkerPlaneAutopipelining: the worker plane's scripts go through
// go-redis's autopipeliner unless EMQ_REDIS_AUTOPIPELINE=off, and the
// service works either way.
func TestWorkerPlaneAutopipelining(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Addr(), MaxRetries: -1})
	defer rdb.Close()
	log := slog.New(slog.DiscardHandler)
	if _, ok := workerClient(config{AutoPipeline: true}, rdb, log).(*redis.AutoPipeliner); !ok {
		t.Error("with autopipelining on, the worker plane does not go through an AutoPipeliner")
	}
	if got := workerClient(config{AutoPipeline: false}, rdb, log); got != rdb {
		t.Errorf("with autopipelining off, the worker plane goes through %T, want the client", got)
	}
	for _, setting := range []string{"on", "off"} {
		t.Run(setting, func(t *testing.T) {
			t.Parallel()
			base, _, stop := startService(t, map[string]string{
				"EMQ_REDIS_URL": "redis://" + redistest.Addr(), "EMQ_REDIS_AUTOPIPELINE": setting})
			workerLoop(t, base)
			if err := stop(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestSlowHeadersAreCutOff opens a connection that trickles a request's
// headers and never ends them: the server must close it after
// EMQ_HEADER_TIMEOUT rather than hold it forever.
func TestSlowHeadersAreCutOff(t *testing.T) {
	t.Parallel()
	base, _, stop := startService(t, map[string]string{
		"EMQ_REDIS_URL": "redis://" + redistest.Addr(), "EMQ_HEADER_TIMEOUT": "200ms"})
	defer stop()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n")); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	_, err = io.ReadAll(conn) // ends when the server closes the connection
	if err != nil || time.Since(start) > 4*time.Second {
		t.Fatalf("the connection was still open after %v (%v), want it closed after the header timeout", time.Since(start), err)
	}
}
