// Package servicetest builds the service (cmd/api) and runs it as a
// process on a loopback port of its own, for tests that talk to the real
// service over HTTP: the Go client's, the example workers'. It also has
// FlakyProxy, which stands in front of a service and answers chosen
// requests itself (a 503, a dropped connection, a hang).
//
// A package builds the binary once in TestMain and starts services from
// it:
//
//	var bin string
//
//	func TestMain(m *testing.M) {
//		dir, _ := os.MkdirTemp("", "mytest-")
//		var err error
//		if bin, err = servicetest.Build(dir); err != nil {
//			fmt.Fprintln(os.Stderr, err)
//			os.Exit(1)
//		}
//		code := redistest.Run(m)
//		os.RemoveAll(dir)
//		os.Exit(code)
//	}
//
//	func TestSomething(t *testing.T) {
//		svc := servicetest.Start(t, bin, "EMQ_REDIS_URL=redis://"+redistest.Addr()+"/0", "EMQ_PREFIX=mytest")
//		resp, err := http.Get(svc.URL() + "/healthz")
//		...
//	}
//
// The service listens on 127.0.0.1:0 and Start reads the port the kernel
// gave it from the service's "Listening" log line, so that two services
// never race for a port.
package servicetest

import (
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/redistest"
)

// startTimeout bounds how long Launch waits for the service to answer.
const startTimeout = 15 * time.Second

// Build builds cmd/api into dir and returns the binary's path. Call it
// once, from TestMain: a build takes seconds.
func Build(dir string) (string, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	bin := filepath.Join(dir, "emq")
	out, err := exec.Command(goBin, "build", "-o", bin, "github.com/echo-mq/echo_mq/cmd/api").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("servicetest: go build ./cmd/api: %w\n%s", err, out)
	}
	return bin, nil
}

// Main runs a package's tests against the service: it builds cmd/api into
// a temporary directory and sets *bin to the binary, runs m under
// redistest.Run (a real redis-server for the package), and removes the
// directory. Call it from TestMain: os.Exit(servicetest.Main(m, &bin)).
func Main(m *testing.M, bin *string) int {
	dir, err := os.MkdirTemp("", "emq-service-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if *bin, err = Build(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return redistest.Run(m)
}

// Service is the service binary running as a process.
type Service struct {
	addr string
	cmd  *exec.Cmd
	log  *logBuffer
	done chan struct{} // closed when the process has exited

	stopOnce sync.Once
}

// Start runs the service as Launch does and stops it when the test ends.
// It fails the test if the service does not start.
func Start(tb testing.TB, bin string, env ...string) *Service {
	tb.Helper()
	s, err := Launch(bin, env...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Stop)
	return s
}

// Launch runs bin and waits until it answers /healthz. The process gets
// PATH, EMQ_ADDR=127.0.0.1:0 and EMQ_LOG_LEVEL=info, then env, whose
// variables win ("EMQ_REDIS_URL=redis://...", "EMQ_SWEEP_INTERVAL=200ms");
// nothing else of the test's environment, so that a developer's EMQ_*
// variables do not leak in. With no EMQ_REDIS_URL the service runs its
// embedded in-memory store.
//
// Launch is for a service that outlives one test (shared by a package's
// tests, or started by an Example); the caller must Stop it. In a test
// use Start.
func Launch(bin string, env ...string) (*Service, error) {
	if err := checkLogLevel(env); err != nil {
		return nil, err
	}
	s := &Service{log: &logBuffer{}, done: make(chan struct{})}
	s.cmd = exec.Command(bin)
	s.cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "EMQ_ADDR=127.0.0.1:0", "EMQ_LOG_LEVEL=info"}, env...)
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	s.cmd.SysProcAttr = dieWithParent()
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("servicetest: %w", err)
	}
	go func() { s.cmd.Wait(); close(s.done) }()
	if err := s.waitReady(); err != nil {
		s.Stop()
		return nil, fmt.Errorf("servicetest: %w\n%s", err, s.Log())
	}
	return s, nil
}

// checkLogLevel refuses an EMQ_LOG_LEVEL above info: it would hide the
// "Listening" line that Launch reads the service's address from.
func checkLogLevel(env []string) error {
	for _, kv := range env {
		v, ok := strings.CutPrefix(kv, "EMQ_LOG_LEVEL=")
		if !ok {
			continue
		}
		var level slog.Level
		if err := level.UnmarshalText([]byte(v)); err == nil && level > slog.LevelInfo {
			return fmt.Errorf("servicetest: EMQ_LOG_LEVEL=%s would hide the service's \"Listening\" line, "+
				"which tells its port; leave it at info or debug", v)
		}
	}
	return nil
}

// listeningRE finds the address in the service's "Listening" log line.
var listeningRE = regexp.MustCompile(`(?m)\bmsg=Listening addr=(\S+)`)

// waitReady waits for the "Listening" line, then for /healthz to answer
// 200.
func (s *Service) waitReady() error {
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		if s.addr == "" {
			if m := listeningRE.FindStringSubmatch(s.Log()); m != nil {
				s.addr = m[1]
			}
		}
		if s.addr != "" && healthy(s.URL()) {
			return nil
		}
		select {
		case <-s.done:
			return fmt.Errorf("the service exited before answering: %v", s.cmd.ProcessState)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if s.addr == "" {
		return fmt.Errorf("the service logged no \"Listening\" line within %v", startTimeout)
	}
	return fmt.Errorf("the service on %s did not answer /healthz within %v", s.addr, startTimeout)
}

func healthy(base string) bool {
	resp, err := http.Get(base + "/healthz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// URL returns the service's base URL, such as "http://127.0.0.1:41234".
func (s *Service) URL() string { return "http://" + s.addr }

// Addr returns the host:port the service listens on. Pass
// "EMQ_ADDR="+s.Addr() to start a service again on the same port.
func (s *Service) Addr() string { return s.addr }

// Log returns what the service has written to stdout and stderr so far.
func (s *Service) Log() string { return s.log.String() }

// Stop kills the service (SIGKILL, as a crash would) and waits until it
// has exited. It may be called more than once.
func (s *Service) Stop() {
	s.stopOnce.Do(func() {
		_ = s.cmd.Process.Kill() // fails only when it has exited already
		<-s.done
	})
}

// Exited returns a channel closed when the service's process has exited,
// stopped or not.
func (s *Service) Exited() <-chan struct{} { return s.done }

// logBuffer keeps the service's output; it is safe for concurrent use.
type logBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	return len(p), nil
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
