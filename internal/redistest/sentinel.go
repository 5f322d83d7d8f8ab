package redistest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Sentinel timings. A node is down for a sentinel after sentinelDownAfter
// without an answer. Not 1 s: a sentinel that switches to a new master
// reconnects to it up to 1 s later (it retries a link once a second), so
// with 1 s it now and then finds the new master down at once; the other
// sentinels' "down" answers about the old master, still counted, make
// that objectively down, and the sentinels fail over a second time.
// sentinelFailoverTimeout bounds each step of a failover, and a sentinel
// retries a failover that failed (a split vote) only after twice that:
// short, so that a split vote costs seconds, not the default two minutes.
// sentinelTimeout bounds each wait of the fixture; the slowest, the
// return of an old master, takes the sentinels about 11 s (they convert a
// node that claims to be a master 8 s after it said so, at their next
// INFO of it, which they send every 10 s).
const (
	sentinelCount           = 3
	sentinelQuorum          = 2
	sentinelDownAfter       = 2 * time.Second
	sentinelFailoverTimeout = 5 * time.Second
	// sentinelTimeout outlasts TILT mode (30 s), which a sentinel enters
	// when its timer stalls for 2 s, as on a machine starved of CPU.
	sentinelTimeout = 75 * time.Second
	sentinelPoll    = 100 * time.Millisecond
)

// Sentinel is a master, its replicas and three sentinels monitoring it,
// each a redis-server process on loopback. It is not safe for concurrent
// use.
type Sentinel struct {
	// Name is the master name the sentinels monitor.
	Name string
	// Sentinels are the three sentinels.
	Sentinels []*Server
	// Nodes are the data nodes, the master first at start; which is which
	// changes with a failover (see Master and Replicas).
	Nodes []*Server
}

// StartSentinel starts a Sentinel deployment of the test's own: a master
// with replicas replicas, then three sentinels monitoring it (quorum 2,
// down after 2 s). Extra arguments go to every data node, after the
// defaults. It returns once the replicas replicate and every sentinel
// knows the master, every replica and the two other sentinels, so that a
// failover can start at once. It is stopped when the test ends.
func StartSentinel(tb testing.TB, replicas int, extraArgs ...string) *Sentinel {
	tb.Helper()
	dir := memoryDir(tb) // removed after s.Stop: cleanups run last first
	s := &Sentinel{Name: "emq"}
	tb.Cleanup(s.Stop)
	if err := s.start(dir, replicas, extraArgs); err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	return s
}

func (s *Sentinel) start(dir string, replicas int, extraArgs []string) error {
	if replicas < 0 {
		return fmt.Errorf("%d replicas", replicas)
	}
	if err := s.startNodes(dir, replicas, extraArgs); err != nil {
		return err
	}
	master := s.Nodes[0].Addr
	// Sentinels learn of replicas from the master's INFO, which they read
	// every 10 s once connected: start them when the replicas are listed.
	err := s.waitFor(sentinelTimeout, "the replicas to sync", func(ctx context.Context) error {
		return s.replicasUp(ctx, master)
	})
	if err != nil {
		return err
	}
	if err := s.startSentinels(dir, master); err != nil {
		return err
	}
	_, err = s.waitMaster(sentinelTimeout, "")
	return err
}

// startNodes starts the master and its replicas, each with a config file
// of its own, so that the sentinels' CONFIG REWRITE keeps the role they
// give it across a restart, as on a real host.
func (s *Sentinel) startNodes(dir string, replicas int, extraArgs []string) error {
	args := append([]string{"--repl-diskless-sync-delay", "0"}, extraArgs...)
	conf := ""
	for i := range 1 + replicas {
		nodeDir := filepath.Join(dir, "node"+strconv.Itoa(i))
		n, err := startWithConf(nodeDir, conf, args)
		if err != nil {
			return err
		}
		s.Nodes = append(s.Nodes, n)
		conf = "replicaof 127.0.0.1 " + strconv.Itoa(s.Nodes[0].port) + "\n"
	}
	return nil
}

