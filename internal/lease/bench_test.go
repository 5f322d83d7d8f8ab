package lease_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/lease"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

// The benchmarks run each script through go-redis against the test's
// redis-server, one call at a time. BenchmarkPing is the baseline of the
// same run: one round trip that does nothing. Compare the others to it:
//
//	go test -run '^$' -bench . -count 3 ./internal/lease

func BenchmarkPing(b *testing.B) {
	rdb := redistest.Client(b)
	ctx := context.Background()
	for b.Loop() {
		if err := rdb.Ping(ctx).Err(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEnqueue(b *testing.B) {
	f := newFixture(b)
	ctx := context.Background()
	payload := []byte(`{"to":"ada@example.com","template":"welcome","n":12345}`)
	for b.Loop() {
		if _, err := f.leases.Enqueue(ctx, f.queue, []lease.NewJob{{Payload: payload}}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLifecycle is one job's enqueue, claim and complete: three scripts.
func BenchmarkLifecycle(b *testing.B) {
	f := newFixture(b)
	ctx := context.Background()
	payload := []byte(`{"n":1}`)
	for b.Loop() {
		if _, err := f.leases.Enqueue(ctx, f.queue, []lease.NewJob{{Payload: payload}}); err != nil {
			b.Fatal(err)
		}
		c, err := f.leases.Claim(ctx, f.queue, lease.ClaimParams{})
		if err != nil || len(c.Jobs) != 1 {
			b.Fatalf("claim: %v %d", err, len(c.Jobs))
		}
		if _, _, err := f.leases.Complete(ctx, f.queue, c.Jobs[0].ID, c.Jobs[0].Token, nil, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkExtend(b *testing.B) {
	f := newFixture(b)
	f.enqueue(b, lease.NewJob{ID: "a"})
	j := f.claimOne(b, time.Hour)
	ctx := context.Background()
	for b.Loop() {
		if _, err := f.leases.Extend(ctx, f.queue, "a", lease.ExtendParams{Token: j.Token, Lease: time.Hour}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSweepAmongActive sweeps 10 lapsed jobs among 10,000 live ones:
// the cost follows the lapsed, not the active.
func BenchmarkSweepAmongActive(b *testing.B) {
	for _, active := range []int{0, 10_000} {
		b.Run(fmt.Sprintf("active=%d", active), func(b *testing.B) {
			f := newFixture(b)
			ctx := context.Background()
			if active > 0 {
				f.fill(b, active, nil)
				if _, err := f.leases.Claim(ctx, f.queue, lease.ClaimParams{Count: 100, Lease: time.Hour}); err != nil {
					b.Fatal(err)
				}
				for range active/100 - 1 {
					if _, err := f.leases.Claim(ctx, f.queue, lease.ClaimParams{Count: 100, Lease: time.Hour}); err != nil {
						b.Fatal(err)
					}
				}
			}
			for b.Loop() {
				b.StopTimer()
				f.fill(b, 10, nil)
				if _, err := f.leases.Claim(ctx, f.queue, lease.ClaimParams{Count: 10, Lease: 100 * time.Millisecond}); err != nil {
					b.Fatal(err)
				}
				time.Sleep(110 * time.Millisecond)
				b.StartTimer()
				s, err := f.stall.Sweep(ctx, f.queue, stallParams)
				if err != nil || len(s.Recovered) != 10 {
					b.Fatalf("sweep: %v %+v", err, s)
				}
				b.StopTimer()
				c, err := f.leases.Claim(ctx, f.queue, lease.ClaimParams{Count: 10, Lease: time.Hour})
				for _, j := range c.Jobs {
					if _, _, err := f.leases.Complete(ctx, f.queue, j.ID, j.Token, nil, nil); err != nil {
						b.Fatal(err)
					}
				}
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}
