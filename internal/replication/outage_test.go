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

// TestAnUnacknowledgedClaimGivesItsJobsBack: while the replicas are away,
// a claim runs on the master and is answered 503, so no worker holds its
// jobs. The lease service gives them back at once (a snooze under their
// tokens, the attempt returned): they do not wait out their leases and
// count stalls until they die, claim after claim.
func TestAnUnacknowledgedClaimGivesItsJobsBack(t *testing.T) {
	t.Parallel()
	rdb, master, replica := pair(t, 100*time.Millisecond)
	ctx := context.Background()
	const prefix = "outage"
	queue := redistest.Queue(t)
	leases := lease.NewService(rdb, prefix)
	sweeps := stall.NewService(rdb, prefix)
	if _, err := setUp(t, master, prefix).Enqueue(ctx, queue, []lease.NewJob{{ID: "j1", Payload: json.RawMessage(`{}`)}}); err != nil {
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
	if row[0] != "pending" || row[1] != nil {
		t.Errorf("job j1, never handed to a worker, after two claims answered 503: state, stalled, last_error = %v; want pending, never stalled", row)
	}
}

// TestACancellationCheckIsARead: cancellation.lua writes nothing, so a
// holder's cancellation check is answered while the replicas are away.
func TestACancellationCheckIsARead(t *testing.T) {
	t.Parallel()
	rdb, master, replica := pair(t, 100*time.Millisecond)
	ctx := context.Background()
	queue := redistest.Queue(t)
	leases, setup := lease.NewService(rdb, "outage"), setUp(t, master, "outage")
	if _, err := setup.Enqueue(ctx, queue, []lease.NewJob{{ID: "j1", Payload: json.RawMessage(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	claimed, err := setup.Claim(ctx, queue, lease.ClaimParams{})
	if err != nil || len(claimed.Jobs) != 1 {
		t.Fatalf("claim: %+v, %v", claimed, err)
	}
	replica.Stop()
	if _, err := leases.Cancellation(ctx, queue, "j1", claimed.Jobs[0].Token); err != nil {
		t.Errorf("a cancellation check (a read) with the replica away: %v", err)
	}
}

// TestMinReplicasToWriteIsUnavailable: with min-replicas-to-write N on the
// Redis side (docs/scaling.md asks for it) and too few replicas, Redis
// refuses every script call that may write before it runs (NOREPLICAS):
// Unavailable (503 with Retry-After) and NeverRan.
func TestMinReplicasToWriteIsUnavailable(t *testing.T) {
	t.Parallel()
	server := redistest.StartServer(t, "--min-replicas-to-write", "1")
	rdb := redis.NewClient(&redis.Options{Addr: server.Addr, MaxRetries: -1})
	defer rdb.Close()
	Install(rdb, Config{Replicas: 1, Timeout: 100 * time.Millisecond})
	leases := lease.NewService(rdb, "outage")
	_, err := leases.Enqueue(context.Background(), redistest.Queue(t), []lease.NewJob{{ID: "j1", Payload: json.RawMessage(`{}`)}})
	if err == nil || !rediserr.Unavailable(err) || !rediserr.NeverRan(err) {
		t.Errorf("enqueue refused by min-replicas-to-write: %v; Unavailable %v, NeverRan %v; want an error that is both",
			err, rediserr.Unavailable(err), rediserr.NeverRan(err))
	}
}

// setUp is a lease service on master without the hook, for a test's
// writes before the replica goes: a 100 ms WAIT may be too short for them
// on a busy machine.
func setUp(t *testing.T, master *redistest.Server, prefix string) *lease.Service {
	plain := redis.NewClient(&redis.Options{Addr: master.Addr})
	t.Cleanup(func() { _ = plain.Close() })
	return lease.NewService(plain, prefix)
}
