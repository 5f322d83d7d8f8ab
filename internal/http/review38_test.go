package http_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/redistest"
	"github.com/echo-mq/echo_mq/lua"
)

// settleOnce runs the reaper's settle of q, events aged out at once: an
// empty queue is forgotten.
func (h *harness) settleOnce(tb testing.TB, q string) {
	tb.Helper()
	settle := lua.SettleArgs{MaxAgeMS: 0}.Call(keyspace.NewQueue(h.prefix, q))
	if _, err := lua.NewRunner(h.rdb).Reply(context.Background(), settle); err != nil {
		tb.Fatal(err)
	}
}

// TestForgottenQueueLeavesNoBatchIndex: a queue left with nothing but a
// stale entry in its batch listing's index (a batch whose keys expired and
// which a release before the index took out of batches alone, during an
// upgrade) is forgotten whole by the reaper: no batches_created is left.
func TestForgottenQueueLeavesNoBatchIndex(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.createBatch(t, q, "b1", false)
		h.finish(t, q, "b1-1") // b1 is done
		// b1's 7 days pass: its keys expire, and an earlier release's
		// create or settle takes it out of batches (it knows no index).
		ctx := context.Background()
		if err := h.rdb.Del(ctx, h.key(q, "batch:b1"), h.key(q, "batch_jobs:b1")).Err(); err != nil {
			t.Fatal(err)
		}
		if err := h.rdb.ZRem(ctx, h.key(q, "batches"), "b1").Err(); err != nil {
			t.Fatal(err)
		}
		must[map[string]int](t, h.do(t, "DELETE", jobPath(q, "b1-1"), nil), http.StatusOK)

		h.settleOnce(t, q)
		if keys := h.keysOf(t, q, ":*"); len(keys) != 0 {
			t.Errorf("keys left once the empty queue was forgotten: %v", keys)
		}
	})
}
