package http_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/redistest"
)

func TestH7ReindexCost(t *testing.T) {
	h := newHarness(t, closeLater(t, redis.NewClient(&redis.Options{Addr: redistest.Addr()})))
	q := redistest.Queue(t)
	ctx := context.Background()
	h.createBatch(t, q, "seed", false)
	for _, n := range []int{10000, 100000} {
		pipe := h.rdb.Pipeline()
		for i := 0; i < n; i++ {
			id := fmt.Sprintf("b%07d", i)
			pipe.HSet(ctx, h.key(q, "batch:"+id), "state", "done", "total", 1, "completed", 1, "dead", 0, "cancelled", 0, "left", 0, "created_at", 1700000000000+int64(i), "finished_at", 1700000000000+int64(i), "success", 1)
			pipe.ZAdd(ctx, h.key(q, "batches"), redis.Z{Score: 1e15, Member: id})
			if i%1000 == 999 {
				if _, err := pipe.Exec(ctx); err != nil {
					t.Fatal(err)
				}
			}
		}
		pipe.Exec(ctx)
		start := time.Now()
		page := h.listBatches(t, q, "", 20)
		t.Logf("%d batches: first listing %v (%d)", n, time.Since(start), len(page.Batches))
		start = time.Now()
		h.listBatches(t, q, "", 20)
		t.Logf("%d batches: second listing %v", n, time.Since(start))
		h.rdb.Del(ctx, h.key(q, "batches_created"))
	}
}
