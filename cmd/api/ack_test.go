package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

// TestAckReplicasOnAClusterWithoutReplicas: on a Cluster whose masters
// have no replica, EMQ_ACK_REPLICAS=1 answers every write 503 with
// Retry-After and a detail that says why, warns at start-up, and still
// answers reads and /readyz.
func TestAckReplicasOnAClusterWithoutReplicas(t *testing.T) {
	t.Parallel()
	cluster := redistest.SharedCluster(t)
	base, logs, stop := startService(t, map[string]string{"EMQ_REDIS_URL": cluster.URL(), "EMQ_PREFIX": "noack",
		"EMQ_ACK_REPLICAS": "1", "EMQ_ACK_TIMEOUT": "50ms"})
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	})
	q := redistest.Queue(t)
	for range 2 { // a repeat is refused alike: the replicas are still missing
		a := mustCall(t, "POST", base+"/queues/"+q+"/jobs", `{"id":"a","payload":1}`, 503, nil)
		if a.Header.Get("Retry-After") == "" || !strings.Contains(string(a.Body), "EMQUNAVAILABLE") ||
			!strings.Contains(string(a.Body), "replicas") {
			t.Errorf("enqueue without replicas: %s (Retry-After %q); want 503 EMQUNAVAILABLE naming the replicas, with Retry-After",
				a, a.Header.Get("Retry-After"))
		}
	}
	mustCall(t, "GET", base+"/queues/"+q, "", 200, nil)
	mustCall(t, "GET", base+"/queues", "", 200, nil)
	mustCall(t, "GET", base+"/queues/"+q+"/jobs?state=pending", "", 200, nil)
	mustCall(t, "GET", base+"/readyz", "", 200, nil)
	if !strings.Contains(logs.String(), "fewer replicas connected than EMQ_ACK_REPLICAS") {
		t.Error("no start-up warning that the masters lack the replicas EMQ_ACK_REPLICAS asks for")
	}
}

// TestAckReplicasOnAClusterWithReplicas: on a Cluster whose masters each
// have a replica, EMQ_ACK_REPLICAS=1 answers writes, and each job a batch
// enqueue answered is on a replica at once: every master waited for its
// own.
func TestAckReplicasOnAClusterWithReplicas(t *testing.T) {
	t.Parallel()
	cluster := redistest.StartCluster(t, 3, 1)
	base, _, stop := startService(t, map[string]string{"EMQ_REDIS_URL": cluster.URL(), "EMQ_PREFIX": "acked",
		"EMQ_ACK_REPLICAS": "1", "EMQ_ACK_TIMEOUT": "5s"})
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	})
	ctx := context.Background()
	var replicas []*redis.Conn // READONLY: a Cluster's replica answers for its master's slots
	for _, n := range cluster.Nodes {
		rdb := newRedisClient(t, n.Addr)
		if role, err := rdb.Do(ctx, "ROLE").Slice(); err == nil && role[0] == "slave" {
			conn := rdb.Conn()
			t.Cleanup(func() { _ = conn.Close() })
			if err := conn.ReadOnly(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			replicas = append(replicas, conn)
		}
	}
	if len(replicas) != 3 {
		t.Fatalf("replicas %v, want 3", replicas)
	}
	queues := []string{redistest.Queue(t), redistest.Queue(t), redistest.Queue(t), redistest.Queue(t)}
	for _, q := range queues {
		mustCall(t, "POST", base+"/queues/"+q+"/jobs/batch", crashBatch(0, 50), 200, nil)
		var held heldJobs
		mustCall(t, "POST", base+"/queues/"+q+"/claim", `{"count":10}`, 200, &held)
		for i := range 50 {
			if !onAReplica(ctx, replicas, keyspace.NewQueue("acked", q).Job(crashID(i))) {
				t.Fatalf("job %s of %s was answered but is on no replica", crashID(i), q)
			}
		}
		var counts queueCounts
		mustCall(t, "GET", base+"/queues/"+q, "", 200, &counts)
		if counts.Counts["active"] != int64(len(held.Jobs)) || len(held.Jobs) != 10 {
			t.Errorf("%s: claimed %d, counts %v; want 10 active", q, len(held.Jobs), counts.Counts)
		}
	}
	a := mustCall(t, "GET", base+"/readyz", "", 200, nil)
	var h map[string]any
	if json.Unmarshal(a.Body, &h) != nil || h["redis_master"] != nil {
		t.Errorf("/readyz on a Cluster: %s; want no redis_master (there is no one master)", a)
	}
}

// onAReplica reports whether one of replicas holds key (the others
// answer MOVED).
func onAReplica(ctx context.Context, replicas []*redis.Conn, key string) bool {
	for _, conn := range replicas {
		if n, err := conn.Exists(ctx, key).Result(); err == nil && n == 1 {
			return true
		}
	}
	return false
}