// startSentinels starts the sentinels, each monitoring master.
func (s *Sentinel) startSentinels(dir, master string) error {
	host, port, _ := strings.Cut(master, ":")
	conf := strings.Join([]string{
		"sentinel resolve-hostnames no",
		"sentinel announce-ip 127.0.0.1",
		fmt.Sprintf("sentinel monitor %s %s %s %d", s.Name, host, port, sentinelQuorum),
		fmt.Sprintf("sentinel down-after-milliseconds %s %d", s.Name, sentinelDownAfter.Milliseconds()),
		fmt.Sprintf("sentinel failover-timeout %s %d", s.Name, sentinelFailoverTimeout.Milliseconds()),
	}, "\n") + "\n"
	for i := range sentinelCount {
		n, err := startWithConf(filepath.Join(dir, "sentinel"+strconv.Itoa(i)), conf, []string{"--sentinel"})
		if err != nil {
			return err
		}
		s.Sentinels = append(s.Sentinels, n)
	}
	return nil
}

// startWithConf writes conf to redis.conf in dir, a file redis-server may
// rewrite, and starts a server that reads it.
func startWithConf(dir, conf string, args []string) (*Server, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "redis.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	return startConf(dir, path, args)
}

// Stop stops the sentinels, then the data nodes, so that no failover
// starts meanwhile.
func (s *Sentinel) Stop() {
	for _, n := range slices.Concat(s.Sentinels, s.Nodes) {
		n.Stop()
	}
}

// SentinelAddrs are the sentinels' host:port.
func (s *Sentinel) SentinelAddrs() []string {
	addrs := make([]string, len(s.Sentinels))
	for i, n := range s.Sentinels {
		addrs[i] = n.Addr
	}
	return addrs
}

// URL is the deployment as EMQ_REDIS_URL names it:
// redis+sentinel://host:port,host:port,host:port/name.
func (s *Sentinel) URL() string {
	return "redis+sentinel://" + strings.Join(s.SentinelAddrs(), ",") + "/" + s.Name
}

// Master returns the data node that every sentinel names as the master
// and that says it is one.
func (s *Sentinel) Master(ctx context.Context) (*Server, error) {
	addr, err := s.agreedMaster(ctx)
	if err != nil {
		return nil, err
	}
	n := s.node(addr)
	if n == nil || n.cmd == nil {
		return nil, fmt.Errorf("the sentinels name %s, which is down or not ours, as the master", addr)
	}
	r, err := replicationOf(ctx, addr)
	if err != nil {
		return nil, err
	}
	if r.role != "master" {
		return nil, fmt.Errorf("the sentinels' master %s says it is a %s", addr, r.role)
	}
	return n, nil
}

// Replicas returns the running data nodes that replicate the master
// (Master), their link to it up.
func (s *Sentinel) Replicas(ctx context.Context) ([]*Server, error) {
	m, err := s.Master(ctx)
	if err != nil {
		return nil, err
	}
	var out []*Server
	for _, n := range runningBut(s.Nodes, m.Addr) {
		r, err := replicationOf(ctx, n.Addr)
		if err != nil {
			return nil, err
		}
		if r.replicates(m.Addr) == nil {
			out = append(out, n)
		}
	}
	return out, nil
}

// Failover has a sentinel fail the master over (SENTINEL FAILOVER), a
// planned failover, and returns the addresses of the old and the new
// master once the deployment has settled: the sentinels agree on the new
// master, the old one replicates it (the sentinels convert it some 11 s
// after the switch) and every sentinel sees it so. Unlike CLUSTER
// FAILOVER, a sentinel does not wait for the replica to catch up: writes
// it has not received are lost, as in production (WAIT before, if a test
// needs them).
func (s *Sentinel) Failover(tb testing.TB) (from, to string) {
	tb.Helper()
	m, err := s.waitMaster(sentinelTimeout, "")
	if err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), sentinelTimeout)
	defer cancel()
	if err := s.failover(ctx); err != nil {
		tb.Fatalf("redistest: SENTINEL FAILOVER %s: %v\n%s", s.Name, err, s.logs())
	}
	next, err := s.waitMaster(sentinelTimeout, m.Addr)
	if err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	return m.Addr, next.Addr
}

func (s *Sentinel) failover(ctx context.Context) error {
	sn := runningBut(s.Sentinels, "")
	if len(sn) == 0 {
		return errors.New("no sentinel runs")
	}
	c := redis.NewSentinelClient(&redis.Options{Addr: sn[0].Addr})
	defer c.Close()
	return c.Failover(ctx, s.Name).Err()
}

// KillMaster waits until the deployment has settled (see Failover), then
// kills the master with SIGKILL, a crash: no shutdown, no last write, no
// goodbye to its replicas. It returns the master's address.
func (s *Sentinel) KillMaster(tb testing.TB) (killed string) {
	tb.Helper()
	m, err := s.waitMaster(sentinelTimeout, "")
	if err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	m.kill()
	return m.Addr
}

