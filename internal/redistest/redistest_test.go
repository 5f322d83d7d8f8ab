package redistest

import (
	"context"
	"errors"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { os.Exit(Run(m)) }

func TestClient(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := Client(t)
	if Addr() == "127.0.0.1:6379" || !strings.HasPrefix(Addr(), "127.0.0.1:") {
		t.Fatalf("Addr() = %q, want a private loopback port", Addr())
	}
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		t.Fatal(err)
	}
	if want := "tcp_port:" + Addr()[len("127.0.0.1:"):]; !strings.Contains(info, want) {
		t.Fatalf("INFO server lacks %q", want)
	}
}

func TestQueue(t *testing.T) {
	t.Parallel()
	valid := regexp.MustCompile(`^[A-Za-z0-9._-]{1,100}$`)
	seen := map[string]bool{}
	for _, name := range []string{"plain", "a b/{c}:d\x00é", strings.Repeat("x", 300)} {
		t.Run(name, func(t *testing.T) {
			for range 2 {
				q := Queue(t)
				if !valid.MatchString(q) {
					t.Errorf("Queue() = %q, not a valid queue name", q)
				}
				if seen[q] {
					t.Errorf("Queue() = %q twice", q)
				}
				seen[q] = true
			}
		})
	}
}

func TestStartServerRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := StartServer(t, "--appendonly", "yes", "--appendfsync", "always")
	if s.Addr == Addr() {
		t.Fatalf("StartServer reused the shared server %s", s.Addr)
	}
	c := newClient(t, s.Addr)
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	s.Restart(t)
	got, err := c.Get(ctx, "k").Result()
	if err != nil || got != "v" {
		t.Fatalf("after Restart: Get = %q, %v, want \"v\" kept in the same dir", got, err)
	}
	s.Stop()
	if ping(s.Addr) {
		t.Fatal("PING after Stop answered")
	}
}

func TestLaunchPortTaken(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	s := &Server{bin: shared.bin, dir: t.TempDir()}
	s.port = l.Addr().(*net.TCPAddr).Port
	s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
	if err := s.launch(); !errors.Is(err, errPortTaken) {
		t.Fatalf("launch on a taken port: %v, want errPortTaken", err)
	}
}

func TestMissingBinary(t *testing.T) {
	t.Setenv("EMQ_REDIS_SERVER", "/nonexistent/redis-server")
	_, err := start(t.TempDir(), nil)
	if err == nil || !strings.Contains(err.Error(), "apt-get install -y redis-server") {
		t.Fatalf("start without redis-server: %v", err)
	}
}

func newClient(tb testing.TB, addr string) *redis.Client {
	tb.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	tb.Cleanup(func() { c.Close() })
	return c
}
