package main

// The compose file's sentinel profile, checked in the file and run as
// processes: a master, a replica, three sentinels and the service.

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/redistest"
	"github.com/echo-mq/echo_mq/internal/redisurl"
)

// sentinelProfile is the compose file's sentinel profile, found by what
// its services do.
type sentinelProfile struct {
	primary   string   // the data node that replicates nothing
	replica   string   // the data node that replicates the primary
	sentinels []string // the services that run redis-server --sentinel
	service   string   // echo_mq
}

// sentinelExec is the last line of a sentinel's script: the config file it
// wrote, on its volume, where the sentinel can rewrite it.
const sentinelExec = "exec redis-server /data/sentinel.conf --sentinel"

// TestComposeSentinelRunsAsProcesses checks the sentinel profile and runs
// it as processes: a master and a replica with the data nodes' flags, three
// sentinels, and the service in-process with the profile's environment
// (the URL pointed at those sentinels). A job goes through it, /readyz
// names the master, and every write is on the replica once answered.
func TestComposeSentinelRunsAsProcesses(t *testing.T) {
	t.Parallel()
	c := readCompose(t)
	p := readSentinelProfile(t, c)
	flags := sentinelDataFlags(t, c, p)
	master := sentinelConfigs(t, c, p)
	env := sentinelServiceEnv(t, c, p, master)

	s := redistest.StartSentinel(t, 1, flags...)
	ctx := context.Background()
	m, err := s.Master(ctx)
	if err != nil {
		t.Fatal(err)
	}
	replicas, err := s.Replicas(ctx)
	if err != nil || len(replicas) != 1 {
		t.Fatalf("replicas %v, %v; want 1", replicas, err)
	}
	for _, n := range []*redistest.Server{m, replicas[0]} {
		wantConfig(t, n.Addr, flags)
	}

	env["EMQ_REDIS_URL"] = s.URL()
	base, logs, stop := startService(t, env)
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("run returned %v", err)
		}
	})
	// The start-up checks read the master's settings and replicas and
	// found nothing that loses jobs or makes every write answer 503. (Not
	// counted: go-redis telling of the master it found, and the warning
	// that no API keys are set, which the compose file leaves to its user.)
	for _, line := range strings.Split(logs.String(), "\n") {
		warned := strings.Contains(line, "level=WARN") &&
			!strings.Contains(line, `msg="Redis client"`) && !strings.Contains(line, "THE API IS OPEN")
		if warned || strings.Contains(line, "level=ERROR") || strings.Contains(line, "Could not") {
			t.Errorf("the service logged at start-up: %s", line)
		}
	}
	var ready struct {
		RedisMaster string `json:"redis_master"`
	}
	mustCall(t, "GET", base+"/readyz", "", 200, &ready)
	if ready.RedisMaster != m.Addr {
		t.Errorf("/readyz names the master %q, want %s", ready.RedisMaster, m.Addr)
	}
	jobOnReplica(t, base, env["EMQ_PREFIX"], replicas[0].Addr)
}

// jobOnReplica enqueues, claims and completes a job through base, and
// checks after each answered write that the replica at addr holds it: the
// promise of EMQ_ACK_REPLICAS=1. The replica is read at once, not waited
// for.
func jobOnReplica(t *testing.T, base, prefix, addr string) {
	t.Helper()
	ctx := context.Background()
	rdb := newRedisClient(t, addr)
	queue := redistest.Queue(t)
	row := keyspace.NewQueue(prefix, queue).Job("s1")
	q := base + "/queues/" + queue

	mustCall(t, "POST", q+"/jobs", `{"id":"s1","payload":{"n":1}}`, 201, nil)
	if state, err := rdb.HGet(ctx, row, "state").Result(); err != nil || state != "pending" {
		t.Fatalf("after the enqueue, the replica's %s state is %q, %v; want pending", row, state, err)
	}
	var claim struct {
		Jobs []struct {
			ID    string `json:"id"`
			Token int64  `json:"token"`
		} `json:"jobs"`
	}
	mustCall(t, "POST", q+"/claim", `{"lease_ms":30000}`, 200, &claim)
	if len(claim.Jobs) != 1 || claim.Jobs[0].ID != "s1" {
		t.Fatalf("claim answered %+v, want s1", claim)
	}
	if state, err := rdb.HGet(ctx, row, "state").Result(); err != nil || state != "active" {
		t.Fatalf("after the claim, the replica's %s state is %q, %v; want active", row, state, err)
	}
	mustCall(t, "POST", q+"/jobs/s1/complete", fmt.Sprintf(`{"token":%d,"result":{"ok":true}}`, claim.Jobs[0].Token), 200, nil)
	if state, err := rdb.HGet(ctx, row, "state").Result(); err != nil || state != "completed" {
		t.Fatalf("after the complete, the replica's %s state is %q, %v; want completed", row, state, err)
	}
}

