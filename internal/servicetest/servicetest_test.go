package servicetest_test

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/echo-mq/echo_mq/internal/servicetest"
)

// bin is the service binary TestMain builds. These tests run it on its
// embedded store: what they check is how it is started and stopped.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "servicetest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := 1
	if bin, err = servicetest.Build(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		code = m.Run()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

func TestServicesStartedTogetherGetPortsOfTheirOwn(t *testing.T) {
	t.Parallel()
	services := make([]*servicetest.Service, 4)
	var wg sync.WaitGroup
	for i := range services {
		wg.Go(func() { services[i] = servicetest.Start(t, bin) })
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, s := range services {
		if s == nil {
			t.FailNow() // Start failed the test already
		}
		if !strings.HasPrefix(s.URL(), "http://127.0.0.1:") || s.URL() != "http://"+s.Addr() || seen[s.Addr()] {
			t.Fatalf("a service on %q (URL %q); want a loopback port of its own", s.Addr(), s.URL())
		}
		seen[s.Addr()] = true
		if status := get(t, s.URL()+"/healthz"); status != http.StatusOK {
			t.Fatalf("/healthz of %s answered %d", s.Addr(), status)
		}
		if !strings.Contains(s.Log(), "msg=Listening addr="+s.Addr()) {
			t.Fatalf("the log of %s lacks its Listening line:\n%s", s.Addr(), s.Log())
		}
	}
}

func TestEnvReachesTheService(t *testing.T) {
	t.Parallel()
	s := servicetest.Start(t, bin, "EMQ_PREFIX=servicetest-env")
	if !strings.Contains(s.Log(), "prefix=servicetest-env") {
		t.Fatalf("the service did not run with EMQ_PREFIX=servicetest-env:\n%s", s.Log())
	}
}

func TestStopKillsTheService(t *testing.T) {
	t.Parallel()
	s, err := servicetest.Launch(bin)
	if err != nil {
		t.Fatal(err)
	}
	s.Stop()
	select {
	case <-s.Exited():
	default:
		t.Fatal("Stop returned before the process exited")
	}
	if _, err := http.Get(s.URL() + "/healthz"); err == nil {
		t.Fatalf("the service on %s still answers after Stop", s.Addr())
	}
	s.Stop() // a second Stop is harmless
}

func TestLaunchReportsAServiceThatDoesNotStart(t *testing.T) {
	t.Parallel()
	_, err := servicetest.Launch(bin, "EMQ_PREFIX=not valid!")
	if err == nil || !strings.Contains(err.Error(), "exited before answering") || !strings.Contains(err.Error(), "EMQ_PREFIX") {
		t.Fatalf("Launch with a bad prefix: %v; want the exit and the service's own complaint", err)
	}
}

func TestLaunchRefusesALogLevelThatHidesThePort(t *testing.T) {
	t.Parallel()
	if _, err := servicetest.Launch(bin, "EMQ_LOG_LEVEL=warn"); err == nil || !strings.Contains(err.Error(), "EMQ_LOG_LEVEL=warn") {
		t.Fatalf("Launch with EMQ_LOG_LEVEL=warn: %v; want it refused", err)
	}
	s := servicetest.Start(t, bin, "EMQ_LOG_LEVEL=debug")
	if status := get(t, s.URL()+"/healthz"); status != http.StatusOK {
		t.Fatalf("/healthz with EMQ_LOG_LEVEL=debug answered %d", status)
	}
}

// get sends a GET and returns the status.
func get(tb testing.TB, url string) int {
	tb.Helper()
	resp, err := http.Get(url)
	if err != nil {
		tb.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
