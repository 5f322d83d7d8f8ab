package main

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/redistest"
)

// TestUnauthenticatedBodiesHoldLittleMemory runs the security review's
// attack on the service binary: 16 requests at once, each a 16 MB body
// with a timestamp of now and a well-formed signature that no key made. A
// signature is checked over its body, so each body must be read; bodies
// being checked share one budget (EMQ_MAX_BODY_BYTES in all), so the
// service's peak RSS must stay within 64 MB of its idle RSS, whatever
// the number of such requests. Memory, unlike time, does not depend on how
// busy the machine is.
func TestUnauthenticatedBodiesHoldLittleMemory(t *testing.T) {
	t.Parallel()
	const attackers, size, allowed = 16, 16_000_000, 64 << 20
	bin := buildService(t)
	server := redistest.StartServer(t)
	addr := fmt.Sprintf("127.0.0.1:%d", loopbackPort(t))
	base := "http://" + addr
	env := []string{"EMQ_ADDR=" + addr, "EMQ_REDIS_URL=redis://" + server.Addr, "EMQ_PREFIX=signedmem",
		"EMQ_API_KEYS=worker:worker-key-0123456789", "EMQ_LOG_LEVEL=warn"}
	svc := startBinary(t, bin, env, base)
	idle := procStatusKB(t, svc.cmd.Process.Pid, "VmRSS")

	body := bytes.Repeat([]byte("x"), size)
	statuses := make(chan int, attackers)
	var wg sync.WaitGroup
	for range attackers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses <- postUnsigned(t, base+"/queues/x/jobs", body)
		}()
	}
	wg.Wait()
	close(statuses)
	counted := map[int]int{}
	for status := range statuses {
		counted[status]++
	}
	peak := procStatusKB(t, svc.cmd.Process.Pid, "VmHWM")
	t.Logf("idle RSS %d MB, peak RSS %d MB (+%d MB) after %d unauthenticated %d MB bodies; answers %v",
		idle>>10, peak>>10, (peak-idle)>>10, attackers, size/1_000_000, counted)
	for status := range counted {
		if status != http.StatusUnauthorized && status != http.StatusServiceUnavailable {
			t.Errorf("answers %v: want only 401 (checked, refused) and 503 (no room to check)", counted)
		}
	}
	if counted[http.StatusUnauthorized] == 0 {
		t.Errorf("answers %v: no body was checked at all", counted)
	}
	if (peak-idle)<<10 > allowed {
		t.Errorf("peak RSS grew %d MB over idle, want at most %d MB", (peak-idle)>>10, allowed>>20)
	}
}

// postUnsigned posts body to url with a timestamp of now and a signature
// of the right shape that no key made, and answers the status (0 when the
// connection broke).
func postUnsigned(t *testing.T, url string, body []byte) int {
	req, err := http.NewRequest("POST", url, bytes.NewReader(body))
	if err != nil {
		t.Error(err)
		return 0
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-EMQ-Timestamp", strconv.FormatInt(time.Now().Unix(), 10))
	req.Header.Set("X-EMQ-Signature", "sha256="+strings.Repeat("0", 64))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Logf("post: %v", err)
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// procStatusKB reads a field of /proc/<pid>/status, in kB (VmRSS: the
// resident set now; VmHWM: its peak).
func procStatusKB(t *testing.T, pid int, field string) int {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return kb
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}