// wantConfig checks that the Redis at addr runs with flags (--name value
// pairs), as CONFIG GET reads them.
func wantConfig(t *testing.T, addr string, flags []string) {
	t.Helper()
	rdb := newRedisClient(t, addr)
	for i := 0; i < len(flags); i += 2 {
		name := strings.TrimPrefix(flags[i], "--")
		got, err := rdb.ConfigGet(context.Background(), name).Result()
		if err != nil || got[name] != flags[i+1] {
			t.Errorf("%s: CONFIG GET %s = %v, %v; the compose file sets %q", addr, name, got, err, flags[i+1])
		}
	}
}

// readSentinelProfile finds the sentinel profile's services: two data
// nodes, one replicating the other, three sentinels and the service, each
// in the sentinel profile only.
func readSentinelProfile(t *testing.T, c composeFile) sentinelProfile {
	t.Helper()
	var p sentinelProfile
	for name, svc := range c.Services {
		if !slices.Contains(svc.Profiles, "sentinel") {
			continue
		}
		if !slices.Equal(svc.Profiles, []string{"sentinel"}) {
			t.Errorf("%s has profiles %v, want [sentinel]", name, svc.Profiles)
		}
		_, replicaOf := cutReplicaOf(svc.Command)
		switch {
		case len(svc.Command) > 0 && svc.Command[0] == "redis-server" && replicaOf == "":
			p.primary = name
		case len(svc.Command) > 0 && svc.Command[0] == "redis-server":
			p.replica = name
		case strings.Contains(strings.Join(svc.Command, " "), sentinelExec):
			p.sentinels = append(p.sentinels, name)
		case svc.Build != "":
			p.service = name
		default:
			t.Errorf("sentinel service %s is neither a data node, a sentinel nor the service", name)
		}
	}
	slices.Sort(p.sentinels)
	if p.primary == "" || p.replica == "" || len(p.sentinels) != 3 || p.service == "" {
		t.Fatalf("the sentinel profile has primary %q, replica %q, sentinels %v, service %q; "+
			"want one of each and 3 sentinels", p.primary, p.replica, p.sentinels, p.service)
	}
	return p
}

// cutReplicaOf takes --replicaof host port (three arguments, which
// redisFlags' pairs cannot read) out of a redis-server command, and returns
// the rest and "host port", or "" when it has none.
func cutReplicaOf(command []string) (rest []string, replicaOf string) {
	i := slices.Index(command, "--replicaof")
	if i < 0 || i+2 >= len(command) {
		return command, ""
	}
	return slices.Concat(command[:i], command[i+3:]), command[i+1] + " " + command[i+2]
}

// sentinelDataFlags checks the data nodes and returns the flags they
// share, the ones the test starts its processes with: each keeps every
// setting of the single Redis, announces its service name (after a
// failover a master is a replica, found by that name), keeps its data on a
// volume of its own, and has a healthcheck; the replica replicates the
// primary once it is healthy.
func sentinelDataFlags(t *testing.T, c composeFile, p sentinelProfile) []string {
	t.Helper()
	single := redisFlags(t, "redis", c.Services["redis"].Command)
	var shared [][]string
	for _, name := range []string{p.primary, p.replica} {
		svc := c.Services[name]
		if svc.Image != c.Services["redis"].Image {
			t.Errorf("%s runs %s, the single Redis %s", name, svc.Image, c.Services["redis"].Image)
		}
		command, _ := cutReplicaOf(svc.Command)
		var rest []string
		for _, f := range redisFlags(t, name, command) {
			if f[0] == "--replica-announce-ip" {
				if f[1] != name {
					t.Errorf("%s announces itself as %q, want its service name", name, f[1])
				}
				continue
			}
			rest = append(rest, f[0], f[1])
		}
		for _, f := range single {
			if i := slices.Index(rest, f[0]); i < 0 || i%2 != 0 || rest[i+1] != f[1] {
				t.Errorf("%s does not set %s %q as the single Redis does (its flags %v)", name, f[0], f[1], rest)
			}
		}
		if !slices.Contains(command, "--replica-announce-ip") {
			t.Errorf("%s does not announce its service name (--replica-announce-ip %s)", name, name)
		}
		shared = append(shared, rest)
		checkHealthy(t, c, name)
	}
	if !slices.Equal(shared[0], shared[1]) {
		t.Errorf("%s's settings %v differ from %s's %v", p.replica, shared[1], p.primary, shared[0])
	}
	if _, of := cutReplicaOf(c.Services[p.replica].Command); of != p.primary+" 6379" {
		t.Errorf("%s replicates %q, want %q", p.replica, of, p.primary+" 6379")
	}
	checkDependsOnHealthy(t, c, p.replica, p.primary)
	checkVolumes(t, c, append([]string{p.primary, p.replica}, p.sentinels...))
	return shared[0]
}

