package lease_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/echo-mq/echo_mq/internal/admin"
	"github.com/echo-mq/echo_mq/internal/flow"
	"github.com/echo-mq/echo_mq/internal/lease"
)

// flowFill puts settings on the fixture's queue (none when they set no
// limit) and enqueues n jobs spread over groups groups in turn (0: no
// groups), for BenchmarkServerTime's flow control cases.
func (f fixture) flowFill(tb testing.TB, n, groups int, settings flow.Settings) {
	tb.Helper()
	ctx := context.Background()
	if !settings.None() {
		if err := admin.NewService(f.rdb, prefix).SetSettings(ctx, f.queue, settings, "{}", admin.Actor{}); err != nil {
			tb.Fatal(err)
		}
	}
	for done := 0; done < n; {
		batch := make([]lease.NewJob, min(n-done, 1000))
		for i := range batch {
			batch[i] = lease.NewJob{Payload: payload100}
			if groups > 0 {
				batch[i].Group = "g" + strconv.Itoa((done+i)%groups)
			}
		}
		if _, err := f.leases.Enqueue(ctx, f.queue, batch); err != nil {
			tb.Fatal(err)
		}
		done += len(batch)
	}
}
