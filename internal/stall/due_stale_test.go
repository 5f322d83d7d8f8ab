package stall_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/lease"
	"github.com/echo-mq/echo_mq/internal/redistest"
	"github.com/echo-mq/echo_mq/internal/stall"
)

// TestTwoDatabasesKeepTheirOwnDueIndex: a Functions library's Lua state
// is one per server, not per database, so nothing the scripts keep there
// may stand for what a queue's keys say: two deployments on databases 0
// and 1 of one Redis with the same prefix and queue name each have their
// lapsed lease recovered within two passes.
func TestTwoDatabasesKeepTheirOwnDueIndex(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	db0 := redis.NewClient(&redis.Options{Addr: srv.Addr, DB: 0})
	db1 := redis.NewClient(&redis.Options{Addr: srv.Addr, DB: 1})
	t.Cleanup(func() { db0.Close(); db1.Close() })
	ctx := context.Background()
	const q = "emails"
	r := stall.NewReaper(stall.NewService(db1, prefix), stall.ReaperConfig{Interval: 20 * time.Millisecond})
	pass(t, r) // database 1's audit: nothing yet

	l0 := lease.NewService(db0, prefix)
	if _, err := l0.Enqueue(ctx, q, []lease.NewJob{{ID: "a"}}); err != nil {
		t.Fatal(err)
	}
	if c, err := l0.Claim(ctx, q, lease.ClaimParams{Count: 1, Lease: 50 * time.Millisecond}); err != nil || len(c.Jobs) != 1 {
		t.Fatalf("claim in database 0: %v, %v", c, err)
	}

	l1 := lease.NewService(db1, prefix)
	if _, err := l1.Enqueue(ctx, q, []lease.NewJob{{ID: "a"}}); err != nil {
		t.Fatal(err)
	}
	if c, err := l1.Claim(ctx, q, lease.ClaimParams{Count: 1, Lease: 100 * time.Millisecond}); err != nil || len(c.Jobs) != 1 {
		t.Fatalf("claim in database 1: %v, %v", c, err)
	}
	if err := db1.ZScore(ctx, keyspace.DueKey(prefix), keyspace.NewQueue(prefix, q).Base()).Err(); err != nil {
		t.Errorf("database 1's due index does not hold the queue with a lease: %v", err)
	}
	time.Sleep(150 * time.Millisecond)
	swept := pass(t, r)
	time.Sleep(30 * time.Millisecond)
	swept.Recovered = append(swept.Recovered, pass(t, r).Recovered...)
	if len(swept.Recovered) != 1 {
		t.Errorf("database 1: two passes after its lease lapsed recovered %v, want [a]", swept.Recovered)
	}
}

// TestASettleByEvalKeepsTheIndexRight: where FCALL is refused for
// maxmemory the Runner runs a script by EVAL (lua/run.go), whose Lua state
// is not the library's. A settle so run takes the queue out of the index;
// the next claim (FCALL again) must put it back, and its lapsed lease be
// recovered.
func TestASettleByEvalKeepsTheIndexRight(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	const q = "work"
	svc := stall.NewService(rdb, prefix)
	r := stall.NewReaper(svc, stall.ReaperConfig{Interval: 20 * time.Millisecond})
	pass(t, r) // the audit: nothing yet
	leases := lease.NewService(rdb, prefix)
	// More than 100 events, so that settle does not compact the stream
	// (RESTORE is refused over maxmemory).
	jobs := make([]lease.NewJob, 120)
	for i := range jobs {
		jobs[i] = lease.NewJob{ID: "j" + string(rune('A'+i/26)) + string(rune('a'+i%26))}
	}
	if _, err := leases.Enqueue(ctx, q, jobs); err != nil {
		t.Fatal(err)
	}
	c, err := leases.Claim(ctx, q, lease.ClaimParams{Count: 1, Lease: 50 * time.Millisecond})
	if err != nil || len(c.Jobs) != 1 {
		t.Fatalf("claim: %v, %v", c, err)
	}
	if _, _, err := leases.Complete(ctx, q, c.Jobs[0].ID, c.Jobs[0].Token, nil, nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(80 * time.Millisecond) // the queue's time in the index has come
	// Over maxmemory, as the reaper would meet it: its settle runs by EVAL.
	if err := rdb.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	s, err := svc.Settle(ctx, q, time.Hour)
	rdb.ConfigSet(ctx, "maxmemory", "0")
	if err != nil {
		t.Fatalf("settle over maxmemory: %v", err)
	}
	if s.Next != -1 {
		t.Fatalf("settle: %+v, want the queue out of the index (only pending jobs)", s)
	}
	c, err = leases.Claim(ctx, q, lease.ClaimParams{Count: 1, Lease: 100 * time.Millisecond})
	if err != nil || len(c.Jobs) != 1 {
		t.Fatalf("claim: %v, %v", c, err)
	}
	if err := rdb.ZScore(ctx, keyspace.DueKey(prefix), keyspace.NewQueue(prefix, q).Base()).Err(); err != nil {
		t.Errorf("the due index does not hold the queue with a lease: %v", err)
	}
	time.Sleep(150 * time.Millisecond)
	swept := pass(t, r)
	time.Sleep(30 * time.Millisecond)
	swept.Recovered = append(swept.Recovered, pass(t, r).Recovered...)
	if len(swept.Recovered) != 1 {
		t.Errorf("two passes after the lease lapsed recovered %v, want [%s]", swept.Recovered, c.Jobs[0].ID)
	}
}
