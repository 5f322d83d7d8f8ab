package replication

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/lease"
	"github.com/echo-mq/echo_mq/internal/rediserr"
	"github.com/echo-mq/echo_mq/internal/redistest"
	"github.com/echo-mq/echo_mq/internal/stall"
)

// While the replicas are away, every claim runs on the master and is
// answered 503: the job is leased to nobody. Its lease lapses, the sweep
// counts a stall and puts it at the front of pending, the worker's next
// claim takes it again (503 again): at max_stalled (2) it is dead, though
// no worker ever held it.
func TestReviewReplicaOutageKillsJobsThroughUnansweredClaims(t *testing.T) {
	rdb, master, replica := pair(t, 100*time.Millisecond)
	ctx := context.Background()
	const prefix = "review"
	queue := redistest.Queue(t)
	leases := lease.NewService(rdb, prefix)
	sweeps := stall.NewService(rdb, prefix)
	if _, err := leases.Enqueue(ctx, queue, []lease.NewJob{{ID: "j1", Payload: json.RawMessage(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	replica.Stop()

	for attempt := 1; attempt <= 2; attempt++ {
		claimed, err := leases.Claim(ctx, queue, lease.ClaimParams{Lease: 200 * time.Millisecond})
		if !errors.Is(err, rediserr.ErrNotAcknowledged) {
			t.Fatalf("claim %d with the replica away: %+v, %v; want ErrNotAcknowledged (503)", attempt, claimed, err)
		}
		time.Sleep(400 * time.Millisecond) // the lease lapses
		swept, err := sweeps.Sweep(ctx, queue, stall.SweepParams{})
		t.Logf("sweep %d: %+v, %v", attempt, swept, err) // the reaper's write is unacknowledged too, but it ran
	}
	onMaster := redis.NewClient(&redis.Options{Addr: master.Addr})
	defer onMaster.Close()
	row, err := onMaster.HMGet(ctx, keyspace.NewQueue(prefix, queue).Job("j1"), "state", "stalled", "last_error").Result()
	if err != nil {
		t.Fatal(err)
	}
	if row[0] == "dead" {
		t.Errorf("job j1, never handed to a worker, is %v after two claims answered 503: state, stalled, last_error = %v", row[0], row)
	}
}

// cancellation.lua writes nothing, but it is not in lua's readOnly: a
// holder's cancellation check answers 503 while the replicas are away.
func TestReviewCancellationCheckIsWaitedFor(t *testing.T) {
	rdb, _, replica := pair(t, 100*time.Millisecond)
	ctx := context.Background()
	queue := redistest.Queue(t)
	leases := lease.NewService(rdb, "review")
	if _, err := leases.Enqueue(ctx, queue, []lease.NewJob{{ID: "j1", Payload: json.RawMessage(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	claimed, err := leases.Claim(ctx, queue, lease.ClaimParams{})
	if err != nil || len(claimed.Jobs) != 1 {
		t.Fatalf("claim: %+v, %v", claimed, err)
	}
	replica.Stop()
	if _, err := leases.Cancellation(ctx, queue, "j1", claimed.Jobs[0].Token); err != nil {
		t.Errorf("a cancellation check (a read) with the replica away: %v", err)
	}
}
