package redistest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// clusterTimeout bounds how long a cluster may take to form or to settle
// after a failover.
const clusterTimeout = 30 * time.Second

var (
	sharedDir     string
	clusterOnce   sync.Once
	sharedCluster *Cluster
	clusterErr    error
)

// Cluster is a Redis Cluster of redis-server processes on loopback, joined
// by redis-cli --cluster create, as an operator would make one.
type Cluster struct {
	// Nodes are every node, masters and replicas; which is which changes
	// with a failover (see Masters).
	Nodes []*Server
	// TLSAddrs are the nodes' TLS host:port, in the order of Nodes, for a
	// cluster started by StartTLSCluster.
	TLSAddrs []string

	replicas     int       // in all
	lastFailover time.Time // when the last Failover settled
}

// SharedCluster returns the three-master cluster shared by a test binary,
// starting it on first use; Run stops it when the tests end. Tests that
// change its topology (a failover, a reshard) must start their own with
// StartCluster.
func SharedCluster(tb testing.TB) *Cluster {
	tb.Helper()
	if shared == nil {
		tb.Fatal("redistest: Run was not called from TestMain")
	}
	clusterOnce.Do(func() {
		sharedCluster, clusterErr = startCluster(filepath.Join(sharedDir, "cluster"), 3, 0, nil, nil)
	})
	if clusterErr != nil {
		tb.Fatal("redistest: ", clusterErr)
	}
	return sharedCluster
}

// StartCluster starts a cluster of the test's own: masters nodes (3 at
// least, redis-cli's rule) owning the slots in even ranges, each with
// replicas replicas; extra arguments go to every redis-server. It is
// stopped when the test ends.
func StartCluster(tb testing.TB, masters, replicas int, extraArgs ...string) *Cluster {
	tb.Helper()
	c, err := startCluster(tb.TempDir(), masters, replicas, extraArgs, nil)
	if err != nil {
		tb.Fatal("redistest: ", err)
	}
	tb.Cleanup(c.Stop)
	return c
}

// TLSFiles are the PEM files a TLS cluster's nodes serve and trust.
type TLSFiles struct {
	CertFile, KeyFile, CAFile string
}

// StartTLSCluster is StartCluster with nodes that also speak TLS, to
// clients on a port of their own (TLSAddrs) and to each other on the
// cluster bus; they are joined over TLS, so they tell TLS clients their TLS
// ports.
func StartTLSCluster(tb testing.TB, masters, replicas int, files TLSFiles, extraArgs ...string) *Cluster {
	tb.Helper()
	c, err := startCluster(tb.TempDir(), masters, replicas, extraArgs, &files)
	if err != nil {
		tb.Fatal("redistest: ", err)
	}
	tb.Cleanup(c.Stop)
	return c
}

// nodeTimeout is the clusters' cluster-node-timeout: short enough for a
// test, long enough that a node slowed by a busy machine is not taken for
// failed.
const nodeTimeout = 2 * time.Second

// ClusterArgs are the redis-server arguments that make a node of a
// cluster: its node table in dir, its bus on busPort, and nodeTimeout.
func ClusterArgs(dir string, busPort int) []string {
	return []string{"--cluster-enabled", "yes",
		"--cluster-config-file", filepath.Join(dir, "nodes.conf"),
		"--cluster-port", strconv.Itoa(busPort),
		"--cluster-node-timeout", strconv.Itoa(int(nodeTimeout.Milliseconds()))}
}

