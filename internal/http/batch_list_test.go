package http_test

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/redistest"
	"github.com/echo-mq/echo_mq/lua"
)

// batchPage is a BatchPage as the API answers it.
type batchPage struct {
	Batches    []batchView `json:"batches"`
	NextCursor *string     `json:"next_cursor"`
}

// listBatches reads one page of q's batches: limit 0 for the default.
func (h *harness) listBatches(tb testing.TB, q, cursor string, limit int) batchPage {
	tb.Helper()
	query := url.Values{}
	if cursor != "" {
		query.Set("cursor", cursor)
	}
	if limit != 0 {
		query.Set("limit", strconv.Itoa(limit))
	}
	return must[batchPage](tb, h.do(tb, "GET", batchesPath(q)+"?"+query.Encode(), nil), http.StatusOK)
}

// allBatches reads every page of q's batches, limit per page, and the
// ids in the order given.
func (h *harness) allBatches(tb testing.TB, q string, limit int) []string {
	tb.Helper()
	var ids []string
	cursor := ""
	for range 100 {
		page := h.listBatches(tb, q, cursor, limit)
		if len(page.Batches) > limit {
			tb.Fatalf("a page of %d batches, limit %d", len(page.Batches), limit)
		}
		for _, b := range page.Batches {
			ids = append(ids, b.ID)
		}
		if page.NextCursor == nil {
			return ids
		}
		if len(page.Batches) == 0 {
			tb.Fatal("an empty page with a next cursor")
		}
		cursor = *page.NextCursor
	}
	tb.Fatal("100 pages and still a next cursor")
	return nil
}

// createBatch creates batch id of q with one job, open when open.
func (h *harness) createBatch(tb testing.TB, q, id string, open bool) batchView {
	tb.Helper()
	body := map[string]any{"id": id, "open": open, "jobs": []any{depJob(id + "-1")}}
	return must[batchView](tb, h.do(tb, "POST", batchesPath(q), body), http.StatusCreated)
}

// TestBatchList: GET /queues/{q}/batches pages a queue's batches newest
// first, each as GET of it answers it; cursors are stable while batches
// are made; a bad cursor or limit is 400 naming it; an expired batch is
// passed over; batches made before the index are listed; obliterate
// leaves nothing.
func TestBatchList(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		if page := h.listBatches(t, q, "", 0); len(page.Batches) != 0 || page.NextCursor != nil {
			t.Fatalf("a queue without batches lists %+v", page)
		}
		for _, id := range []string{"b0", "b1", "b2", "b3", "b4"} {
			h.createBatch(t, q, id, id == "b4")
		}
		h.kill(t, q, "b0-1") // b0 is done: counted dead

		first := h.listBatches(t, q, "", 2)
		if ids := idsOf(first.Batches); !slices.Equal(ids, []string{"b4", "b3"}) || first.NextCursor == nil {
			t.Fatalf("first page %v (next %v), want [b4 b3] and a next cursor", ids, first.NextCursor)
		}
		h.createBatch(t, q, "b5", false) // made meanwhile: before the first page, not in the next ones
		rest := h.allBatchesFrom(t, q, *first.NextCursor, 2)
		if !slices.Equal(rest, []string{"b2", "b1", "b0"}) {
			t.Fatalf("the pages after the first %v, want [b2 b1 b0]", rest)
		}
		if all := h.allBatches(t, q, 100); !slices.Equal(all, []string{"b5", "b4", "b3", "b2", "b1", "b0"}) {
			t.Fatalf("one page of all %v, want newest first", all)
		}

		// Each batch as GET answers it: live counts, state, callback.
		for _, b := range h.listBatches(t, q, "", 0).Batches {
			got := must[batchView](t, h.do(t, "GET", batchesPath(q, b.ID), nil), http.StatusOK)
			if !reflect.DeepEqual(b, got) {
				t.Errorf("listed %+v, GET answers %+v", b, got)
			}
		}
		page := h.listBatches(t, q, "", 0).Batches
		if byID := mapOf(page); byID["b0"].State != "done" || byID["b0"].Counts["dead"] != 1 ||
			byID["b4"].State != "open" || byID["b1"].Counts["pending"] != 1 {
			t.Errorf("listed %+v, want b0 done with 1 dead, b4 open, b1 with 1 pending", page)
		}

		for _, bad := range []struct{ query, field string }{
			{"cursor=nope", "cursor"}, {"cursor=eC9iMQ", "cursor"}, {"cursor=MTIvYSBi", "cursor"}, // "x/b1", "12/a b"
			{"limit=0", "limit"}, {"limit=101", "limit"}, {"limit=x", "limit"},
		} {
			p := wantProblem(t, h.do(t, "GET", batchesPath(q)+"?"+bad.query, nil), http.StatusBadRequest, "EMQINVALID")
			wantField(t, p, bad.field)
		}

		// As if b2's 7 days had passed and the reaper not come yet: passed over.
		ctx := context.Background()
		if err := h.rdb.Del(ctx, h.key(q, "batch:b2"), h.key(q, "batch_jobs:b2")).Err(); err != nil {
			t.Fatal(err)
		}
		if all := h.allBatches(t, q, 2); !slices.Equal(all, []string{"b5", "b4", "b3", "b1", "b0"}) {
			t.Errorf("with b2 expired: %v, want it passed over", all)
		}
		// Its entry goes at the next create once its time in batches passed.
		if err := h.rdb.ZAdd(ctx, h.key(q, "batches"), redis.Z{Score: 1, Member: "b2"}).Err(); err != nil {
			t.Fatal(err)
		}
		h.createBatch(t, q, "b6", false)
		if err := h.rdb.ZScore(ctx, h.key(q, "batches_created"), "b2").Err(); !errors.Is(err, redis.Nil) {
			t.Errorf("the expired b2 in the index after a create: %v, want it gone", err)
		}
		// And at the reaper's settle of the queue, as b1's time passes.
		if err := h.rdb.Del(ctx, h.key(q, "batch:b1"), h.key(q, "batch_jobs:b1")).Err(); err != nil {
			t.Fatal(err)
		}
		if err := h.rdb.ZAdd(ctx, h.key(q, "batches"), redis.Z{Score: 1, Member: "b1"}).Err(); err != nil {
			t.Fatal(err)
		}
		settle := lua.SettleArgs{MaxAgeMS: 86_400_000}.Call(keyspace.NewQueue(h.prefix, q))
		if _, err := lua.NewRunner(h.rdb).Reply(ctx, settle); err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{"batches", "batches_created"} {
			if err := h.rdb.ZScore(ctx, h.key(q, key), "b1").Err(); !errors.Is(err, redis.Nil) {
				t.Errorf("the expired b1 in %s after a settle: %v, want it gone", key, err)
			}
		}

		// A queue whose batches a release before the index made: indexed
		// by the listing.
		if err := h.rdb.Del(ctx, h.key(q, "batches_created")).Err(); err != nil {
			t.Fatal(err)
		}
		if all := h.allBatches(t, q, 4); !slices.Equal(all, []string{"b6", "b5", "b4", "b3", "b0"}) {
			t.Errorf("without the index: %v, want every batch newest first", all)
		}

		must[map[string]int](t, h.do(t, "DELETE", "/queues/"+q+"?force=true", nil), http.StatusOK)
		if keys := h.keysOf(t, q, ":*"); len(keys) != 0 {
			t.Errorf("keys left after the obliterate: %v", keys)
		}
		if page := h.listBatches(t, q, "", 0); len(page.Batches) != 0 {
			t.Errorf("after the obliterate: %+v", page)
		}
	})
}

