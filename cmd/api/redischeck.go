package main

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/rediserr"
)

// checkRedis reads, once at start-up, the Redis settings that decide
// whether jobs survive (the eviction policy and persistence) and how much
// memory a job costs (the listpack limit). It warns about a setting that
// loses jobs, notes one that wastes memory, and never stops the service: where CONFIG is
// not allowed (a managed Redis, an ACL user without it) or Redis does not
// answer yet, it says it could not check and goes on. The embedded store
// (no EMQ_REDIS_URL) is skipped: it already says that nothing persists.
func checkRedis(ctx context.Context, cfg config, rdb redis.UniversalClient, master *masterWatch, log *slog.Logger) {
	if cfg.RedisURL == "" {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		err := cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			checkNode(ctx, node, log.With("node", node.Options().Addr))
			checkClusterNodes(ctx, node, log.With("node", node.Options().Addr))
			if cfg.AckReplicas > 0 {
				checkReplicas(ctx, cfg, node, log.With("node", node.Options().Addr))
			}
			return nil
		})
		if err != nil {
			log.Info("Could not check the Redis Cluster's eviction and persistence settings", "error", err)
		}
		return
	}
	if addr := master.Addr(); addr != "" {
		log = log.With("master", addr) // under Sentinel: the master the checks read
	}
	checkNode(ctx, rdb, log)
	if cfg.AckReplicas > 0 {
		checkReplicas(ctx, cfg, rdb, log)
	}
}

// checkReplicas warns when the master has fewer replicas connected than
// EMQ_ACK_REPLICAS asks for: until it has them, every write is answered
// 503. (On a Cluster each master's count is checked the same way.)
func checkReplicas(ctx context.Context, cfg config, node redis.Cmdable, log *slog.Logger) {
	info, err := node.Info(ctx, "replication").Result()
	if err != nil {
		log.Info("Could not count the master's replicas (INFO replication failed)", "error", err)
		return
	}
	n, _ := strconv.Atoi(infoField(info, "connected_slaves"))
	if n < cfg.AckReplicas {
		log.Warn("Redis has fewer replicas connected than EMQ_ACK_REPLICAS asks for: every write is answered 503 until it has them",
			"connected_replicas", n, "ack_replicas", cfg.AckReplicas)
	}
}

// infoField is the value of name in an INFO reply, "" when it has none.
func infoField(info, name string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return ""
}

// checkClusterNodes warns when the service's Redis user may not run
// CLUSTER NODES, which the scripts read when a job's row is missing, to
// tell a slot migrating from a row lost (docs/design.md#resharding): without
// it they take every missing row for one on its way, and a queue with a
// lost row answers 503 until an operator removes the job.
func checkClusterNodes(ctx context.Context, node *redis.Client, log *slog.Logger) {
	if err := node.ClusterNodes(ctx).Err(); rediserr.NoPermission(err) {
		log.Warn("The Redis user may not run CLUSTER NODES: grant it +cluster|nodes, which the scripts read while a slot migrates", "error", err)
	}
}

// checkNode checks one Redis node's eviction policy, persistence and
// listpack limit.
func checkNode(ctx context.Context, rdb redis.Cmdable, log *slog.Logger) {
	checkListpack(ctx, rdb, log)
	settings, err := configGet(ctx, rdb, "maxmemory-policy", "appendonly", "save")
	if err != nil {
		log.Info("Could not check Redis's eviction and persistence settings (CONFIG GET is refused or failed); "+
			"make sure maxmemory-policy is noeviction and persistence is on", "error", err)
		return
	}
	if policy := settings["maxmemory-policy"]; policy != "noeviction" {
		log.Warn("Redis's maxmemory-policy is not noeviction: when Redis is full it evicts keys, and evicted job rows lose jobs silently. "+
			"Set maxmemory-policy noeviction (enqueues then fail with an error instead).", "maxmemory_policy", policy)
	}
	aof := settings["appendonly"] == "yes"
	snapshots := strings.TrimSpace(settings["save"]) != ""
	switch {
	case !aof && !snapshots:
		log.Warn("Redis persistence is off (appendonly no, no save points): a Redis restart loses every job. "+
			"Set appendonly yes (appendfsync everysec or always).", "appendonly", settings["appendonly"], "save", settings["save"])
	case !aof:
		log.Info("Redis persists by RDB snapshots only: a Redis crash loses the jobs changed since the last snapshot. "+
			"appendonly yes keeps them.", "save", settings["save"])
	}
}

// configGet reads each CONFIG parameter on its own (Redis before 7 takes
// one per call), and fails if one is refused or missing from the answer.
func configGet(ctx context.Context, rdb redis.Cmdable, params ...string) (map[string]string, error) {
	out := make(map[string]string, len(params))
	for _, p := range params {
		got, err := rdb.ConfigGet(ctx, p).Result()
		if err != nil {
			return nil, fmt.Errorf("CONFIG GET %s: %w", p, err)
		}
		v, ok := got[p]
		if !ok {
			return nil, fmt.Errorf("CONFIG GET %s: no value in the answer", p)
		}
		out[p] = v
	}
	return out, nil
}

// recommendedListpackValue is the hash-max-listpack-value docs/operating.md
// recommends: a job row whose every value (payload, result, error) is at
// most this long stays one compact listpack.
const recommendedListpackValue = 1024

// checkListpack notes a hash-max-listpack-value below the recommended one:
// Redis then keeps the row of a job whose payload is longer (the default
// limit is 64 bytes) as a hash table, about twice the memory. It is a note,
// not a warning: nothing is lost. Redis before 7 calls the setting
// hash-max-ziplist-value.
func checkListpack(ctx context.Context, rdb redis.Cmdable, log *slog.Logger) {
	var limit string
	for _, name := range []string{"hash-max-listpack-value", "hash-max-ziplist-value"} {
		if got, err := configGet(ctx, rdb, name); err == nil {
			limit = got[name]
			break
		}
	}
	n, err := strconv.Atoi(limit)
	if err != nil || n >= recommendedListpackValue {
		return // not readable (the other checks say so), or large enough
	}
	log.Info(fmt.Sprintf("Redis keeps a job row as a compact listpack only while each value is at most hash-max-listpack-value (%d) bytes: "+
		"rows with longer payloads take about twice the memory. Set hash-max-listpack-value %d to keep rows up to 1 KB compact.",
		n, recommendedListpackValue), "hash_max_listpack_value", n)
}
