package main

import (
	"os"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/echo-mq/echo_mq/internal/redistest"
)

// composeFile is the part of docker-compose.yml these tests read.
type composeFile struct {
	Services map[string]struct {
		Command     []string          `yaml:"command"`
		Environment map[string]string `yaml:"environment"`
	} `yaml:"services"`
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