// kill stops the process with SIGKILL. Killing a stopped server does
// nothing.
func (s *Server) kill() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Kill()
	<-s.done
	s.cmd = nil
}

// WaitNewMaster waits until the deployment has settled (see Failover) on
// a master other than old, and returns its address; it fails the test
// after timeout.
func (s *Sentinel) WaitNewMaster(tb testing.TB, old string, timeout time.Duration) string {
	tb.Helper()
	m, err := s.waitMaster(timeout, old)
	if err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	return m.Addr
}

// Restart starts the data node at addr again on its port, stopping it
// first if it runs, and waits until the deployment has settled. A master
// killed and failed over comes back a master of nothing (empty, unless
// extra arguments made it persist), until the sentinels convert it into a
// replica of the new master, which takes them some 11 s.
func (s *Sentinel) Restart(tb testing.TB, addr string) {
	tb.Helper()
	n := s.node(addr)
	if n == nil {
		tb.Fatalf("redistest: %s is not a data node of this deployment", addr)
	}
	n.Restart(tb)
	if _, err := s.waitMaster(sentinelTimeout, ""); err != nil {
		tb.Fatalf("redistest: %v", err)
	}
}

// waitMaster waits until the deployment has settled (see settled) on a
// master other than not, and returns it.
func (s *Sentinel) waitMaster(timeout time.Duration, not string) (*Server, error) {
	var m *Server
	what := "the deployment to settle"
	if not != "" {
		what += " on a master other than " + not
	}
	err := s.waitFor(timeout, what, func(ctx context.Context) error {
		var err error
		if m, err = s.settled(ctx); err == nil && m.Addr == not {
			err = fmt.Errorf("the master is still %s", not)
		}
		return err
	})
	return m, err
}

// waitFor calls check until it passes, each call with a context of its
// own, and fails after timeout with check's last error and the logs.
func (s *Sentinel) waitFor(timeout time.Duration, what string, check func(context.Context) error) error {
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := check(ctx)
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waited %s for %s: %w\n%s", timeout, what, err, s.logs())
		}
		time.Sleep(sentinelPoll)
	}
}

