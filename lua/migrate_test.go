package lua

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

// migration is one slot being moved by hand between two masters of a
// cluster of the test's own, in the steps `redis-cli --cluster reshard`
// takes.
type migration struct {
	t        *testing.T
	slot     int64
	src, dst *redis.Client
	dstAddr  string
	all      []*redis.Client
}

func startMigration(t *testing.T, cluster *redistest.Cluster, key string) *migration {
	t.Helper()
	ctx := context.Background()
	srcAddr, err := cluster.Owner(key)
	if err != nil {
		t.Fatal(err)
	}
	m := &migration{t: t}
	for _, addr := range cluster.Addrs() {
		c := redis.NewClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { c.Close() })
		m.all = append(m.all, c)
		switch {
		case addr == srcAddr:
			m.src = c
		case m.dst == nil:
			m.dst, m.dstAddr = c, addr
		}
	}
	m.slot = m.src.ClusterKeySlot(ctx, key).Val()
	m.must(m.dst.Do(ctx, "cluster", "setslot", m.slot, "importing", m.id(m.src)).Err())
	m.must(m.src.Do(ctx, "cluster", "setslot", m.slot, "migrating", m.id(m.dst)).Err())
	return m
}

func (m *migration) id(c *redis.Client) string {
	id, err := c.Do(context.Background(), "cluster", "myid").Text()
	m.must(err)
	return id
}

func (m *migration) must(err error) {
	m.t.Helper()
	if err != nil {
		m.t.Fatal(err)
	}
}

// move migrates keys from the source to the destination.
func (m *migration) move(keys ...string) {
	m.t.Helper()
	host, port, _ := strings.Cut(m.dstAddr, ":")
	args := []any{"migrate", host, port, "", 0, 5000, "keys"}
	for _, k := range keys {
		args = append(args, k)
	}
	m.must(m.src.Do(context.Background(), args...).Err())
}

// finish gives the slot to the destination on every master.
func (m *migration) finish() {
	m.t.Helper()
	id := m.id(m.dst)
	for _, c := range append([]*redis.Client{m.dst, m.src}, m.all...) {
		m.must(c.Do(context.Background(), "cluster", "setslot", m.slot, "node", id).Err())
	}
}

// TestScriptsStopWholeWhileTheirSlotMigrates moves a queue's slot key by
// key and runs a claim at each step where its keys are split: a row it
// finds through the pending set still on the other node. The claim must
// answer TRYAGAIN having written nothing, on the node handing the slot over
// (the row has left) as on the node taking it (the row has not come yet);
// and once every key has moved it claims there.
func TestScriptsStopWholeWhileTheirSlotMigrates(t *testing.T) {
	t.Parallel()
	cluster := redistest.StartCluster(t, 3, 0)
	rdb := cluster.Client(t)
	run := NewRunner(rdb)
	ctx := context.Background()
	q := keyspace.NewQueue("migrate", redistest.Queue(t))
	jobs := []NewJob{{ID: "a", Payload: "1"}, {ID: "b", Payload: "2"}, {ID: "c", Payload: "3"}}
	if err := run.Run(ctx, EnqueueArgs{Jobs: jobs}.Call(q)).Err(); err != nil {
		t.Fatal(err)
	}
	// One claimed job, so that every key the claim declares exists and
	// Redis's own check lets it run.
	claim := ClaimArgs{Count: 1, LeaseMS: 60000}.Call(q)
	if err := run.Run(ctx, claim).Err(); err != nil {
		t.Fatal(err)
	}
	unchanged := func(c *redis.Client, where string) {
		t.Helper()
		var pending, active *redis.IntCmd
		_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.Do(ctx, "asking") // the node taking the slot answers for it only so
			pending = p.ZCard(ctx, q.Set("pending"))
			p.Do(ctx, "asking")
			active = p.ZCard(ctx, q.Set("active"))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if pending.Val() != 2 || active.Val() != 1 {
			t.Errorf("%s: %d pending and %d active after the refused claim, want 2 and 1", where, pending.Val(), active.Val())
		}
	}
	claimTwo := ClaimArgs{Count: 2, LeaseMS: 60000}.Call(q)
	refused := func(where, id string) {
		t.Helper()
		err := run.Run(ctx, claimTwo).Err()
		if !redis.HasErrorPrefix(err, "TRYAGAIN") || !strings.Contains(err.Error(), "job "+id) {
			t.Fatalf("%s: claim answered %v, want the script's TRYAGAIN for job %s", where, err, id)
		}
	}

	m := startMigration(t, cluster, q.Meta())
	m.move(q.Job("b"))
	refused("the row has left", "b")
	unchanged(m.src, "source")

	m.move(q.Meta(), q.Set("pending"), q.Set("active"), q.Events(), q.Stats(), q.Job("a"), keyspace.SlotDueKey(q.Prefix(), q.Name()))
	refused("the sets have come, a row not yet", "c")
	unchanged(m.dst, "destination")
	// A user that may not read CLUSTER NODES gets the same: a row that is
	// missing is taken for one on its way, never dropped.
	for _, node := range m.all {
		m.must(node.Do(ctx, "acl", "setuser", "nonodes", "on", ">pw", "~*", "&*", "+@all", "-cluster|nodes").Err())
	}
	restricted := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.Addrs(), Username: "nonodes", Password: "pw"})
	t.Cleanup(func() { restricted.Close() })
	if err := NewRunner(restricted).Run(ctx, claimTwo).Err(); !redis.HasErrorPrefix(err, "TRYAGAIN") {
		t.Fatalf("claim by a user without CLUSTER NODES answered %v, want TRYAGAIN", err)
	}
	unchanged(m.dst, "destination, after the restricted user's claim")

	m.move(q.Job("c"))
	got, err := run.Run(ctx, claimTwo).Slice()
	if err != nil {
		t.Fatalf("claim with every key moved: %v", err)
	}
	if claimed := got[1].([]any); len(claimed) != 2 || claimed[0].([]any)[0] != "b" || claimed[1].([]any)[0] != "c" {
		t.Errorf("claim with every key moved got %v, want jobs b and c", got[1])
	}
	m.finish()
	if n := rdb.ZCard(ctx, q.Set("active")).Val(); n != 3 {
		t.Errorf("after the slot moved: %d active, want 3", n)
	}
}

