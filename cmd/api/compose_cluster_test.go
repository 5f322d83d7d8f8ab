package main

// The compose file's cluster profile run as processes: three Redis nodes,
// the init script, two service replicas (and nginx: compose_nginx_test.go).

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	emqhttp "github.com/echo-mq/echo_mq/internal/http"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

// TestComposeClusterRunsAsProcesses checks the cluster profile and runs it
// as processes: a three-master Redis Cluster with the nodes' flags, two
// in-process service replicas with the replicas' environment, and (where
// nginx is installed) nginx with deploy/nginx.conf in front of them.
func TestComposeClusterRunsAsProcesses(t *testing.T) {
	t.Parallel()
	c := readCompose(t)
	p := readClusterProfile(t, c)
	flags := clusterNodeFlags(t, c, p)
	checkFixedAddresses(t, c, append(slices.Clone(p.nodes), p.replicas...))
	initScript(t, c, p)
	env := replicaEnv(t, c, p)
	lbText, lbListen, upstream := lbConfig(t, c, p)

	cluster := redistest.StartCluster(t, 3, 0, flags...)
	ctx := context.Background()
	masters, err := cluster.Masters(ctx)
	if err != nil || len(masters) != 3 {
		t.Fatalf("masters %v, %v; want 3", masters, err)
	}
	for _, m := range masters {
		rdb := newRedisClient(t, m.Addr)
		for i := 0; i < len(flags); i += 2 {
			name := strings.TrimPrefix(flags[i], "--")
			got, err := rdb.ConfigGet(ctx, name).Result()
			if err != nil || got[name] != flags[i+1] {
				t.Errorf("%s: CONFIG GET %s = %v, %v; the compose file sets %q", m.Addr, name, got, err, flags[i+1])
			}
		}
	}

	bases := make([]string, len(p.replicas))
	for i := range p.replicas {
		e := map[string]string{}
		for k, v := range env {
			e[k] = v
		}
		e["EMQ_REDIS_URL"] = cluster.URL()
		base, logs, stop := startService(t, e)
		t.Cleanup(func() {
			if err := stop(); err != nil {
				t.Errorf("replica %d: run returned %v", i, err)
			}
		})
		// The start-up check read every master's settings and found
		// nothing that loses jobs or wastes memory.
		for _, line := range strings.Split(logs.String(), "\n") {
			for _, bad := range []string{"Redis", "Could not check", "compact listpack only while"} {
				if strings.Contains(line, bad) && (strings.Contains(line, "level=WARN") || bad != "Redis") {
					t.Errorf("replica %d logged at start-up: %s", i, line)
				}
			}
		}
		bases[i] = base
	}

	t.Run("enqueue on A wakes a long poll on B", func(t *testing.T) {
		crossReplica(t, bases[0], bases[1], redistest.Queue(t))
	})

	t.Run("nginx in front", func(t *testing.T) {
		bin, err := exec.LookPath("nginx")
		if err != nil {
			t.Fatal("nginx is not installed: script/bootstrap installs it (apt-get install -y nginx-light)")
		}
		lb := runNginx(t, bin, lbText, lbListen, map[string]string{
			upstream[0]: strings.TrimPrefix(bases[0], "http://"),
			upstream[1]: strings.TrimPrefix(bases[1], "http://"),
		})
		crossReplica(t, lb, lb, redistest.Queue(t))
		eventThrough(t, lb, redistest.Queue(t))
	})
}

// crossReplica shows that replicas a and b share their queues: a long
// poll waiting on b is answered by an enqueue on a, GET /queues on b
// counts the job active, a completes it with b's token, and b then counts
// it completed.
func crossReplica(t *testing.T, a, b, queue string) {
	t.Helper()
	type claimAnswer struct {
		answer
		err error
	}
	claimed := make(chan claimAnswer, 1)
	go func() {
		ans, err := call(context.Background(), "POST", b+"/queues/"+queue+"/claim", `{"wait_ms":10000,"lease_ms":30000}`)
		claimed <- claimAnswer{ans, err}
	}()
	time.Sleep(300 * time.Millisecond)
	select {
	case got := <-claimed:
		t.Fatalf("the claim on B answered before any enqueue, instead of waiting: %v %v", got.answer, got.err)
	default:
	}
	enqueued := time.Now()
	mustCall(t, "POST", a+"/queues/"+queue+"/jobs", `{"id":"x1","payload":{"n":1}}`, 201, nil)
	var got claimAnswer
	select {
	case got = <-claimed:
	case <-time.After(5 * time.Second):
		t.Fatal("the long poll on B was not answered within 5 s of the enqueue on A")
	}
	var claim struct {
		Jobs []struct {
			ID    string `json:"id"`
			Token int64  `json:"token"`
		} `json:"jobs"`
	}
	if got.err != nil || got.Status != 200 {
		t.Fatalf("claim on B: %v %v", got.answer, got.err)
	}
	if err := json.Unmarshal(got.Body, &claim); err != nil || len(claim.Jobs) != 1 || claim.Jobs[0].ID != "x1" {
		t.Fatalf("claim on B answered %s (%v), want x1", got.Body, err)
	}
	t.Logf("B's long poll answered %s after A's enqueue", time.Since(enqueued).Round(time.Millisecond))

	wantCounts(t, b, queue, map[string]int64{"pending": 0, "active": 1, "completed": 0})
	mustCall(t, "POST", a+"/queues/"+queue+"/jobs/x1/complete",
		fmt.Sprintf(`{"token":%d,"result":{"ok":true}}`, claim.Jobs[0].Token), 200, nil)
	wantCounts(t, b, queue, map[string]int64{"pending": 0, "active": 0, "completed": 1})
}