// allBatchesFrom reads every page of q's batches from cursor on.
func (h *harness) allBatchesFrom(tb testing.TB, q, cursor string, limit int) []string {
	tb.Helper()
	var ids []string
	for {
		page := h.listBatches(tb, q, cursor, limit)
		ids = append(ids, idsOf(page.Batches)...)
		if page.NextCursor == nil {
			return ids
		}
		cursor = *page.NextCursor
	}
}

func idsOf(list []batchView) []string {
	ids := make([]string, len(list))
	for i, b := range list {
		ids[i] = b.ID
	}
	return ids
}

func mapOf(list []batchView) map[string]batchView {
	m := make(map[string]batchView, len(list))
	for _, b := range list {
		m[b.ID] = b
	}
	return m
}

// A queue with many batches the index does not hold is indexed a step of
// at most 1,000 batches per listing, never all at once, and the walk ends:
// its place in meta goes, and every batch is listed.
func TestBatchListReindexesInSteps(t *testing.T) {
	forEachBackend(t, func(t *testing.T, h *harness) {
		const q, n = "reindexed", 2500
		ctx := context.Background()
		// Batches as a release before the index made them: in batches alone.
		pipe := h.rdb.Pipeline()
		for i := range n {
			id := "b" + strconv.Itoa(i)
			pipe.HSet(ctx, h.key(q, "batch:"+id), "state", "open", "total", 0, "created_at", 1_000_000+i)
			pipe.ZAdd(ctx, h.key(q, "batches"), redis.Z{Score: math.Inf(1), Member: id})
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		indexed := func() int64 { return h.rdb.ZCard(ctx, h.key(q, "batches_created")).Val() }
		h.listBatches(t, q, "", 1)
		if got := indexed(); got != 1000 {
			t.Fatalf("after one listing the index holds %d batches, want the step of 1000", got)
		}
		for range 3 {
			h.listBatches(t, q, "", 1)
		}
		if got := indexed(); got != n {
			t.Fatalf("after four listings the index holds %d batches, want %d", got, n)
		}
		// Then the walk of the index, for members batches no longer holds:
		// two steps more (the first was the fourth listing), and it is over.
		walking := func() bool {
			return !errors.Is(h.rdb.HGet(ctx, h.key(q, "meta"), "batches_reindex").Err(), redis.Nil)
		}
		for range 2 {
			if !walking() {
				t.Fatal("the walk ended before it walked the index")
			}
			h.listBatches(t, q, "", 1)
		}
		if walking() {
			t.Errorf("the walk's place is kept after the walk of the index")
		}
		all := h.allBatches(t, q, 100)
		if len(all) != n || all[0] != "b2499" || all[n-1] != "b0" {
			t.Errorf("listed %d batches from %v to %v, want %d newest first", len(all), all[0], all[len(all)-1], n)
		}
	})
}
