package redistest

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestSentinelFailover fails the master over to its replica and back, and
// checks that a write survives both and that the roles swap.
func TestSentinelFailover(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := StartSentinel(t, 1)
	url := regexp.MustCompile(`^redis\+sentinel://127\.0\.0\.1:(\d+),127\.0\.0\.1:(\d+),127\.0\.0\.1:(\d+)/emq$`)
	ports := url.FindStringSubmatch(s.URL())
	if ports == nil || s.Name != "emq" || !slices.Equal(s.SentinelAddrs(),
		[]string{"127.0.0.1:" + ports[1], "127.0.0.1:" + ports[2], "127.0.0.1:" + ports[3]}) {
		t.Fatalf("URL() = %q, want the sentinels %v and the name %q", s.URL(), s.SentinelAddrs(), s.Name)
	}
	master, replica := roles(t, s)
	writeReplicated(t, master, 1)

	from, to := s.Failover(t)
	if from != master || to != replica {
		t.Fatalf("Failover() = %s -> %s, want %s -> %s", from, to, master, replica)
	}
	if m, r := roles(t, s); m != replica || r != master {
		t.Fatalf("after the failover: master %s, replica %s; want %s, %s", m, r, replica, master)
	}
	if v, err := newClient(t, to).Get(ctx, "k").Result(); err != nil || v != "kept" {
		t.Fatalf("GET k on the new master: %q, %v; want kept", v, err)
	}

	if back, again := s.Failover(t); back != to || again != from {
		t.Fatalf("the second Failover() = %s -> %s, want %s -> %s", back, again, to, from)
	}
	if v, err := newClient(t, from).Get(ctx, "k").Result(); err != nil || v != "kept" {
		t.Fatalf("GET k after failing back: %q, %v; want kept", v, err)
	}
	wantSwitches(t, s, 2)
}

// TestSentinelKillMaster crashes the master, waits for the sentinels to
// promote a replica, and brings the old master back as a replica.
func TestSentinelKillMaster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := StartSentinel(t, 2)
	master, err := s.Master(ctx)
	if err != nil {
		t.Fatal(err)
	}
	writeReplicated(t, master.Addr, 2)

	killed := s.KillMaster(t)
	if killed != master.Addr || ping(killed) {
		t.Fatalf("KillMaster() = %s (answers PING: %v), want %s dead", killed, ping(killed), master.Addr)
	}
	promoted := s.WaitNewMaster(t, killed, sentinelTimeout)
	if promoted == killed || s.node(promoted) == nil {
		t.Fatalf("WaitNewMaster() = %s, want another node than %s", promoted, killed)
	}
	if v, err := newClient(t, promoted).Get(ctx, "k").Result(); err != nil || v != "kept" {
		t.Fatalf("GET k on the new master: %q, %v; want kept", v, err)
	}

	s.Restart(t, killed)
	replicas, err := s.Replicas(ctx)
	if err != nil || len(replicas) != 2 || !slices.Contains(replicas, s.node(killed)) {
		t.Fatalf("Replicas() after Restart = %v, %v; want 2, %s among them", addrsOf(replicas), err, killed)
	}
	m, err := s.Master(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m.Addr != promoted {
		t.Fatalf("Master() after Restart = %s, want %s", m.Addr, promoted)
	}
	// The restarted node came back empty; it has k again from the new master.
	if v, err := newClient(t, killed).Get(ctx, "k").Result(); err != nil || v != "kept" {
		t.Fatalf("GET k on the restarted node: %q, %v; want kept", v, err)
	}
	// By now, some 10 s after the switch, a second failover, of the new
	// master, would have happened (see sentinelDownAfter).
	wantSwitches(t, s, 1)
}

// wantSwitches checks that every sentinel switched masters failovers
// times: once per failover, never of its own.
func wantSwitches(t *testing.T, s *Sentinel, failovers int) {
	t.Helper()
	for _, n := range s.Sentinels {
		path := filepath.Join(n.dir, "redis.log")
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Count(string(b), "+switch-master "); got != failovers {
			t.Errorf("sentinel %s switched masters %d times, want %d\n--- %s\n%s", n.Addr, got, failovers, path, b)
		}
	}
}

// roles returns the addresses of the master and of its one replica.
func roles(t *testing.T, s *Sentinel) (master, replica string) {
	t.Helper()
	ctx := context.Background()
	m, err := s.Master(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Replicas(ctx)
	if err != nil || len(r) != 1 {
		t.Fatalf("Replicas() = %v, %v; want one", addrsOf(r), err)
	}
	return m.Addr, r[0].Addr
}

// addrsOf returns the servers' host:port, for a failure message.
func addrsOf(servers []*Server) []string {
	addrs := make([]string, len(servers))
	for i, n := range servers {
		addrs[i] = n.Addr
	}
	return addrs
}

// writeReplicated sets k to "kept" on the master at addr and waits until
// replicas replicas have it.
func writeReplicated(t *testing.T, addr string, replicas int) {
	t.Helper()
	ctx := context.Background()
	rdb := newClient(t, addr)
	if err := rdb.Set(ctx, "k", "kept", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := rdb.Wait(ctx, replicas, 10*time.Second).Result(); err != nil || n != int64(replicas) {
		t.Fatalf("WAIT %d: %d, %v", replicas, n, err)
	}
}
