package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"gopkg.in/yaml.v3"

	emqhttp "github.com/echo-mq/echo_mq/internal/http"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

// composeService is the part of a docker-compose.yml service these tests
// read.
type composeService struct {
	Image       string            `yaml:"image"`
	Build       string            `yaml:"build"`
	Profiles    []string          `yaml:"profiles"`
	Command     []string          `yaml:"command"`
	Environment map[string]string `yaml:"environment"`
	Ports       []string          `yaml:"ports"`
	Volumes     []string          `yaml:"volumes"`
	Networks    map[string]*struct {
		IPv4Address string `yaml:"ipv4_address"`
	} `yaml:"networks"`
	DependsOn map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
}

// composeFile is the part of docker-compose.yml these tests read.
type composeFile struct {
	Services map[string]composeService `yaml:"services"`
	Networks map[string]struct {
		IPAM struct {
			Config []struct {
				Subnet string `yaml:"subnet"`
			} `yaml:"config"`
		} `yaml:"ipam"`
	} `yaml:"networks"`
	Volumes map[string]any `yaml:"volumes"`
}

func readCompose(t *testing.T) composeFile {
	t.Helper()
	raw, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var c composeFile
	if err := yaml.Unmarshal(raw, &c); err != nil {
		t.Fatalf("docker-compose.yml does not parse: %v", err)
	}
	return c
}

