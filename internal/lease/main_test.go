package lease_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/admin"
	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/internal/lease"
	"github.com/echo-mq/echo_mq/internal/redistest"
	"github.com/echo-mq/echo_mq/internal/stall"
)

func TestMain(m *testing.M) { os.Exit(redistest.Run(m)) }

const prefix = "emqtest"

// fixture is a lease and a stall service on the shared test Redis, and a
// queue of the test's own.
type fixture struct {
	leases *lease.Service
	stall  *stall.Service
	admin  *admin.Service
	rdb    redis.UniversalClient
	queue  string
}

func newFixture(t testing.TB) fixture {
	t.Helper()
	rdb := redistest.Client(t)
	return fixture{leases: lease.NewService(rdb, prefix), stall: stall.NewService(rdb, prefix),
		admin: admin.NewService(rdb, prefix), rdb: rdb, queue: redistest.Queue(t)}
}

// enqueue adds one job with payload {"n": i} and returns it.
func (f fixture) enqueue(t testing.TB, nj lease.NewJob) job.Job {
	t.Helper()
	if nj.Payload == nil {
		nj.Payload = json.RawMessage(`{"n":1}`)
	}
	out, err := f.leases.Enqueue(context.Background(), f.queue, []lease.NewJob{nj})
	if err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	return out[0].Job
}

// claimOne claims exactly one job with the given lease.
func (f fixture) claimOne(t testing.TB, leaseFor time.Duration) job.Job {
	t.Helper()
	c, err := f.leases.Claim(context.Background(), f.queue, lease.ClaimParams{Lease: leaseFor})
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	if len(c.Jobs) != 1 {
		t.Fatalf("Claim got %d jobs, want 1", len(c.Jobs))
	}
	return c.Jobs[0]
}

// lapse claims a job with a 100 ms lease and waits until the lease lapsed.
func (f fixture) lapse(t testing.TB) job.Job {
	t.Helper()
	j := f.claimOne(t, 100*time.Millisecond)
	time.Sleep(150 * time.Millisecond)
	return j
}

// stallParams let a job stall many times without being dead-lettered.
var stallParams = stall.SweepParams{MaxStalled: 1000}

// sweep runs the stalled sweep with max_stalled 2.
func (f fixture) sweep(t testing.TB) stall.Swept {
	t.Helper()
	s, err := f.stall.Sweep(context.Background(), f.queue, stall.SweepParams{MaxStalled: 2})
	if err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	return s
}

// get reads a job's row.
func (f fixture) get(t testing.TB, id string) job.Job {
	t.Helper()
	j, err := f.admin.Get(context.Background(), f.queue, id)
	if err != nil {
		t.Fatalf("Get %s: %v", id, err)
	}
	return j
}

// wantErr checks that err is want (nil for success).
func wantErr(t testing.TB, err, want error) {
	t.Helper()
	if want == nil && err != nil {
		t.Fatalf("got error %v, want success", err)
	}
	if want != nil && !errors.Is(err, want) {
		t.Fatalf("got error %v, want %v", err, want)
	}
}
