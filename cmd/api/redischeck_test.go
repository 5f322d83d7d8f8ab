package main

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/redistest"
)

const (
	evictionWarning    = "evicted job rows lose jobs silently"
	persistenceWarning = "a Redis restart loses every job"
	snapshotsNote      = "RDB snapshots only"
	couldNotCheck      = "Could not check"
	listpackNote       = "Set hash-max-listpack-value 1024"
)

// checkLog runs checkRedis against redisURL (the embedded store for "")
// and returns its log.
func checkLog(t *testing.T, redisURL string) string {
	t.Helper()
	var logs logBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	addr := strings.TrimPrefix(redisURL, "redis://")
	if redisURL == "" {
		addr = "127.0.0.1:1" // never dialled: the embedded store is skipped
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer rdb.Close()
	checkRedis(context.Background(), config{RedisURL: redisURL}, rdb, nil, log)
	return logs.String()
}

// logHas fails the test unless log has a line at level that contains
// want, or, with level "", unless no line contains want.
func logHas(t *testing.T, log, level, want string) {
	t.Helper()
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, want) {
			if level == "" {
				t.Errorf("the log says %q, want it not to:\n%s", want, log)
			} else if !strings.Contains(line, "level="+level) {
				t.Errorf("%q logged at the wrong level, want %s:\n%s", want, level, line)
			}
			return
		}
	}
	if level != "" {
		t.Errorf("the log lacks %q at %s:\n%s", want, level, log)
	}
}

func TestCheckRedisWarnsAboutSettingsThatLoseJobs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		flags []string
		want  map[string]string // log text -> level, "" for absent
	}{
		{"eviction and no persistence", []string{"--maxmemory-policy", "allkeys-lru"},
			map[string]string{evictionWarning: "WARN", persistenceWarning: "WARN", couldNotCheck: ""}},
		{"volatile eviction with AOF", []string{"--maxmemory-policy", "volatile-ttl", "--appendonly", "yes"},
			map[string]string{evictionWarning: "WARN", persistenceWarning: "", snapshotsNote: ""}},
		{"noeviction without persistence", nil,
			map[string]string{evictionWarning: "", persistenceWarning: "WARN"}},
		{"noeviction with AOF", []string{"--maxmemory-policy", "noeviction", "--appendonly", "yes", "--appendfsync", "everysec"},
			map[string]string{evictionWarning: "", persistenceWarning: "", snapshotsNote: "", couldNotCheck: "", listpackNote: "INFO"}},
		{"the recommended settings", []string{"--appendonly", "yes", "--hash-max-listpack-value", "1024"},
			map[string]string{evictionWarning: "", persistenceWarning: "", couldNotCheck: "", listpackNote: ""}},
		{"RDB save points only", []string{"--save", "3600 1"},
			map[string]string{evictionWarning: "", persistenceWarning: "", snapshotsNote: "INFO"}},
		{"CONFIG renamed away", []string{"--rename-command", "CONFIG", ""},
			map[string]string{couldNotCheck: "INFO", evictionWarning: "", persistenceWarning: ""}},
		{"ACL user without CONFIG", []string{"--user", "default", "on", "nopass", "~*", "&*", "+@all", "-config"},
			map[string]string{couldNotCheck: "INFO", "NOPERM": "INFO", evictionWarning: "", persistenceWarning: ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			server := redistest.StartServer(t, tc.flags...)
			log := checkLog(t, "redis://"+server.Addr)
			for text, level := range tc.want {
				logHas(t, log, level, text)
			}
		})
	}
}

func TestCheckRedisSkipsTheEmbeddedStore(t *testing.T) {
	t.Parallel()
	if log := checkLog(t, ""); log != "" {
		t.Fatalf("checkRedis on the embedded store logged:\n%s", log)
	}
}

func TestCheckRedisGoesOnWhenRedisIsDown(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	log := checkLog(t, "redis://"+addr)
	logHas(t, log, "INFO", couldNotCheck)
	logHas(t, log, "", evictionWarning)
}

// TestRunChecksRedisAtStartUp proves that run calls the check: a Redis that
// evicts and persists nothing is warned about twice in the start-up log,
// and the service starts anyway.
func TestRunChecksRedisAtStartUp(t *testing.T) {
	t.Parallel()
	server := redistest.StartServer(t, "--maxmemory-policy", "allkeys-lru")
	base, logs, stop := startService(t, map[string]string{"EMQ_REDIS_URL": "redis://" + server.Addr})
	workerLoop(t, base)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	logHas(t, logs.String(), "WARN", evictionWarning)
	logHas(t, logs.String(), "WARN", persistenceWarning)
}

// TestCheckRedisWarnsWithoutClusterNodes: on a Cluster, a user that may not
// run CLUSTER NODES is told to get it (the scripts read it while a slot
// migrates); one that may is told nothing.
func TestCheckRedisWarnsWithoutClusterNodes(t *testing.T) {
	t.Parallel()
	cluster := redistest.StartCluster(t, 3, 0)
	ctx := context.Background()
	for _, addr := range cluster.Addrs() {
		node := redis.NewClient(&redis.Options{Addr: addr})
		err := node.Do(ctx, "acl", "setuser", "nonodes", "on", ">pw", "~*", "&*", "+@all", "-cluster|nodes").Err()
		node.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	const warning = "may not run CLUSTER NODES"
	for _, user := range []string{"default", "nonodes"} {
		var logs logBuffer
		log := slog.New(slog.NewTextHandler(&logs, nil))
		opts := &redis.ClusterOptions{Addrs: cluster.Addrs()}
		if user == "nonodes" {
			opts.Username, opts.Password = user, "pw"
		}
		rdb := redis.NewClusterClient(opts)
		checkRedis(ctx, config{RedisURL: cluster.URL()}, rdb, nil, log)
		rdb.Close()
		if got := strings.Count(logs.String(), warning); (user == "nonodes") != (got == 3) || (user == "default" && got != 0) {
			t.Errorf("user %s: %d warnings %q (want %s):\n%s", user, got, warning, map[bool]string{true: "one per master", false: "none"}[user == "nonodes"], logs.String())
		}
	}
}