func startCluster(dir string, masters, replicas int, extraArgs []string, files *TLSFiles) (*Cluster, error) {
	c := &Cluster{replicas: masters * replicas}
	for i := range masters * (1 + replicas) {
		args := extraArgs
		if files != nil {
			port, err := freePort()
			if err != nil {
				c.Stop()
				return nil, err
			}
			c.TLSAddrs = append(c.TLSAddrs, "127.0.0.1:"+strconv.Itoa(port))
			args = append(files.args(port), extraArgs...)
		}
		s, err := startNode(filepath.Join(dir, "node"+strconv.Itoa(i)), args)
		if err != nil {
			c.Stop()
			return nil, err
		}
		c.Nodes = append(c.Nodes, s)
	}
	create := []string{"--cluster", "create"}
	create = append(create, c.Addrs()...)
	if files != nil {
		create = append([]string{"--tls", "--cacert", files.CAFile, "--cluster", "create"}, c.TLSAddrs...)
	}
	create = append(create, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	// redis-cli waits for the nodes to join without end: bound it.
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	if out, err := exec.CommandContext(ctx, redisCLI(), create...).CombinedOutput(); err != nil {
		c.Stop()
		return nil, fmt.Errorf("redis-cli --cluster create: %v\n%s", err, out)
	}
	if err := c.waitSettled(); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// args are the redis-server arguments of a node that speaks TLS on port,
// and on the cluster bus.
func (f TLSFiles) args(port int) []string {
	return []string{"--tls-port", strconv.Itoa(port), "--tls-cluster", "yes",
		"--tls-cert-file", f.CertFile, "--tls-key-file", f.KeyFile, "--tls-ca-cert-file", f.CAFile,
		"--tls-auth-clients", "no"}
}

// startNode starts one cluster-enabled server in a directory of its own,
// trying another bus port when the one picked was taken.
func startNode(dir string, extraArgs []string) (*Server, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var err error
	for range startTries {
		var bus int
		if bus, err = freePort(); err != nil {
			return nil, err
		}
		var s *Server
		s, err = start(dir, append(ClusterArgs(dir, bus), extraArgs...))
		if err == nil {
			return s, nil
		}
	}
	return nil, err
}

func redisCLI() string {
	if bin := os.Getenv("EMQ_REDIS_SERVER"); bin != "" {
		return filepath.Join(filepath.Dir(bin), "redis-cli")
	}
	return "redis-cli"
}

// Addrs are the host:port of every node, the seeds a client starts from.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.Nodes))
	for i, s := range c.Nodes {
		addrs[i] = s.Addr
	}
	return addrs
}

// URL is the cluster as EMQ_REDIS_URL names it: a redis:// URL per seed,
// comma-separated.
func (c *Cluster) URL() string {
	urls := make([]string, len(c.Nodes))
	for i, a := range c.Addrs() {
		urls[i] = "redis://" + a
	}
	return strings.Join(urls, ",")
}

// Client returns a new cluster client, closed when the test ends.
func (c *Cluster) Client(tb testing.TB) *redis.ClusterClient {
	tb.Helper()
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	tb.Cleanup(func() { rdb.Close() })
	return rdb
}

// Stop stops every node.
func (c *Cluster) Stop() {
	for _, s := range c.Nodes {
		s.Stop()
	}
}

// Masters returns the nodes that are masters now, by asking each node.
func (c *Cluster) Masters(ctx context.Context) ([]*Server, error) {
	var out []*Server
	for _, s := range c.Nodes {
		role, err := c.role(ctx, s)
		if err != nil {
			return nil, err
		}
		if role == "master" {
			out = append(out, s)
		}
	}
	return out, nil
}

func (c *Cluster) role(ctx context.Context, s *Server) (string, error) {
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer rdb.Close()
	info, err := rdb.Info(ctx, "replication").Result()
	if err != nil {
		return "", err
	}
	return infoField(info, "role"), nil
}

// Failover makes a replica of the master that owns key's slot take over
// with CLUSTER FAILOVER (the manual, coordinated kind: the master stops
// taking writes, the replica catches up, then swaps roles with it), and
// waits until every node agrees on the new master. It returns the
// addresses of the old and the new master.
//
// It first waits until twice the node timeout has passed since the last
// failover: a Redis 7.0 node elected twice within that time can win the
// second election on the first one's votes, with an epoch another master
// holds, and is demoted again at once with a full resync that drops what
// it took meanwhile (redis/redis#8752). Operators space failovers out too.
func (c *Cluster) Failover(tb testing.TB, key string) (from, to string) {
	tb.Helper()
	time.Sleep(time.Until(c.lastFailover.Add(2*nodeTimeout + 500*time.Millisecond)))
	defer func() { c.lastFailover = time.Now() }()
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	from, err := c.ownerOf(ctx, key)
	if err != nil {
		tb.Fatal("redistest: ", err)
	}
	replica, err := c.replicaOf(ctx, from)
	if err != nil {
		tb.Fatal("redistest: ", err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: replica})
	defer rdb.Close()
	if err := rdb.ClusterFailover(ctx).Err(); err != nil {
		tb.Fatalf("redistest: CLUSTER FAILOVER on %s: %v", replica, err)
	}
	for {
		owner, err := c.ownerOf(ctx, key)
		if err == nil && owner == replica {
			if err = c.waitSettled(); err == nil {
				return from, replica
			}
		}
		select {
		case <-ctx.Done():
			tb.Fatalf("redistest: failover of %s's slot to %s did not settle: %v\n--- its log (tail)\n%s\n--- %s's log (tail)\n%s",
				key, replica, err, c.logOf(replica), from, c.logOf(from))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Owner is the address of the master that owns key's slot, once every
// node agrees on it.
func (c *Cluster) Owner(key string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	return c.ownerOf(ctx, key)
}

// logOf is the last lines of the log of the node at addr.
func (c *Cluster) logOf(addr string) string {
	for _, s := range c.Nodes {
		if s.Addr == addr {
			return logTail(filepath.Join(s.dir, "redis.log"), 30)
		}
	}
	return ""
}

// ownerOf asks every node which node owns key's slot, and answers only
// when they all agree.
func (c *Cluster) ownerOf(ctx context.Context, key string) (string, error) {
	rdb := redis.NewClient(&redis.Options{Addr: c.Nodes[0].Addr})
	defer rdb.Close()
	slot, err := rdb.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		return "", err
	}
	return c.agreedOwner(ctx, int(slot))
}

func (c *Cluster) agreedOwner(ctx context.Context, slot int) (string, error) {
	owner := ""
	for _, s := range c.Nodes {
		nodes, err := clusterNodes(ctx, s.Addr)
		if err != nil {
			return "", err
		}
		got := ""
		for _, n := range nodes {
			if n.master() && n.owns(slot) {
				got = n.addr
			}
		}
		if got == "" || owner != "" && got != owner {
			return "", fmt.Errorf("the nodes do not agree on slot %d's owner yet", slot)
		}
		owner = got
	}
	return owner, nil
}

// replicaOf returns a replica of master whose link to it is up.
func (c *Cluster) replicaOf(ctx context.Context, master string) (string, error) {
	nodes, err := clusterNodes(ctx, master)
	if err != nil {
		return "", err
	}
	id := ""
	for _, n := range nodes {
		if n.addr == master {
			id = n.id
		}
	}
	for _, n := range nodes {
		if n.masterID == id && !n.failing() {
			return n.addr, nil
		}
	}
	return "", fmt.Errorf("master %s has no replica: %+v", master, nodes)
}

// waitSettled waits until every node says the cluster is ok, knows every
// node, and every replica is one, its link to its master up.
func (c *Cluster) waitSettled() error {
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	var err error
	for {
		if err = c.settled(ctx); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the cluster did not settle within %s: %w", clusterTimeout, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (c *Cluster) settled(ctx context.Context) error {
	epoch := ""
	for _, s := range c.Nodes {
		rdb := redis.NewClient(&redis.Options{Addr: s.Addr})
		info, err := rdb.ClusterInfo(ctx).Result()
		if err == nil && (infoField(info, "cluster_state") != "ok" ||
			infoField(info, "cluster_known_nodes") != strconv.Itoa(len(c.Nodes))) {
			err = fmt.Errorf("%s: cluster_state %s, %s nodes known", s.Addr,
				infoField(info, "cluster_state"), infoField(info, "cluster_known_nodes"))
		}
		// A node that has not heard of the last election yet could win
		// the next one with an epoch already taken, and lose it again.
		if e := infoField(info, "cluster_current_epoch"); err == nil && epoch != "" && e != epoch {
			err = fmt.Errorf("the nodes are at epochs %s and %s", epoch, e)
		} else {
			epoch = e
		}
		var repl string
		if err == nil {
			repl, err = rdb.Info(ctx, "replication").Result()
		}
		rdb.Close()
		if err != nil {
			return err
		}
		if infoField(repl, "role") == "slave" && infoField(repl, "master_link_status") != "up" {
			return fmt.Errorf("%s: replica link down", s.Addr)
		}
		if err := c.sees(ctx, s.Addr); err != nil {
			return err
		}
	}
	return nil
}

// sees checks that the node at addr sees every replica as one, and every
// node as healthy.
func (c *Cluster) sees(ctx context.Context, addr string) error {
	nodes, err := clusterNodes(ctx, addr)
	if err != nil {
		return err
	}
	replicas := 0
	for _, n := range nodes {
		if n.failing() {
			return fmt.Errorf("%s sees %s failing", addr, n.addr)
		}
		if n.has("slave") {
			replicas++
		}
	}
	if replicas != c.replicas {
		return fmt.Errorf("%s sees %d replicas, want %d", addr, replicas, c.replicas)
	}
	return nil
}

// infoField reads one "name:value" line of an INFO-style answer.
func infoField(info, name string) string {
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return v
		}
	}
	return ""
}

// clusterNode is one line of CLUSTER NODES.
type clusterNode struct {
	id, addr, masterID string
	flags              []string
	slots              [][2]int
}

func (n clusterNode) has(flag string) bool {
	for _, f := range n.flags {
		if f == flag {
			return true
		}
	}
	return false
}

func (n clusterNode) master() bool  { return n.has("master") && !n.failing() }
func (n clusterNode) failing() bool { return n.has("fail") || n.has("fail?") }

func (n clusterNode) owns(slot int) bool {
	for _, r := range n.slots {
		if r[0] <= slot && slot <= r[1] {
			return true
		}
	}
	return false
}

// clusterNodes reads the node table as the node at addr sees it.
func clusterNodes(ctx context.Context, addr string) ([]clusterNode, error) {
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	text, err := rdb.ClusterNodes(ctx).Result()
	if err != nil {
		return nil, err
	}
	var out []clusterNode
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			return nil, errors.New("redistest: a CLUSTER NODES line with fewer than 8 fields: " + line)
		}
		n := clusterNode{id: f[0], addr: f[1], masterID: f[3], flags: strings.Split(f[2], ",")}
		n.addr, _, _ = strings.Cut(n.addr, "@")
		for _, r := range f[8:] {
			if strings.HasPrefix(r, "[") {
				continue // a slot being migrated or imported
			}
			lo, hi, found := strings.Cut(r, "-")
			a, _ := strconv.Atoi(lo)
			b := a
			if found {
				b, _ = strconv.Atoi(hi)
			}
			n.slots = append(n.slots, [2]int{a, b})
		}
		out = append(out, n)
	}
	return out, nil
}
