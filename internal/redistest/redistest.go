// Package redistest starts real redis-server processes on free loopback
// ports, so that tests never touch a shared or developer-owned Redis.
package redistest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	startTimeout = 10 * time.Second
	stopTimeout  = 5 * time.Second
	startTries   = 3
)

var (
	shared  *Server
	counter atomic.Uint64
)

// Server is one redis-server process bound to 127.0.0.1. It is not safe for
// concurrent use.
type Server struct {
	// Addr is the server's host:port.
	Addr string

	bin, dir string
	conf     string // a config file read before the arguments, or ""
	port     int
	args     []string
	cmd      *exec.Cmd
	done     chan struct{} // closed when the process has exited
}

// Run starts the redis-server shared by a test binary, runs the tests and
// stops the server. Call it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(redistest.Run(m)) }
//
// It returns 1 without running any test if redis-server is missing or does
// not start: tests fail, never skip, without a real Redis.
func Run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "redistest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "redistest:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	s, err := start(dir, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "redistest:", err)
		return 1
	}
	defer s.Stop()
	shared, sharedDir = s, dir
	defer func() {
		if sharedCluster != nil {
			sharedCluster.Stop()
		}
	}()
	return m.Run()
}

// Addr returns the host:port of the server started by Run. It panics if Run
// was not called, rather than let a client fall back to localhost:6379.
func Addr() string {
	if shared == nil {
		panic("redistest: Run was not called from TestMain")
	}
	return shared.Addr
}

// Client returns a new client of the server started by Run, closed when the
// test ends. It fails the test if Run was not called.
func Client(tb testing.TB) redis.UniversalClient {
	tb.Helper()
	if shared == nil {
		tb.Fatal("redistest: Run was not called from TestMain")
	}
	c := redis.NewClient(&redis.Options{Addr: shared.Addr})
	tb.Cleanup(func() { c.Close() })
	return c
}

// Queue returns a queue name unique to this call: tb.Name() with every
// character outside [A-Za-z0-9._-] turned into '-', truncated so that the
// name with its counter suffix stays within 100 characters.
func Queue(tb testing.TB) string {
	tb.Helper()
	suffix := "-" + strconv.FormatUint(counter.Add(1), 10)
	name := []byte(tb.Name())
	for i, c := range name {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '.' || c == '_' || c == '-'
		if !ok {
			name[i] = '-'
		}
	}
	if limit := 100 - len(suffix); len(name) > limit {
		name = name[:limit]
	}
	return string(name) + suffix
}

// StartServer starts a redis-server of the test's own, for tests that
// restart, flush or kill Redis. Extra arguments are passed to redis-server
// after the defaults. The server is stopped when the test ends.
func StartServer(tb testing.TB, extraArgs ...string) *Server {
	tb.Helper()
	s, err := start(tb.TempDir(), extraArgs)
	if err != nil {
		tb.Fatal("redistest: ", err)
	}
	tb.Cleanup(s.Stop)
	return s
}

// Stop stops the server: SIGTERM, then SIGKILL if it has not exited within
// 5 seconds. Stopping a stopped server does nothing.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(stopTimeout):
		s.cmd.Process.Kill()
		<-s.done
	}
	s.cmd = nil
}

// Restart stops the server and starts it again on the same port, with the
// same directory and arguments. It fails the test if the server does not
// come back.
func (s *Server) Restart(tb testing.TB) {
	tb.Helper()
	s.Stop()
	if err := s.Start(); err != nil {
		tb.Fatal("redistest: restart: ", err)
	}
}

