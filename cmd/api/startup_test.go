package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestUnknownVariablesAreNamed: every EMQ_* name the service does not read
// is found, in any case, with the setting it most likely means when one is
// close; the settings, and variables not named EMQ_*, are not.
func TestUnknownVariablesAreNamed(t *testing.T) {
	t.Parallel()
	environ := []string{
		"PATH=/usr/bin", "OTEL_SERVICE_NAME=emq", "EMQ_REDIS_URL=redis://r:6379", "EMQ_PREFIX=p",
		"EMQ_REDIS=redis://r:6379",        // a word short
		"EMQ_API_KEY=admin:secret",        // a letter short
		"emq_log_level=debug",             // the case
		"EMQ_SWEEP_INTERAVL=1s",           // a typo
		"EMQ_WAITERS_PER_KEY=10",          // a word short, inside
		"EMQ_KEYS=admin:0123456789abcdef", // the last word only
		"EMQ_FROBNICATE=1",                // nothing like any
		"EMQ_=1",
	}
	got := unknownVariables(environ)
	want := []unknownVariable{
		{"EMQ_REDIS", "EMQ_REDIS_URL"},
		{"EMQ_API_KEY", "EMQ_API_KEYS"},
		{"emq_log_level", "EMQ_LOG_LEVEL"},
		{"EMQ_SWEEP_INTERAVL", "EMQ_SWEEP_INTERVAL"},
		{"EMQ_WAITERS_PER_KEY", "EMQ_MAX_WAITERS_PER_KEY"},
		{"EMQ_KEYS", "EMQ_API_KEYS"},
		{"EMQ_FROBNICATE", ""},
		{"EMQ_", ""},
	}
	if !slices.Equal(got, want) {
		t.Errorf("unknownVariables\n got %v\nwant %v", got, want)
	}
}

// TestVariablesAreTheDocumentedOnes: the variables loadConfig reads are
// the EMQ_* rows of docs/operating.md's configuration table, no more and
// no fewer, so that the unknown-variable warning and the docs agree.
func TestVariablesAreTheDocumentedOnes(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "operating.md"))
	if err != nil {
		t.Fatal(err)
	}
	var documented []string
	for _, m := range regexp.MustCompile("(?m)^\\| `(EMQ_[A-Z_]+)` \\|").FindAllStringSubmatch(string(raw), -1) {
		documented = append(documented, m[1])
	}
	slices.Sort(documented)
	if len(variables) < 20 || !slices.Equal(variables, documented) {
		t.Errorf("loadConfig reads\n%v\ndocs/operating.md documents\n%v", variables, documented)
	}
}

// TestRunWarnsOfUnknownVariables: a misspelt setting is named at start-up,
// with the one it likely means, and its value is not logged.
func TestRunWarnsOfUnknownVariables(t *testing.T) {
	t.Parallel()
	_, logs, stop := startService(t, map[string]string{"EMQ_REDIS": "redis://user:hunter2@r:6379", "EMQ_FROBNICATE": "1"})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`level=WARN msg="Unknown EMQ_ variable ignored: the service reads no such setting" variable=EMQ_REDIS did_you_mean=EMQ_REDIS_URL` + "\n",
		`level=WARN msg="Unknown EMQ_ variable ignored: the service reads no such setting" variable=EMQ_FROBNICATE` + "\n",
	} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("no line ending %q; log:\n%s", want, logs)
		}
	}
	if strings.Contains(logs.String(), "hunter2") {
		t.Errorf("the log shows an unknown variable's value:\n%s", logs)
	}
}

// logRecord is one record of the service's log (slog's text handler):
// key=value pairs, a value bare or a quoted Go string, time, level and msg
// first.
var logRecord = regexp.MustCompile(`^time=\S+ level=(DEBUG|INFO|WARN|ERROR) msg=(?:[^\s"=]+|"(?:[^"\\]|\\.)*")(?: [A-Za-z0-9_.]+=(?:[^\s"=]*|"(?:[^"\\]|\\.)*"))*$`)

// TestLogIsStructuredWhileRedisIsDown runs the binary against a port where
// no Redis listens: go-redis's own lines (a pool that cannot dial) come
// out as records of the service's log, stdout holds nothing but records,
// and stderr stays empty. The binary's environment also misspells
// EMQ_REDIS_URL, which it names.
func TestLogIsStructuredWhileRedisIsDown(t *testing.T) {
	t.Parallel()
	bin := buildService(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", loopbackPort(t))
	dir := t.TempDir()
	stdout, stderr := filepath.Join(dir, "stdout"), filepath.Join(dir, "stderr")
	cmd := startWithOutputs(t, bin, stdout, stderr, "EMQ_ADDR="+strings.TrimPrefix(base, "http://"),
		"EMQ_REDIS_URL=redis://127.0.0.1:"+strconv.Itoa(loopbackPort(t)), "EMQ_REDIS=redis://r:1")
	read := func(name string) string {
		b, _ := os.ReadFile(name)
		return string(b)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(read(stdout), `msg="Redis client"`) || !strings.Contains(read(stdout), "msg=Listening") {
		if time.Now().After(deadline) {
			t.Fatalf("no go-redis line in the log after 20 s\nstdout:\n%s\nstderr:\n%s", read(stdout), read(stderr))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if a, err := call(context.Background(), "GET", base+"/readyz", ""); err != nil || a.Status != 503 {
		t.Errorf("GET /readyz with Redis down: %v %v, want 503", a, err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("the service exited with %v after SIGTERM", err)
	}
	if s := read(stderr); s != "" {
		t.Errorf("stderr is not empty:\n%s", s)
	}
	lines := strings.Split(strings.TrimSuffix(read(stdout), "\n"), "\n")
	for _, line := range lines {
		if !logRecord.MatchString(line) {
			t.Errorf("not a log record: %s", line)
		}
	}
	for _, want := range []string{
		`level=WARN msg="Redis client" detail="connection pool: failed to dial`,
		"variable=EMQ_REDIS did_you_mean=EMQ_REDIS_URL\n",
		"msg=Stopped",
	} {
		if !strings.Contains(read(stdout), want) {
			t.Errorf("no %q in the log:\n%s", want, read(stdout))
		}
	}
}

// startWithOutputs starts bin with env (and PATH), its stdout and stderr
// written to files of their own; it is killed when the test ends.
func startWithOutputs(t *testing.T, bin, stdout, stderr string, env ...string) *exec.Cmd {
	t.Helper()
	out, err := os.Create(stdout)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	errs, err := os.Create(stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer errs.Close()
	cmd := exec.Command(bin)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	cmd.Stdout, cmd.Stderr = out, errs
	cmd.SysProcAttr = dieWithTest()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return cmd
}
