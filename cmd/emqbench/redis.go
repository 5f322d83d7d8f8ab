package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/redisurl"
)

// connect returns a client for -redis as the service makes one for
// EMQ_REDIS_URL: one node for one URL, a Cluster for several
// comma-separated seed URLs, Sentinel's master for a redis+sentinel:// URL. poolSize is per node, so that every goroutine
// of a run can hold a connection to whichever node its queue lives on.
func connect(urls string, poolSize int) (redis.UniversalClient, error) {
	target, err := redisurl.Parse(urls)
	switch {
	case err != nil:
		return nil, fmt.Errorf("-redis: %w", err)
	case target.Node != nil:
		target.Node.PoolSize = poolSize
		return redis.NewClient(target.Node), nil
	case target.Sentinel != nil:
		target.Sentinel.PoolSize = poolSize
		return redis.NewFailoverClient(target.Sentinel), nil
	}
	target.Cluster.PoolSize = poolSize
	return redis.NewClusterClient(target.Cluster), nil
}

// nodeInfo is one section of INFO from every node: the one node of a plain
// client, each master and replica of a Cluster (INFO through a Cluster
// client reaches one node picked at random). Nodes come in address order.
func nodeInfo(ctx context.Context, rdb redis.UniversalClient, section string) ([]addrInfo, error) {
	cluster, ok := rdb.(*redis.ClusterClient)
	if !ok {
		info, err := rdb.Info(ctx, section).Result()
		return []addrInfo{{addr: addrOf(rdb), info: info}}, err
	}
	var mu sync.Mutex
	var out []addrInfo
	err := cluster.ForEachShard(ctx, func(ctx context.Context, node *redis.Client) error {
		info, err := node.Info(ctx, section).Result()
		mu.Lock()
		defer mu.Unlock()
		out = append(out, addrInfo{addr: node.Options().Addr, info: info})
		return err
	})
	slices.SortFunc(out, func(a, b addrInfo) int { return strings.Compare(a.addr, b.addr) })
	return out, err
}

// addrInfo is one node's INFO reply.
type addrInfo struct{ addr, info string }

// addrOf is the address of a plain client's node.
func addrOf(rdb redis.UniversalClient) string {
	if c, ok := rdb.(*redis.Client); ok {
		return c.Options().Addr
	}
	return "?"
}

// redisCPU is how many microseconds of CPU Redis has used since it
// started (INFO cpu: user + system, its network work included), summed
// over every node of a Cluster, or -1 when unknown. CPU, not command time:
// on a machine whose cores are shared, a command's wall time also counts
// the time Redis waited for one.
func redisCPU(ctx context.Context, rdb redis.UniversalClient) int64 {
	if rdb == nil {
		return -1
	}
	nodes, err := nodeInfo(ctx, rdb, "cpu")
	if err != nil {
		return -1
	}
	var total int64
	for _, n := range nodes {
		us, err := cpuMicros(n.info)
		if err != nil {
			return -1
		}
		total += us
	}
	return total
}

// cpuMicros reads used_cpu_user + used_cpu_sys of an INFO cpu reply.
func cpuMicros(info string) (int64, error) {
	var total float64
	for _, field := range []string{"used_cpu_user", "used_cpu_sys"} {
		seconds, err := strconv.ParseFloat(infoField(info, field), 64)
		if err != nil {
			return 0, errors.Join(fmt.Errorf("INFO cpu: %s", field), err)
		}
		total += seconds
	}
	return int64(total * 1e6), nil
}
