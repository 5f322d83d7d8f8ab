package client_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/echo-mq/echo_mq/client"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

// ListBatches pages a queue's batches newest first, each as Batch answers
// it; a cursor the service did not give out is ErrInvalid.
func TestListBatches(t *testing.T) {
	t.Parallel()
	c, q, ctx := newClient(t), redistest.Queue(t), context.Background()
	if page, next, err := c.ListBatches(ctx, q, "", 0); err != nil || len(page) != 0 || next != "" {
		t.Fatalf("ListBatches of a queue with none: %v, %q, %v", page, next, err)
	}
	for _, id := range []string{"a", "b", "c"} {
		req := client.CreateBatchRequest{ID: id, Jobs: []client.EnqueueRequest{{ID: id + "-1", Payload: 1}}}
		if _, _, err := c.CreateBatch(ctx, q, req); err != nil {
			t.Fatal(err)
		}
	}
	var ids []string
	cursor := ""
	for range 3 {
		page, next, err := c.ListBatches(ctx, q, cursor, 2)
		if err != nil || len(page) > 2 {
			t.Fatalf("ListBatches: %v, %v", page, err)
		}
		for _, b := range page {
			ids = append(ids, b.ID)
			if b.Queue != q || b.State != client.BatchRunning || b.Counts != (client.BatchCounts{Pending: 1}) {
				t.Errorf("listed %+v, want running with its job pending", b)
			}
		}
		if cursor = next; cursor == "" {
			break
		}
	}
	if !slices.Equal(ids, []string{"c", "b", "a"}) || cursor != "" {
		t.Fatalf("listed %v (cursor %q), want [c b a] and no next page", ids, cursor)
	}
	if _, _, err := c.ListBatches(ctx, q, "nope", 0); !errors.Is(err, client.ErrInvalid) {
		t.Fatalf("a bad cursor: %v, want ErrInvalid", err)
	}
}