// sentinelConfigs checks the sentinels' config files, as their scripts
// write them, and returns the master name they monitor: each listens on
// 26379, resolves and announces host names, announces its own service
// name, and monitors the primary with a quorum of 2, a down-after and a
// failover-timeout, one replica resyncing at a time; the three differ only
// in the name they announce. Each waits for the data nodes to be healthy.
func sentinelConfigs(t *testing.T, c composeFile, p sentinelProfile) (master string) {
	t.Helper()
	var first map[string][]string
	for _, name := range p.sentinels {
		conf := sentinelConfig(t, c, name)
		want := map[string][]string{
			"port":                        {redisurl.DefaultSentinelPort},
			"sentinel resolve-hostnames":  {"yes"},
			"sentinel announce-hostnames": {"yes"},
			"sentinel announce-ip":        {name},
		}
		for key, value := range want {
			if !slices.Equal(conf[key], value) {
				t.Errorf("%s's config: %s %v, want %v", name, key, conf[key], value)
			}
		}
		monitor := conf["sentinel monitor"]
		if len(monitor) != 4 || monitor[1] != p.primary || monitor[2] != "6379" || monitor[3] != "2" {
			t.Fatalf("%s's config: sentinel monitor %v, want <name> %s 6379 2", name, monitor, p.primary)
		}
		master = monitor[0]
		for _, key := range []string{"down-after-milliseconds", "failover-timeout", "parallel-syncs"} {
			if v := conf["sentinel "+key]; len(v) != 2 || v[0] != master {
				t.Errorf("%s's config: sentinel %s %v, want %s <value>", name, key, v, master)
			}
		}
		if v := conf["sentinel parallel-syncs"]; len(v) == 2 && v[1] != "1" {
			t.Errorf("%s's config: parallel-syncs %s, want 1", name, v[1])
		}
		delete(conf, "sentinel announce-ip")
		if first == nil {
			first = conf
		} else if fmt.Sprint(conf) != fmt.Sprint(first) {
			t.Errorf("%s's config %v differs from %s's %v", name, conf, p.sentinels[0], first)
		}
		checkHealthy(t, c, name, redisurl.DefaultSentinelPort)
		checkDependsOnHealthy(t, c, name, p.primary, p.replica)
	}
	return master
}

// sentinelConfig runs a sentinel's script as its container would, but
// for its last line (which starts the sentinel) and with its volume in a
// temporary directory, and returns the config file it writes, by
// directive ("port", "sentinel monitor"...). It runs the script again on
// a file the sentinel has changed and checks that the file is kept: a
// restarted sentinel carries on from its own state.
func sentinelConfig(t *testing.T, c composeFile, name string) map[string][]string {
	t.Helper()
	svc := c.Services[name]
	if len(svc.Command) != 3 || svc.Command[0] != "sh" || svc.Command[1] != "-c" {
		t.Fatalf("%s's command %q, want sh -c <script>", name, svc.Command)
	}
	script := strings.TrimSpace(composeUnescape(t, svc.Command[2]))
	body, last, _ := cutLast(script, "\n")
	if last != sentinelExec {
		t.Fatalf("%s's script ends with %q, want %q", name, last, sentinelExec)
	}
	dir := t.TempDir()
	body = strings.ReplaceAll(body, "/data/", dir+"/")
	env := os.Environ()
	for k, v := range svc.Environment {
		env = append(env, k+"="+composeDefault(v))
	}
	runScript(t, name, body, env)
	path := filepath.Join(dir, "sentinel.conf")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%s's script wrote no /data/sentinel.conf: %v", name, err)
	}
	rewritten := string(raw) + "sentinel myid 0123456789012345678901234567890123456789\n"
	if err := os.WriteFile(path, []byte(rewritten), 0o644); err != nil {
		t.Fatal(err)
	}
	runScript(t, name, body, env)
	if again, _ := os.ReadFile(path); string(again) != rewritten {
		t.Errorf("%s's script, run again, replaced the config its sentinel had rewritten:\n%s", name, again)
	}
	return sentinelDirectives(t, name, string(raw))
}

// sentinelDirectives reads a sentinel config file by directive: "port"
// and "sentinel monitor" each with the words after them.
func sentinelDirectives(t *testing.T, name, text string) map[string][]string {
	t.Helper()
	conf := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 2 && f[0] == "sentinel":
			conf[f[0]+" "+f[1]] = f[2:]
		case len(f) > 1:
			conf[f[0]] = f[1:]
		default:
			t.Errorf("%s's config: line %q is not <directive> <value>", name, line)
		}
	}
	return conf
}

