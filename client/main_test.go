package client_test

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/client"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

// The tests and examples run against the real service (cmd/api, built
// once into a temporary directory) on the real redis-server that
// redistest starts. The tests share one service; each example starts its
// own, with a key prefix of its own, so that its output is the same on
// every run (also with -count=N).
func TestMain(m *testing.M) {
	if _, err := services.binary(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := redistest.Run(m)
	services.stopAll()
	os.Exit(code)
}

// serviceSet builds the service binary and keeps the processes started
// from it.
type serviceSet struct {
	buildOnce sync.Once
	dir, bin  string
	buildErr  error

	sharedOnce sync.Once
	sharedURL  string
	sharedErr  error

	mu     sync.Mutex
	procs  []*exec.Cmd
	starts int // services started, for their key prefixes
}

var services serviceSet

// serviceURL returns the base URL of the service the tests share, started
// on first use.
func serviceURL(tb testing.TB) string {
	tb.Helper()
	services.sharedOnce.Do(func() {
		services.sharedURL, services.sharedErr = services.start()
	})
	if services.sharedErr != nil {
		tb.Fatal(services.sharedErr)
	}
	return services.sharedURL
}

// newClient returns a client of the shared service.
func newClient(tb testing.TB, opts ...client.Option) *client.Client {
	tb.Helper()
	return client.New(serviceURL(tb), opts...)
}

// exampleURL starts a service of the example's own and returns its base
// URL, such as "http://127.0.0.1:8080".
func exampleURL() string {
	url, err := services.start()
	if err != nil {
		panic(err)
	}
	return url
}

// start starts the service binary on a free loopback port against
// redistest's Redis, with a key prefix of its own and env added to its
// environment, and waits until it answers /healthz. Its reaper sweeps
// every 200 ms, so that a lapsed lease is taken back soon.
func (s *serviceSet) start(env ...string) (string, error) {
	bin, err := s.binary()
	if err != nil {
		return "", err
	}
	port, err := freePort()
	if err != nil {
		return "", err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	logFile, err := os.CreateTemp(s.dir, "service-*.log")
	if err != nil {
		return "", err
	}
	defer logFile.Close()
	s.mu.Lock()
	s.starts++
	prefix := "clienttest" + strconv.Itoa(s.starts)
	s.mu.Unlock()
	cmd := exec.Command(bin)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"),
		"EMQ_ADDR=" + addr, "EMQ_REDIS_URL=redis://" + redistest.Addr() + "/0", "EMQ_PREFIX=" + prefix,
		"EMQ_SWEEP_INTERVAL=200ms", "EMQ_LOG_LEVEL=warn"}, env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = dieWithTest()
	if err := cmd.Start(); err != nil {
		return "", err
	}
	s.mu.Lock()
	s.procs = append(s.procs, cmd)
	s.mu.Unlock()
	base := "http://" + addr
	if err := waitHealthy(base); err != nil {
		log, _ := os.ReadFile(logFile.Name())
		return "", fmt.Errorf("the service on %s: %w\n%s", addr, err, log)
	}
	return base, nil
}

// binary builds cmd/api, once.
func (s *serviceSet) binary() (string, error) {
	s.buildOnce.Do(func() {
		if s.dir, s.buildErr = os.MkdirTemp("", "emq-client-test-"); s.buildErr != nil {
			return
		}
		s.bin = filepath.Join(s.dir, "emq")
		out, err := exec.Command("go", "build", "-o", s.bin, "github.com/echo-mq/echo_mq/cmd/api").CombinedOutput()
		if err != nil {
			s.buildErr = fmt.Errorf("go build ./cmd/api: %w\n%s", err, out)
		}
	})
	return s.bin, s.buildErr
}

// stopAll kills every service started and removes the binary.
func (s *serviceSet) stopAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, cmd := range s.procs {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	if s.dir != "" {
		os.RemoveAll(s.dir)
	}
}

func waitHealthy(base string) error {
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(base + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return errors.New("no answer to /healthz within 15 s")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
