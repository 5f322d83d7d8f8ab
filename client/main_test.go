package client_test

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/echo-mq/echo_mq/client"
	"github.com/echo-mq/echo_mq/internal/redistest"
	"github.com/echo-mq/echo_mq/internal/servicetest"
)

// The tests and examples run against the real service (cmd/api, built
// once into a temporary directory) on the real redis-server that
// redistest starts. The tests share one service; each example starts its
// own, with a key prefix of its own, so that its output is the same on
// every run (also with -count=N).
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "emq-client-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := 1
	if serviceBin, err = servicetest.Build(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		code = redistest.Run(m)
	}
	launched.stopAll()
	os.RemoveAll(dir)
	os.Exit(code)
}

// serviceBin is the service binary TestMain builds.
var serviceBin string

// starts counts the services started, for their key prefixes.
var starts atomic.Int64

// serviceEnv is the environment of a service of the tests: redistest's
// Redis, a key prefix of its own, and a reaper that sweeps every 200 ms,
// so that a lapsed lease is taken back soon. env is added to it.
func serviceEnv(env ...string) []string {
	prefix := "clienttest" + strconv.FormatInt(starts.Add(1), 10)
	return append([]string{"EMQ_REDIS_URL=redis://" + redistest.Addr() + "/0", "EMQ_PREFIX=" + prefix,
		"EMQ_SWEEP_INTERVAL=200ms"}, env...)
}

// launched keeps the services that outlive a test (the shared one, the
// examples'), for TestMain to stop.
var launched serviceList

type serviceList struct {
	mu       sync.Mutex
	services []*servicetest.Service
}

// launch starts a service that TestMain stops.
func (l *serviceList) launch() (*servicetest.Service, error) {
	s, err := servicetest.Launch(serviceBin, serviceEnv()...)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.services = append(l.services, s)
	return s, nil
}

func (l *serviceList) stopAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.services {
		s.Stop()
	}
}

// shared is the service the tests share, started on first use.
var shared = sync.OnceValues(launched.launch)

// serviceURL returns the base URL of the service the tests share.
func serviceURL(tb testing.TB) string {
	tb.Helper()
	s, err := shared()
	if err != nil {
		tb.Fatal(err)
	}
	return s.URL()
}

// newClient returns a client of the shared service.
func newClient(tb testing.TB, opts ...client.Option) *client.Client {
	tb.Helper()
	return mustNew(tb, serviceURL(tb), opts...)
}

// mustNew returns client.New(baseURL, opts...), failing the test on an
// error.
func mustNew(tb testing.TB, baseURL string, opts ...client.Option) *client.Client {
	tb.Helper()
	c, err := client.New(baseURL, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// exampleURL starts a service of the example's own and returns its base
// URL, such as "http://127.0.0.1:8080".
func exampleURL() string {
	s, err := launched.launch()
	if err != nil {
		panic(err)
	}
	return s.URL()
}