// settled checks that the deployment is at rest, and returns its master:
// the sentinels agree on a master that says it is one, every other
// running node replicates it with its link up, and every sentinel sees
// the master, those replicas and the other sentinels, none of them down
// or disconnected, and no failover in progress. Stopped sentinels and
// nodes are left out: a test may stop one on purpose.
func (s *Sentinel) settled(ctx context.Context) (*Server, error) {
	m, err := s.Master(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.replicasUp(ctx, m.Addr); err != nil {
		return nil, err
	}
	for _, sn := range runningBut(s.Sentinels, "") {
		if err := s.seenBy(ctx, sn, m.Addr); err != nil {
			return nil, fmt.Errorf("sentinel %s: %w", sn.Addr, err)
		}
	}
	return m, nil
}

// replicasUp checks that every running node but master replicates it,
// its link up.
func (s *Sentinel) replicasUp(ctx context.Context, master string) error {
	for _, n := range runningBut(s.Nodes, master) {
		r, err := replicationOf(ctx, n.Addr)
		if err != nil {
			return err
		}
		if err := r.replicates(master); err != nil {
			return fmt.Errorf("%s: %w", n.Addr, err)
		}
	}
	return nil
}

// agreedMaster asks every running sentinel for the master's address,
// and answers only when they all agree.
func (s *Sentinel) agreedMaster(ctx context.Context) (string, error) {
	agreed := ""
	for _, sn := range runningBut(s.Sentinels, "") {
		c := redis.NewSentinelClient(&redis.Options{Addr: sn.Addr})
		hostPort, err := c.GetMasterAddrByName(ctx, s.Name).Result()
		c.Close()
		if err != nil {
			return "", fmt.Errorf("sentinel %s: %w", sn.Addr, err)
		}
		addr := strings.Join(hostPort, ":")
		if agreed != "" && addr != agreed {
			return "", fmt.Errorf("the sentinels name %s and %s as the master", agreed, addr)
		}
		agreed = addr
	}
	if agreed == "" {
		return "", errors.New("no sentinel runs")
	}
	return agreed, nil
}

// seenBy checks that sentinel sn sees master as the master, and the other
// running nodes and sentinels as its replicas and peers, all healthy.
func (s *Sentinel) seenBy(ctx context.Context, sn *Server, master string) error {
	c := redis.NewSentinelClient(&redis.Options{Addr: sn.Addr})
	defer c.Close()
	m, err := c.Master(ctx, s.Name).Result()
	if err != nil {
		return err
	}
	if addr := m["ip"] + ":" + m["port"]; addr != master || !healthy(m) {
		return fmt.Errorf("it sees the master %s with flags %s, want %s healthy", addr, m["flags"], master)
	}
	replicas, err := c.Replicas(ctx, s.Name).Result()
	if err != nil {
		return err
	}
	if err := sees(replicas, runningBut(s.Nodes, master)); err != nil {
		return fmt.Errorf("SENTINEL REPLICAS: %w", err)
	}
	sentinels, err := c.Sentinels(ctx, s.Name).Result()
	if err != nil {
		return err
	}
	if err := sees(sentinels, runningBut(s.Sentinels, sn.Addr)); err != nil {
		return fmt.Errorf("SENTINEL SENTINELS: %w", err)
	}
	return nil
}

// sees checks that a SENTINEL REPLICAS or SENTINELS answer lists every
// one of want, healthy.
func sees(instances []map[string]string, want []*Server) error {
	ok := map[string]bool{}
	var seen []string
	for _, in := range instances {
		addr := in["ip"] + ":" + in["port"]
		ok[addr] = healthy(in)
		seen = append(seen, addr+" "+in["flags"])
	}
	for _, n := range want {
		if !ok[n.Addr] {
			return fmt.Errorf("%s missing or unhealthy among %v", n.Addr, seen)
		}
	}
	return nil
}

// healthy reports whether a sentinel's view of an instance has none of
// the flags down, disconnected or failover_in_progress.
func healthy(instance map[string]string) bool {
	for _, f := range strings.Split(instance["flags"], ",") {
		switch f {
		case "s_down", "o_down", "disconnected", "failover_in_progress":
			return false
		}
	}
	return true
}

// replication is a node's INFO replication: its role, as ROLE says it,
// and for a replica its master and link.
type replication struct {
	role, master string
	linkUp       bool
}

func replicationOf(ctx context.Context, addr string) (replication, error) {
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	info, err := rdb.Info(ctx, "replication").Result()
	if err != nil {
		return replication{}, fmt.Errorf("%s: %w", addr, err)
	}
	return replication{
		role:   infoField(info, "role"),
		master: infoField(info, "master_host") + ":" + infoField(info, "master_port"),
		linkUp: infoField(info, "master_link_status") == "up",
	}, nil
}

// replicates checks that r is a replica of master with its link up.
func (r replication) replicates(master string) error {
	switch {
	case r.role != "slave":
		return fmt.Errorf("a %s, not a replica of %s", r.role, master)
	case r.master != master:
		return fmt.Errorf("a replica of %s, not of %s", r.master, master)
	case !r.linkUp:
		return errors.New("its link to " + master + " is down")
	}
	return nil
}

// node returns the data node at addr, or nil.
func (s *Sentinel) node(addr string) *Server {
	for _, n := range s.Nodes {
		if n.Addr == addr {
			return n
		}
	}
	return nil
}

// runningBut returns the servers whose process runs, but the one at addr.
func runningBut(servers []*Server, addr string) []*Server {
	var out []*Server
	for _, n := range servers {
		if n.cmd != nil && n.Addr != addr {
			out = append(out, n)
		}
	}
	return out
}

// logs is the last lines of every process's log, sentinels first, for a
// failure message.
func (s *Sentinel) logs() string {
	var b strings.Builder
	for _, n := range slices.Concat(s.Sentinels, s.Nodes) {
		path := filepath.Join(n.dir, "redis.log")
		fmt.Fprintf(&b, "--- %s, %s (tail)\n%s\n", n.Addr, path, logTail(path, 15))
	}
	return b.String()
}

// memoryDir is a directory for the test in memory (/dev/shm) where the
// machine has one, removed when the test ends, else tb.TempDir(). A
// sentinel fsyncs its config file at every change of what it knows, and
// a write that stalls behind a busy disk for 2 s puts it in TILT mode:
// 30 s of doing nothing, a failover missed.
func memoryDir(tb testing.TB) string {
	dir, err := os.MkdirTemp("/dev/shm", "emq-sentinel-")
	if err != nil {
		return tb.TempDir()
	}
	tb.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}