// TestComposeSetupRunsAsProcesses runs the compose file's setup as
// processes, since Docker cannot run here: a redis-server with the Redis
// service's flags, and the service with its environment (the Redis host
// pointed at that server), driven through a worker loop.
func TestComposeSetupRunsAsProcesses(t *testing.T) {
	t.Parallel()
	c := readCompose(t)
	redisSvc, svc := c.Services["redis"], c.Services["echo_mq"]
	if len(redisSvc.Command) < 1 || redisSvc.Command[0] != "redis-server" {
		t.Fatalf("redis command %v, want redis-server with flags", redisSvc.Command)
	}
	for _, flag := range []string{"--appendonly", "--maxmemory-policy"} {
		if !strings.Contains(strings.Join(redisSvc.Command, " "), flag) {
			t.Errorf("the redis service does not set %s", flag)
		}
	}
	env := map[string]string{}
	for name, value := range svc.Environment {
		if !knownVariable(name) {
			t.Errorf("docker-compose.yml sets %s, which the service does not read", name)
		}
		env[name] = value
	}
	if !strings.HasPrefix(env["EMQ_REDIS_URL"], "redis://redis:6379") {
		t.Fatalf("EMQ_REDIS_URL %q, want the compose redis service", env["EMQ_REDIS_URL"])
	}
	server := redistest.StartServer(t, redisSvc.Command[1:]...)
	env["EMQ_REDIS_URL"] = strings.Replace(env["EMQ_REDIS_URL"], "redis:6379", server.Addr, 1)
	base, _, stop := startService(t, env)
	workerLoop(t, base)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

func knownVariable(name string) bool {
	for _, v := range variables {
		if v == name {
			return true
		}
	}
	return false
}

// clusterProfile is the compose file's cluster profile, found by what its
// services do.
type clusterProfile struct {
	nodes    []string // the cluster-enabled Redis services
	init     string   // the one-shot service that joins them
	replicas []string // the echo_mq services
	lb       string   // nginx in front of the replicas
}

// TestComposeDefaultProfileIsTheSingleRedis checks that `docker compose up`
// (no profile) still starts only the single Redis and the service on it:
// every other service is in the cluster profile, and the default services
// need none of them.
func TestComposeDefaultProfileIsTheSingleRedis(t *testing.T) {
	t.Parallel()
	c := readCompose(t)
	var defaults []string
	for name, svc := range c.Services {
		switch {
		case len(svc.Profiles) == 0:
			defaults = append(defaults, name)
		case !slices.Equal(svc.Profiles, []string{"cluster"}):
			t.Errorf("service %s has profiles %v, want none or [cluster]", name, svc.Profiles)
		}
	}
	slices.Sort(defaults)
	if !slices.Equal(defaults, []string{"echo_mq", "redis"}) {
		t.Fatalf("services without a profile %v, want [echo_mq redis]", defaults)
	}
	for _, name := range defaults {
		for dep := range c.Services[name].DependsOn {
			if len(c.Services[dep].Profiles) != 0 {
				t.Errorf("%s depends on %s of a profile", name, dep)
			}
		}
	}
	if got := c.Services["echo_mq"].Ports; !slices.Equal(got, []string{"8080:8080"}) {
		t.Errorf("echo_mq publishes %v, want 8080:8080", got)
	}
}

// readClusterProfile finds the cluster profile's services and checks how
// they fit together in the compose file: three cluster-enabled Redis
// masters with the single Redis's settings, an init service that runs
// redis-cli --cluster create on them, two service replicas with the
// service's variables and the three nodes as seeds, and nginx in front.
func readClusterProfile(t *testing.T, c composeFile) clusterProfile {
	t.Helper()
	var p clusterProfile
	for name, svc := range c.Services {
		if !slices.Contains(svc.Profiles, "cluster") {
			continue
		}
		switch {
		case len(svc.Command) > 0 && svc.Command[0] == "redis-server":
			p.nodes = append(p.nodes, name)
		case strings.Contains(strings.Join(svc.Command, " "), "--cluster create"):
			p.init = name
		case svc.Build != "":
			p.replicas = append(p.replicas, name)
		case strings.HasPrefix(svc.Image, "nginx"):
			p.lb = name
		default:
			t.Errorf("cluster service %s is neither a node, the init, a replica nor the load balancer", name)
		}
	}
	slices.Sort(p.nodes)
	slices.Sort(p.replicas)
	if len(p.nodes) != 3 || len(p.replicas) != 2 || p.init == "" || p.lb == "" {
		t.Fatalf("the cluster profile has nodes %v, replicas %v, init %q, load balancer %q; "+
			"want 3 nodes, 2 replicas, an init and a load balancer", p.nodes, p.replicas, p.init, p.lb)
	}
	return p
}

// redisFlags reads a redis-server command's --name value pairs, in order.
func redisFlags(t *testing.T, service string, command []string) [][2]string {
	t.Helper()
	args := command[1:]
	if len(args)%2 != 0 {
		t.Fatalf("%s: redis-server arguments %v are not --name value pairs", service, args)
	}
	var out [][2]string
	for i := 0; i < len(args); i += 2 {
		if !strings.HasPrefix(args[i], "--") {
			t.Fatalf("%s: redis-server argument %q is not a --name", service, args[i])
		}
		out = append(out, [2]string{args[i], args[i+1]})
	}
	return out
}

// perNodeFlags are the redis-server settings that differ from one process
// to another, or that redistest sets itself: where a node listens, where
// it keeps its node table, its bus, the addresses it announces.
var perNodeFlags = map[string]bool{
	"--port": true, "--bind": true, "--dir": true,
	"--cluster-enabled": true, "--cluster-config-file": true, "--cluster-port": true,
	"--cluster-node-timeout":      true,
	"--cluster-announce-ip":       true,
	"--cluster-announce-port":     true,
	"--cluster-announce-bus-port": true, "--cluster-announce-hostname": true,
	"--cluster-preferred-endpoint-type": true,
}

// clusterNodeFlags checks the three nodes' commands and returns the flags
// they share, the ones the test starts its processes with: each node is
// cluster-enabled with its node table on its own volume, and keeps every
// setting of the single Redis (persistence, eviction, listpack).
func clusterNodeFlags(t *testing.T, c composeFile, p clusterProfile) []string {
	t.Helper()
	single := map[string]string{}
	for _, f := range redisFlags(t, "redis", c.Services["redis"].Command) {
		single[f[0]] = f[1]
	}
	var shared []string
	volumes := map[string]string{}
	for i, name := range p.nodes {
		svc := c.Services[name]
		if svc.Image != c.Services["redis"].Image {
			t.Errorf("%s runs %s, the single Redis %s", name, svc.Image, c.Services["redis"].Image)
		}
		all := map[string]string{}
		var rest []string
		for _, f := range redisFlags(t, name, svc.Command) {
			all[f[0]] = f[1]
			if !perNodeFlags[f[0]] {
				rest = append(rest, f[0], f[1])
			}
		}
		if all["--cluster-enabled"] != "yes" || all["--cluster-config-file"] == "" {
			t.Errorf("%s: --cluster-enabled %q, --cluster-config-file %q; want a cluster node with its node table",
				name, all["--cluster-enabled"], all["--cluster-config-file"])
		}
		for flag, value := range single {
			if all[flag] != value {
				t.Errorf("%s sets %s %q; the single Redis sets %q", name, flag, all[flag], value)
			}
		}
		if i == 0 {
			shared = rest
		} else if !slices.Equal(rest, shared) {
			t.Errorf("%s's settings %v differ from %s's %v", name, rest, p.nodes[0], shared)
		}
		if len(svc.Volumes) != 1 || !strings.HasSuffix(svc.Volumes[0], ":/data") {
			t.Errorf("%s has volumes %v, want one on /data (where nodes.conf and the AOF live)", name, svc.Volumes)
		} else if other, taken := volumes[svc.Volumes[0]]; taken {
			t.Errorf("%s and %s share the volume %s", name, other, svc.Volumes[0])
		} else {
			volumes[svc.Volumes[0]] = name
			if _, declared := c.Volumes[strings.TrimSuffix(svc.Volumes[0], ":/data")]; !declared {
				t.Errorf("%s's volume %s is not declared", name, svc.Volumes[0])
			}
		}
	}
	return shared
}

// checkFixedAddresses checks that the cluster's containers have distinct
// fixed addresses inside their network's subnet: a node that came back
// with another address would be lost to its peers' nodes.conf, and nginx
// resolves the replicas' names once.
func checkFixedAddresses(t *testing.T, c composeFile, services []string) {
	t.Helper()
	seen := map[string]string{}
	for _, name := range services {
		nets := c.Services[name].Networks
		if len(nets) != 1 {
			t.Errorf("%s is on networks %v, want the cluster's one", name, nets)
			continue
		}
		for net, attach := range nets {
			if len(c.Networks[net].IPAM.Config) != 1 {
				t.Fatalf("network %s has no single subnet", net)
			}
			subnet, err := netip.ParsePrefix(c.Networks[net].IPAM.Config[0].Subnet)
			if err != nil {
				t.Fatalf("network %s: %v", net, err)
			}
			if attach == nil {
				t.Errorf("%s has no fixed address on %s", name, net)
				continue
			}
			ip, err := netip.ParseAddr(attach.IPv4Address)
			if err != nil || !subnet.Contains(ip) {
				t.Errorf("%s's address %q is not in %s's subnet %s", name, attach.IPv4Address, net, subnet)
			}
			if other, taken := seen[attach.IPv4Address]; taken {
				t.Errorf("%s and %s share the address %s", name, other, attach.IPv4Address)
			}
			seen[attach.IPv4Address] = name
		}
	}
}

// composeUnescape undoes compose's escaping of a literal $ as $$, and
// fails on a lone $, which compose would substitute from the environment
// of whoever runs docker compose.
func composeUnescape(t *testing.T, s string) string {
	t.Helper()
	if lone := strings.ReplaceAll(s, "$$", ""); strings.Contains(lone, "$") {
		t.Fatalf("a lone $ in %q: compose substitutes it; write $$ for the shell's $", s)
	}
	return strings.ReplaceAll(s, "$$", "$")
}

// initScript checks the init service and returns its shell script, as the
// container runs it (compose's $$ undone), and its node list.
func initScript(t *testing.T, c composeFile, p clusterProfile) (script string, nodes []string) {
	t.Helper()
	svc := c.Services[p.init]
	if len(svc.Command) != 3 || svc.Command[0] != "sh" || svc.Command[1] != "-c" {
		t.Fatalf("%s's command %q, want sh -c <script>", p.init, svc.Command)
	}
	script = composeUnescape(t, svc.Command[2])
	var create []string
	for _, line := range strings.Split(script, "\n") {
		if strings.Contains(line, "--cluster create") {
			create = strings.Fields(line)
		}
	}
	want := []string{"redis-cli", "--cluster", "create", "$NODES", "--cluster-replicas", "0", "--cluster-yes"}
	if !slices.Equal(create, want) {
		t.Errorf("%s runs %q, want %q", p.init, create, want)
	}
	nodes = strings.Fields(svc.Environment["NODES"])
	var names []string
	for _, n := range nodes {
		host, port, err := net.SplitHostPort(n)
		if err != nil || port != "6379" {
			t.Errorf("%s: node %q is not <service>:6379", p.init, n)
		}
		names = append(names, host)
	}
	slices.Sort(names)
	if !slices.Equal(names, p.nodes) {
		t.Errorf("%s joins %v, want the nodes %v", p.init, names, p.nodes)
	}
	for _, node := range p.nodes {
		if cond := svc.DependsOn[node].Condition; cond != "service_healthy" {
			t.Errorf("%s waits for %s to be %q, want service_healthy", p.init, node, cond)
		}
	}
	return script, nodes
}

// replicaEnv checks the two replicas' environments and returns the first:
// only variables the service reads, the single service's settings, and
// EMQ_REDIS_URL naming the three nodes as seeds.
func replicaEnv(t *testing.T, c composeFile, p clusterProfile) map[string]string {
	t.Helper()
	single := c.Services["echo_mq"].Environment
	for _, name := range p.replicas {
		svc := c.Services[name]
		for v, value := range svc.Environment {
			if !knownVariable(v) {
				t.Errorf("%s sets %s, which the service does not read", name, v)
			}
			if v != "EMQ_REDIS_URL" && value != single[v] {
				t.Errorf("%s sets %s=%q; the single service %q", name, v, value, single[v])
			}
		}
		for v := range single {
			if _, ok := svc.Environment[v]; !ok {
				t.Errorf("%s does not set %s, which the single service sets", name, v)
			}
		}
		var seeds []string
		for _, u := range strings.Split(svc.Environment["EMQ_REDIS_URL"], ",") {
			parsed, err := url.Parse(strings.TrimSpace(u))
			if err != nil || parsed.Scheme != "redis" || parsed.Port() != "6379" {
				t.Errorf("%s: seed %q is not redis://<node>:6379", name, u)
				continue
			}
			seeds = append(seeds, parsed.Hostname())
		}
		slices.Sort(seeds)
		if !slices.Equal(seeds, p.nodes) {
			t.Errorf("%s: EMQ_REDIS_URL names %v, want the nodes %v", name, seeds, p.nodes)
		}
		if cond := svc.DependsOn[p.init].Condition; cond != "service_completed_successfully" {
			t.Errorf("%s waits for %s to be %q, want service_completed_successfully", name, p.init, cond)
		}
	}
	env := map[string]string{}
	for k, v := range c.Services[p.replicas[0]].Environment {
		env[k] = v
	}
	return env
}

// nginxDirective is one simple directive of an nginx config, with the
// blocks it is in.
type nginxDirective struct {
	context []string // e.g. [server location]
	name    string
	args    []string
}

var nginxTokenRE = regexp.MustCompile(`"[^"]*"|[{};]|[^\s{};"]+`)

// parseNginx reads an nginx config's simple directives; enough of the
// grammar for deploy/nginx.conf (comments, blocks, double quotes).
func parseNginx(t *testing.T, text string) []nginxDirective {
	t.Helper()
	var b strings.Builder
	for _, line := range strings.Split(text, "\n") {
		line, _, _ = strings.Cut(line, "#")
		b.WriteString(line + "\n")
	}
	var out []nginxDirective
	var context, words []string
	for _, tok := range nginxTokenRE.FindAllString(b.String(), -1) {
		switch tok {
		case "{":
			if len(words) == 0 {
				t.Fatal("nginx config: a block without a name")
			}
			context = append(context, words[0])
			words = nil
		case "}":
			if len(context) == 0 || len(words) != 0 {
				t.Fatal("nginx config: unbalanced }")
			}
			context = context[:len(context)-1]
		case ";":
			if len(words) == 0 {
				t.Fatal("nginx config: an empty directive")
			}
			out = append(out, nginxDirective{slices.Clone(context), words[0], words[1:]})
			words = nil
		default:
			words = append(words, tok)
		}
	}
	if len(context) != 0 || len(words) != 0 {
		t.Fatal("nginx config: an unclosed block or directive")
	}
	return out
}

// nginxValues returns the arguments of every directive name inside context.
func nginxValues(conf []nginxDirective, name string, context ...string) [][]string {
	var out [][]string
	for _, d := range conf {
		if d.name == name && slices.Equal(d.context, context) {
			out = append(out, d.args)
		}
	}
	return out
}

// nginxOne returns the single argument of the one directive name inside
// context.
func nginxOne(t *testing.T, conf []nginxDirective, name string, context ...string) string {
	t.Helper()
	v := nginxValues(conf, name, context...)
	if len(v) != 1 || len(v[0]) != 1 {
		t.Fatalf("nginx config: %s in %v is %v, want it once with one value", name, context, v)
	}
	return v[0][0]
}

// nginxSeconds reads an nginx time ("75s", "2m", "75").
func nginxSeconds(t *testing.T, v string) time.Duration {
	t.Helper()
	if n, err := strconv.Atoi(v); err == nil {
		return time.Duration(n) * time.Second
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("nginx config: time %q: %v", v, err)
	}
	return d
}

// nginxBytes reads an nginx size ("17m", "512k", "1024").
func nginxBytes(t *testing.T, v string) int64 {
	t.Helper()
	unit := int64(1)
	switch strings.ToLower(v[len(v)-1:]) {
	case "k":
		unit, v = 1<<10, v[:len(v)-1]
	case "m":
		unit, v = 1<<20, v[:len(v)-1]
	case "g":
		unit, v = 1<<30, v[:len(v)-1]
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("nginx config: size %q: %v", v, err)
	}
	return n * unit
}

// maxWait is the longest long poll the API takes: the max of
// ClaimRequest.WaitMs's validation.
func maxWait(t *testing.T) time.Duration {
	t.Helper()
	f, _ := reflect.TypeOf(emqhttp.ClaimRequest{}).FieldByName("WaitMs")
	m := regexp.MustCompile(`max=(\d+)`).FindStringSubmatch(f.Tag.Get("validate"))
	if m == nil {
		t.Fatalf("ClaimRequest.WaitMs has no max in %q", f.Tag.Get("validate"))
	}
	ms, _ := strconv.Atoi(m[1])
	return time.Duration(ms) * time.Millisecond
}

// lbConfig checks the load balancer service and its nginx config, and
// returns the config's text and the upstream entries (host:port) it names.
func lbConfig(t *testing.T, c composeFile, p clusterProfile) (text, listen string, upstream []string) {
	t.Helper()
	svc := c.Services[p.lb]
	const mountedAs = ":/etc/nginx/conf.d/default.conf:ro"
	if len(svc.Volumes) != 1 || !strings.HasSuffix(svc.Volumes[0], mountedAs) {
		t.Fatalf("%s mounts %v, want its config as %s", p.lb, svc.Volumes, mountedAs)
	}
	raw, err := os.ReadFile(filepath.Join("../..", strings.TrimSuffix(svc.Volumes[0], mountedAs)))
	if err != nil {
		t.Fatal(err)
	}
	conf := parseNginx(t, string(raw))

	replicaPort := "8080"
	if addr := c.Services[p.replicas[0]].Environment["EMQ_ADDR"]; addr != "" {
		_, replicaPort, _ = net.SplitHostPort(addr)
	}
	var hosts []string
	for _, args := range nginxValues(conf, "server", "upstream") {
		host, port, err := net.SplitHostPort(args[0])
		if err != nil || port != replicaPort {
			t.Errorf("nginx upstream server %q is not <replica>:%s", args[0], replicaPort)
		}
		hosts = append(hosts, host)
		upstream = append(upstream, args[0])
	}
	slices.Sort(hosts)
	if !slices.Equal(hosts, p.replicas) {
		t.Fatalf("nginx's upstream names %v, want the replicas %v", hosts, p.replicas)
	}
	for _, r := range p.replicas {
		if _, ok := svc.DependsOn[r]; !ok {
			t.Errorf("%s does not depend on %s", p.lb, r)
		}
	}

	listen = nginxOne(t, conf, "listen", "server")
	published := false
	for _, port := range svc.Ports {
		published = published || strings.HasSuffix(port, ":"+listen)
	}
	if !published {
		t.Errorf("%s publishes %v, not nginx's listen port %s", p.lb, svc.Ports, listen)
	}
	if proxy := nginxOne(t, conf, "proxy_pass", "server", "location"); proxy != "http://echo_mq" {
		t.Errorf("proxy_pass %s, want the upstream http://echo_mq", proxy)
	}

	// A long poll waits up to maxWait with nothing sent: nginx must not
	// cut it, nor an event stream between its 15 s pings.
	if read := nginxSeconds(t, nginxOne(t, conf, "proxy_read_timeout", "server", "location")); read <= maxWait(t) || read <= 15*time.Second {
		t.Errorf("proxy_read_timeout %s: a long poll waits up to %s, an event stream 15 s between pings", read, maxWait(t))
	}
	if buffering := nginxOne(t, conf, "proxy_buffering", "server", "location"); buffering != "off" {
		t.Errorf("proxy_buffering %s, want off: event streams must not wait for a buffer to fill", buffering)
	}
	maxBody := int64(emqhttp.DefaultMaxBodyBytes)
	if v := c.Services[p.replicas[0]].Environment["EMQ_MAX_BODY_BYTES"]; v != "" {
		maxBody, _ = strconv.ParseInt(v, 10, 64)
	}
	if limit := nginxBytes(t, nginxOne(t, conf, "client_max_body_size", "server")); limit <= maxBody {
		t.Errorf("client_max_body_size %d: bodies the service takes (up to %d bytes) must pass nginx", limit, maxBody)
	}
	return string(raw), listen, upstream
}

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
		if err != nil && os.Getenv("CI") != "" {
			t.Fatal("nginx is not installed: .ci/run installs nginx-light")
		}
		if err != nil {
			t.Skip("nginx is not installed (apt-get install -y nginx-light); deploy/nginx.conf was checked as text only")
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

// runNginx runs nginx as a process with the load balancer's config, its
// listen port and upstream entries pointed at loopback, and returns its
// base URL; it is stopped when the test ends.
func runNginx(t *testing.T, bin, conf, listen string, upstream map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(loopbackPort(t)))
	rewrite := func(from, to string) {
		if strings.Count(conf, from) != 1 {
			t.Fatalf("deploy/nginx.conf does not hold %q once", from)
		}
		conf = strings.Replace(conf, from, to, 1)
	}
	rewrite("listen "+listen+";", "listen "+addr+";")
	for from, to := range upstream {
		rewrite("server "+from+";", "server "+to+";")
	}
	if err := os.WriteFile(filepath.Join(dir, "default.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	// nginx:alpine's own nginx.conf, reduced to what a process here needs:
	// its files in dir, and one process.
	main := fmt.Sprintf(`pid %[1]s/nginx.pid;
error_log %[1]s/error.log info;
daemon off;
master_process off;
events {}
http {
    access_log off;
    client_body_temp_path %[1]s/body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;
    include %[1]s/default.conf;
}
`, dir)
	if err := os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-e", filepath.Join(dir, "error.log"), "-p", dir, "-c", filepath.Join(dir, "nginx.conf"))
	cmd.SysProcAttr = dieWithTest()
	if out, err := exec.Command(bin, "-t", "-e", filepath.Join(dir, "error.log"), "-p", dir, "-c", filepath.Join(dir, "nginx.conf")).CombinedOutput(); err != nil {
		t.Fatalf("nginx -t refuses deploy/nginx.conf: %v\n%s", err, out)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	eventually(t, 10*time.Second, "nginx listening", func() bool {
		select {
		case <-done:
			log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			t.Fatalf("nginx exited; error.log:\n%s", log)
		default:
		}
		conn, err := net.Dial("tcp", addr)
		if err == nil {
			conn.Close()
		}
		return err == nil
	})
	return "http://" + addr
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