// TestFlowControlStopsWholeWhileItsSlotMigrates moves the slot of a queue
// with groups: while this node moves a slot, a claim and a complete of a
// grouped job answer TRYAGAIN (flow.lua's flow_here) having written
// nothing, since the flow control keys they would touch are not declared;
// once the slot has moved they run on the node that took it.
func TestFlowControlStopsWholeWhileItsSlotMigrates(t *testing.T) {
	t.Parallel()
	cluster := redistest.StartCluster(t, 3, 0)
	rdb := cluster.Client(t)
	run := NewRunner(rdb)
	ctx := context.Background()
	q := keyspace.NewQueue("migrate", redistest.Queue(t))
	jobs := []NewJob{{ID: "a", Payload: "1", Group: "g"}, {ID: "b", Payload: "2", Group: "g"}}
	if err := run.Run(ctx, EnqueueArgs{Jobs: jobs}.Call(q)).Err(); err != nil {
		t.Fatal(err)
	}
	got, err := run.Run(ctx, ClaimArgs{Count: 1, LeaseMS: 60000}.Call(q)).Slice()
	if err != nil {
		t.Fatal(err)
	}
	held, err := job.Parse("q", got[1].([]any)[0])
	if err != nil {
		t.Fatal(err)
	}
	snapshot := func() string {
		var b strings.Builder
		for _, key := range append(q.Keys(), q.Job("a"), q.Job("b"), keyspace.SlotDueKey(q.Prefix(), q.Name())) {
			dump, _ := rdb.Dump(ctx, key).Result()
			b.WriteString(key + "=" + dump + ";")
		}
		return b.String()
	}
	before := snapshot()

	m := startMigration(t, cluster, q.Meta())
	for _, c := range []Call{
		ClaimArgs{Count: 1, LeaseMS: 60000}.Call(q),
		CompleteArgs{ID: "a", Token: held.Token}.Call(q),
	} {
		// The claim's declared keys all exist, so only flow_here stops it;
		// the complete may be stopped by Redis first (its completed set
		// does not exist yet): TRYAGAIN either way.
		err := run.Run(ctx, c).Err()
		if !redis.HasErrorPrefix(err, "TRYAGAIN") || (c.Script() == Claim && !strings.Contains(err.Error(), "flow control")) {
			t.Fatalf("%s while the slot migrates answered %v, want TRYAGAIN", c.Script().Name(), err)
		}
	}
	if after := snapshot(); after != before {
		t.Fatal("a refused call changed the queue's keys")
	}
	var keys []string
	for _, key := range append(q.Keys(), q.Job("a"), q.Job("b"), keyspace.SlotDueKey(q.Prefix(), q.Name())) {
		if rdb.Exists(ctx, key).Val() == 1 {
			keys = append(keys, key)
		}
	}
	m.move(keys...)
	m.finish()
	if err := run.Run(ctx, CompleteArgs{ID: "a", Token: held.Token}.Call(q)).Err(); err != nil {
		t.Fatalf("complete once the slot moved: %v", err)
	}
	if n := rdb.HGet(ctx, q.Flow(), "a:g").Val(); n != "0" {
		t.Fatalf("group g's active count after its job completed: %q, want 0", n)
	}
}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