// Start starts a stopped server again on the same port, with the same
// directory and arguments, and waits until it answers. It is for a test
// that keeps Redis down for a while (Restart is Stop, then Start); it must
// not run at the same time as Stop.
func (s *Server) Start() error {
	var err error
	for range startTries {
		if err = s.launch(); !errors.Is(err, errPortTaken) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

var errPortTaken = errors.New("port taken")

// start launches a server in dir on a free port, trying a new port when
// another process takes the one picked before redis-server binds it.
func start(dir string, extraArgs []string) (*Server, error) {
	return startConf(dir, "", extraArgs)
}

// startConf is start with a config file, which redis-server reads before
// the arguments: a sentinel needs one, and rewrites it.
func startConf(dir, conf string, extraArgs []string) (*Server, error) {
	bin := cmp.Or(os.Getenv("EMQ_REDIS_SERVER"), "redis-server")
	path, err := exec.LookPath(bin)
	if err != nil {
		return nil, fmt.Errorf("%s not found: apt-get install -y redis-server", bin)
	}
	s := &Server{bin: path, dir: dir, conf: conf, args: extraArgs}
	for range startTries {
		if s.port, err = freePort(); err != nil {
			return nil, err
		}
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
		if err = s.launch(); !errors.Is(err, errPortTaken) {
			break
		}
	}
	return s, err
}

// launch starts the process on s.port and waits until it answers.
func (s *Server) launch() error {
	logPath := filepath.Join(s.dir, "redis.log")
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	args := []string{"--bind", "127.0.0.1", "--port", strconv.Itoa(s.port),
		"--save", "", "--appendonly", "no", "--dir", s.dir}
	if s.conf != "" {
		args = append([]string{s.conf}, args...)
	}
	args = append(args, s.args...)
	cmd := exec.Command(s.bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = dieWithParent()
	if err := cmd.Start(); err != nil {
		return err
	}
	s.cmd, s.done = cmd, make(chan struct{})
	go func(done chan struct{}) { cmd.Wait(); close(done) }(s.done)
	err = s.waitReady()
	if err == nil {
		return nil
	}
	s.Stop()
	tail := logTail(logPath, 15)
	if strings.Contains(tail, "Address already in use") {
		err = errPortTaken
	}
	return fmt.Errorf("redis-server on %s did not start: %w\n--- %s (tail)\n%s", s.Addr, err, logPath, tail)
}

// waitReady polls until the server answers PING, then checks with INFO that
// it is our process and not another one that took the port.
func (s *Server) waitReady() error {
	deadline := time.Now().Add(startTimeout)
	for !ping(s.Addr) {
		select {
		case <-s.done:
			return errors.New("process exited")
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no answer to PING within %s", startTimeout)
		}
	}
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer c.Close()
	info, err := c.Info(context.Background(), "server").Result()
	if err != nil {
		return err
	}
	if !strings.Contains(info, "process_id:"+strconv.Itoa(s.cmd.Process.Pid)+"\r\n") {
		return errPortTaken
	}
	return nil
}

// ping reports whether addr answers a raw PING. It does not use go-redis,
// whose pool retries and logs every refused dial.
func ping(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, 250*time.Millisecond)
	if err != nil {
		return false
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(500 * time.Millisecond))
	buf := make([]byte, len("+PONG\r\n"))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	_, err = io.ReadFull(conn, buf)
	return err == nil && string(buf) == "+PONG\r\n"
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func logTail(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// ScriptMicros is the time the Redis of rdb spent in script calls (FCALL,
// EVALSHA, EVAL) since its last CONFIG RESETSTAT, in µs, from INFO
// commandstats: a benchmark's Redis time, without the round trips.
func ScriptMicros(tb testing.TB, rdb redis.UniversalClient) float64 {
	tb.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		tb.Fatal(err)
	}
	total := 0.0
	for _, line := range strings.Split(info, "\n") {
		name, stats, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || (name != "cmdstat_fcall" && name != "cmdstat_evalsha" && name != "cmdstat_eval") {
			continue
		}
		for _, kv := range strings.Split(stats, ",") {
			if v, ok := strings.CutPrefix(kv, "usec="); ok {
				n, _ := strconv.ParseFloat(v, 64)
				total += n
			}
		}
	}
	return total
}
