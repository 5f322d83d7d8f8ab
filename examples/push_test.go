package examples

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/redistest"
	"github.com/echo-mq/echo_mq/internal/servicetest"
)

// pushSecret is the receivers' Standard Webhooks secret in the test.
const pushSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwNDE0NjM3MDk1NzI="

// pushReceiver is one receiver of examples/push and how to run it.
type pushReceiver struct {
	name  string
	tools []string
	build func(t *testing.T) []string // the command that runs it, from its folder
}

var pushReceivers = []pushReceiver{
	{"python", []string{"python3"}, func(*testing.T) []string { return []string{"python3", "receiver.py"} }},
	{"node", []string{"node", "npm"}, func(t *testing.T) []string {
		if err := runIn("push/node", 5*time.Minute, "npm", "ci"); err != nil {
			t.Fatal(err)
		}
		return []string{"node", "receiver.mjs"}
	}},
	{"go", []string{"go"}, func(t *testing.T) []string {
		bin := filepath.Join(t.TempDir(), "receiver")
		if err := runIn(".", 5*time.Minute, "go", "build", "-o", bin, "./push/go"); err != nil {
			t.Fatal(err)
		}
		return []string{bin}
	}},
}

// TestPushReceivers runs each receiver of examples/push as a queue's push
// target (docs/push.md): a plain job is completed with the receiver's
// answer as its result; a long one is answered 202 and completed later by
// the receiver itself with its token; a failing one fails its attempt
// with the receiver's status; a delivery with a forged signature is
// refused (401) by the receiver's Standard Webhooks check.
func TestPushReceivers(t *testing.T) {
	var wg sync.WaitGroup
	for _, r := range pushReceivers {
		wg.Go(func() { t.Run(r.name, func(t *testing.T) { runReceiver(t, r) }) })
	}
	wg.Wait()
}

func runReceiver(t *testing.T, r pushReceiver) {
	language{name: r.name, tools: r.tools}.prepare(t)
	command := r.build(t)
	svc := service{servicetest.Start(t, serviceBin, "EMQ_REDIS_URL=redis://"+redistest.Addr()+"/0",
		"EMQ_PREFIX=examples-push-"+r.name, "EMQ_SWEEP_INTERVAL=1s", "EMQ_PUSH_ALLOW=127.0.0.1")}
	addr := startReceiver(t, r.name, command, svc.URL())

	forged, err := call("POST", "http://"+addr+"/", `{"id":"x","queue":"q","token":1,"payload":{}}`)
	if err != nil || forged.status != http.StatusUnauthorized {
		t.Fatalf("a delivery without a valid signature: %v %v, want 401", forged, err)
	}

	const queue = "receipts"
	svc.enqueue(t, queue, `{"id":"plain","payload":{"order":1}}`)
	svc.enqueue(t, queue, `{"id":"long","payload":{"long":true,"ms":300}}`)
	svc.enqueue(t, queue, `{"id":"fail","payload":{"fail":true},"max_attempts":1}`)
	svc.mustCall(t, "PUT", "/queues/"+queue+"/push",
		`{"url":"http://`+addr+`/","timeout_ms":5000,"concurrency":4,"secret":"`+pushSecret+`"}`, 200, nil)

	if j := svc.waitState(t, queue, "plain", "completed", 20*time.Second); string(j.Result) != `{"handled":"plain"}` {
		t.Errorf("plain: result %s", j.Result)
	}
	if j := svc.waitState(t, queue, "long", "completed", 20*time.Second); string(j.Result) != `{"handled":"long","long":true}` {
		t.Errorf("long: result %s", j.Result)
	}
	if j := svc.waitState(t, queue, "fail", "dead", 20*time.Second); !strings.HasPrefix(j.LastError, "HTTP 500: ") ||
		!strings.Contains(j.LastError, "failed on purpose") {
		t.Errorf("fail: last_error %q", j.LastError)
	}
}

// startReceiver runs a receiver on a free port and returns its address
// once it says it listens; it is killed when the test ends.
func startReceiver(t *testing.T, dir string, command []string, emqURL string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, command[0], command[1:]...)
	cmd.Dir = filepath.Join("push", dir)
	cmd.Env = exampleEnv("EMQ_URL="+emqURL, "EMQ_PUSH_SECRET="+pushSecret, fmt.Sprintf("PORT=%d", port))
	// Both streams through one pipe: Go's log writes to stderr.
	out, in := io.Pipe()
	cmd.Stdout, cmd.Stderr = in, in
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var log strings.Builder
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		in.Close()
		if t.Failed() {
			mu.Lock()
			t.Logf("%s receiver's log:\n%s", dir, log.String())
			mu.Unlock()
		}
	})
	listening := make(chan struct{})
	go func() {
		lines := bufio.NewScanner(out)
		for said := false; lines.Scan(); {
			mu.Lock()
			log.WriteString(lines.Text() + "\n")
			mu.Unlock()
			if !said && strings.Contains(lines.Text(), "listening") {
				said = true
				close(listening)
			}
		}
	}()
	select {
	case <-listening:
	case <-time.After(30 * time.Second):
		t.Fatalf("the %s receiver did not say it listens within 30 s", dir)
	}
	return fmt.Sprintf("127.0.0.1:%d", port)
}