// wantCounts checks the counts GET /queues on base shows for queue.
func wantCounts(t *testing.T, base, queue string, want map[string]int64) {
	t.Helper()
	var list emqhttp.QueueList
	mustCall(t, "GET", base+"/queues?limit=1000", "", 200, &list)
	for _, q := range list.Queues {
		if q.Name != queue {
			continue
		}
		for state, n := range want {
			if q.Counts[state] != n {
				t.Errorf("GET /queues on %s: %s has %s=%d, want %d (counts %v)", base, queue, state, q.Counts[state], n, q.Counts)
			}
		}
		return
	}
	t.Fatalf("GET /queues on %s does not list %s: %+v", base, queue, list)
}

// eventThrough reads a queue's event stream through base and checks that
// an enqueue's event arrives while the stream stays open: nothing buffers
// it on the way.
func eventThrough(t *testing.T, base, queue string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/queues/"+queue+"/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("GET events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	mustCall(t, "POST", base+"/queues/"+queue+"/jobs", `{"id":"e1","payload":{}}`, 201, nil)
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		if lines.Text() == "event: enqueued" {
			return
		}
	}
	t.Fatalf("no enqueued event through %s before the stream ended: %v", base, lines.Err())
}

// TestComposeClusterInitCreatesOnceAndIsHarmlessAgain runs the init
// service's script as the container does, on three fresh cluster-enabled
// nodes with the compose file's flags: it joins them into a cluster of
// three masters; run again (a restart of the profile), it changes nothing
// and still exits 0.
func TestComposeClusterInitCreatesOnceAndIsHarmlessAgain(t *testing.T) {
	t.Parallel()
	c := readCompose(t)
	p := readClusterProfile(t, c)
	flags := clusterNodeFlags(t, c, p)
	script, composeNodes := initScript(t, c, p)

	var addrs []string
	for range composeNodes {
		dir := t.TempDir()
		args := append(redistest.ClusterArgs(dir, loopbackPort(t)), flags...)
		addrs = append(addrs, redistest.StartServer(t, args...).Addr)
	}
	runInit := func() string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "sh", "-c", script)
		cmd.Env = append(os.Environ(), "NODES="+strings.Join(addrs, " "))
		if bin := os.Getenv("EMQ_REDIS_SERVER"); bin != "" {
			cmd.Env = append(cmd.Env, "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("the init script failed: %v\n%s", err, out)
		}
		return string(out)
	}

	first := runInit()
	if !strings.Contains(first, "All 16384 slots covered") {
		t.Fatalf("the first run did not create the cluster:\n%s", first)
	}
	topology := clusterTopology(t, addrs)
	ctx := context.Background()
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	defer rdb.Close()
	if err := rdb.Set(ctx, "compose-init", "kept", 0).Err(); err != nil {
		t.Fatal(err)
	}

	again := runInit()
	if strings.Contains(again, "--cluster create") || strings.Contains(again, ">>> Performing hash slots allocation") {
		t.Fatalf("the second run created the cluster again:\n%s", again)
	}
	if got := clusterTopology(t, addrs); !reflect.DeepEqual(got, topology) {
		t.Fatalf("the second run changed the cluster:\nbefore %v\nafter  %v", topology, got)
	}
	if v, err := rdb.Get(ctx, "compose-init").Result(); err != nil || v != "kept" {
		t.Fatalf("a key after the second run: %q, %v", v, err)
	}
}

// clusterTopology is, for each node, its id, role and slots, and what it
// says of the cluster; it checks the cluster is whole: three masters,
// every slot assigned, state ok.
func clusterTopology(t *testing.T, addrs []string) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	for _, a := range addrs {
		rdb := newRedisClient(t, a)
		info, err := rdb.ClusterInfo(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"cluster_state:ok", "cluster_slots_assigned:16384", "cluster_known_nodes:3", "cluster_size:3"} {
			if !strings.Contains(info, want+"\r\n") {
				t.Fatalf("%s: CLUSTER INFO lacks %s:\n%s", a, want, info)
			}
		}
		nodes, err := rdb.ClusterNodes(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		for _, line := range strings.Split(strings.TrimSpace(nodes), "\n") {
			f := strings.Fields(line)
			// id, address, flags, master, and the slots; not the ping
			// times, which change.
			lines = append(lines, strings.Join(append(f[:4:4], f[8:]...), " "))
		}
		slices.Sort(lines)
		out[a] = strings.Join(lines, "\n")
	}
	return out
}