// cutLast is strings.Cut at the last sep.
func cutLast(s, sep string) (before, after string, found bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return "", s, false
	}
	return s[:i], s[i+len(sep):], true
}

// runScript runs a shell script with env, failing the test if it fails.
func runScript(t *testing.T, name, script string, env []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", script)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s's script failed: %v\n%s", name, err, out)
	}
}

// sentinelServiceEnv checks the service's environment and returns it:
// only variables the service reads, the single service's settings,
// EMQ_ACK_REPLICAS 1, and EMQ_REDIS_URL naming the three sentinels on
// their port and master, whom the service waits for.
func sentinelServiceEnv(t *testing.T, c composeFile, p sentinelProfile, master string) map[string]string {
	t.Helper()
	svc, single := c.Services[p.service], c.Services["echo_mq"]
	env := map[string]string{}
	for v, value := range svc.Environment {
		if !knownVariable(v) {
			t.Errorf("%s sets %s, which the service does not read", p.service, v)
		}
		switch {
		case v == "EMQ_REDIS_URL" || v == "EMQ_ACK_REPLICAS":
		case value != single.Environment[v]:
			t.Errorf("%s sets %s=%q; the single service %q", p.service, v, value, single.Environment[v])
		}
		env[v] = composeDefault(value)
	}
	for v := range single.Environment {
		if _, ok := svc.Environment[v]; !ok {
			t.Errorf("%s does not set %s, which the single service sets", p.service, v)
		}
	}
	if env["EMQ_ACK_REPLICAS"] != "1" {
		t.Errorf("%s: EMQ_ACK_REPLICAS %q, want 1 (a write waits for the replica)", p.service, env["EMQ_ACK_REPLICAS"])
	}
	target, err := redisurl.Parse(env["EMQ_REDIS_URL"])
	if err != nil || target.Sentinel == nil {
		t.Fatalf("%s: EMQ_REDIS_URL %q is not a Sentinel URL: %v", p.service, env["EMQ_REDIS_URL"], err)
	}
	var want []string
	for _, s := range p.sentinels {
		want = append(want, net.JoinHostPort(s, redisurl.DefaultSentinelPort))
	}
	if got := slices.Sorted(slices.Values(target.Sentinel.SentinelAddrs)); !slices.Equal(got, want) {
		t.Errorf("%s: EMQ_REDIS_URL names the sentinels %v, want %v", p.service, got, want)
	}
	if target.Sentinel.MasterName != master {
		t.Errorf("%s: EMQ_REDIS_URL names the master %q; the sentinels monitor %q", p.service, target.Sentinel.MasterName, master)
	}
	if svc.Build != single.Build {
		t.Errorf("%s builds %q, the single service %q", p.service, svc.Build, single.Build)
	}
	if !slices.Equal(svc.Ports, []string{"8082:8080"}) {
		t.Errorf("%s publishes %v, want 8082:8080", p.service, svc.Ports)
	}
	checkDependsOnHealthy(t, c, p.service, p.sentinels...)
	return env
}

// checkHealthy checks that service has a healthcheck, which runs
// redis-cli and names every one of args (a port).
func checkHealthy(t *testing.T, c composeFile, service string, args ...string) {
	t.Helper()
	test := c.Services[service].Healthcheck.Test
	if !slices.Contains(test, "redis-cli") {
		t.Errorf("%s's healthcheck %q does not run redis-cli", service, test)
	}
	for _, a := range args {
		if !slices.Contains(test, a) {
			t.Errorf("%s's healthcheck %q does not name %s", service, test, a)
		}
	}
}

// checkDependsOnHealthy checks that service starts once each of deps is
// healthy.
func checkDependsOnHealthy(t *testing.T, c composeFile, service string, deps ...string) {
	t.Helper()
	for _, d := range deps {
		if cond := c.Services[service].DependsOn[d].Condition; cond != "service_healthy" {
			t.Errorf("%s waits for %s to be %q, want service_healthy", service, d, cond)
		}
	}
}

// checkVolumes checks that each service keeps /data on a declared volume
// of its own.
func checkVolumes(t *testing.T, c composeFile, services []string) {
	t.Helper()
	owner := map[string]string{}
	for _, name := range services {
		vols := c.Services[name].Volumes
		if len(vols) != 1 || !strings.HasSuffix(vols[0], ":/data") {
			t.Errorf("%s has volumes %v, want one on /data", name, vols)
			continue
		}
		volume := strings.TrimSuffix(vols[0], ":/data")
		if other, taken := owner[volume]; taken {
			t.Errorf("%s and %s share the volume %s", name, other, volume)
		}
		owner[volume] = name
		if _, declared := c.Volumes[volume]; !declared {
			t.Errorf("%s's volume %s is not declared", name, volume)
		}
	}
}
