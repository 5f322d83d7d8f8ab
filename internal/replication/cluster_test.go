package replication

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/rediserr"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

// TestAClusterTransactionAfterASKIsNotWaitedFor: a Cluster transaction
// that follows an ASK is sent as ASKING, MULTI, ..., EXEC. A WAIT after
// its EXEC would never be read (the transaction's reader stops at EXEC):
// the transaction would fail, and the connection would go back to the pool
// with WAIT's reply still to come, for the next pipeline to read as its
// own. The hook leaves every transaction unwaited.
func TestAClusterTransactionAfterASKIsNotWaitedFor(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t, 3, 0)
	ctx := context.Background()
	const key = "{review}log"
	src, err := c.Owner(key)
	if err != nil {
		t.Fatal(err)
	}
	nodes := map[string]string{} // addr -> id
	srcClient := redis.NewClient(&redis.Options{Addr: src})
	defer srcClient.Close()
	text, err := srcClient.ClusterNodes(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	var dst string
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		var id, addr, flags string
		fmt.Sscan(line, &id, &addr, &flags)
		addr, _, _ = strings.Cut(addr, "@")
		nodes[addr] = id
		if addr != src && dst == "" && slices.Contains(strings.Split(flags, ","), "master") {
			dst = addr
		}
	}
	slot, err := srcClient.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	dstClient := redis.NewClient(&redis.Options{Addr: dst})
	defer dstClient.Close()
	// The slot half-moved: importing on dst, migrating on src; the key is on
	// neither, so src answers ASK for it.
	if err := dstClient.Do(ctx, "cluster", "setslot", slot, "importing", nodes[src]).Err(); err != nil {
		t.Fatal(err)
	}
	if err := srcClient.Do(ctx, "cluster", "setslot", slot, "migrating", nodes[dst]).Err(); err != nil {
		t.Fatal(err)
	}
	// A key dst owns, to read back through dst's pipeline pool.
	var other string
	for i := 0; other == ""; i++ {
		k := fmt.Sprint("other", i)
		if owner, _ := c.Owner(k); owner == dst {
			other = k
		}
	}
	if err := dstClient.Set(ctx, other, "the value", 0).Err(); err != nil {
		t.Fatal(err)
	}

	cluster := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), MaxRetries: -1, PipelinePoolSize: 1})
	defer cluster.Close()
	cluster.OnNewNode(func(node *redis.Client) {
		Install(node, Config{Replicas: 1, Timeout: 300 * time.Millisecond})
	})
	_, txErr := cluster.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.LPush(ctx, key, "e")
		p.LTrim(ctx, key, 0, 9)
		return nil
	})
	t.Logf("TxPipelined after ASK: %v", txErr)
	if errors.Is(txErr, rediserr.ErrNotAcknowledged) {
		t.Errorf("the transaction, which the hook leaves unwaited, failed with %v", txErr)
	}

	var get *redis.StringCmd
	_, _ = cluster.Pipelined(ctx, func(p redis.Pipeliner) error {
		get = p.Get(ctx, other)
		return nil
	})
	if v, err := get.Result(); v != "the value" || err != nil {
		t.Errorf("GET %s on dst's pipeline connection: %q, %v; want \"the value\" (the connection is out of step)", other, v, err)
	}
}
