package main

import (
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	emqhttp "github.com/echo-mq/echo_mq/internal/http"
	"github.com/echo-mq/echo_mq/internal/redistest"
	"github.com/echo-mq/echo_mq/internal/telemetry"
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
	Healthcheck struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
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
		env[name] = composeDefault(value)
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
	return slices.Contains(variables, name) || slices.Contains(telemetry.Variables, name)
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
// every other service is in the cluster or the sentinel profile, and the
// default services need none of them.
func TestComposeDefaultProfileIsTheSingleRedis(t *testing.T) {
	t.Parallel()
	c := readCompose(t)
	var defaults []string
	for name, svc := range c.Services {
		switch {
		case len(svc.Profiles) == 0:
			defaults = append(defaults, name)
		case !slices.Equal(svc.Profiles, []string{"cluster"}) && !slices.Equal(svc.Profiles, []string{"sentinel"}):
			t.Errorf("service %s has profiles %v, want none, [cluster] or [sentinel]", name, svc.Profiles)
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
		env[k] = composeDefault(v)
	}
	return env
}

// composeSubstitution is compose's ${NAME:-default}, a whole value.
var composeSubstitution = regexp.MustCompile(`^\$\{[A-Z_][A-Z0-9_]*:-(.*)\}$`)

// composeDefault is value as compose makes it when whoever runs docker
// compose has not set the variable it names: a ${NAME:-default} gives its
// default; any other value is itself.
func composeDefault(value string) string {
	if m := composeSubstitution.FindStringSubmatch(value); m != nil {
		return m[1]
	}
	return value
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
