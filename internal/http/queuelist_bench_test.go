package http_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

// BenchmarkQueueList measures GET /queues?limit=100 over 100,000 queues
// (docs/design.md#keyspace): the names written to the registry directly
// (ZADD, 10,000 a call), as 1,000 tenants of 100 queues each, plus a few
// real queues with jobs, on a redis-server of the benchmark's own, the
// router behind an httptest.Server and a keep-alive client. One op is 200
// pages: 50 walking the cursor from the first name, 50 from the middle of
// the registry, and 100 with prefixes (10 pages each of ten prefixes that
// each hold 1,000 or 10,000 queues). It reports each page's latency,
// p50-ms and p99-ms (and max-ms), over all the pages of the run:
//
//	go test -run '^$' -bench QueueList -benchtime 5x ./internal/http
func BenchmarkQueueList(b *testing.B) {
	rdb := redis.NewClient(&redis.Options{Addr: redistest.StartServer(b).Addr})
	b.Cleanup(func() { rdb.Close() })
	h := newHarness(b, rdb)
	ctx := context.Background()
	const tenants, perTenant = 1000, 100
	members := make([]redis.Z, 0, 10_000)
	for i := range tenants * perTenant {
		members = append(members, redis.Z{Member: fmt.Sprintf("tenant-%03d.queue-%03d", i/perTenant, i%perTenant)})
		if len(members) == cap(members) {
			if err := rdb.ZAdd(ctx, keyspace.QueueNamesKey(h.prefix), members...).Err(); err != nil {
				b.Fatal(err)
			}
			members = members[:0]
		}
	}
	srv := httptest.NewServer(h.handler)
	b.Cleanup(srv.Close)
	client := srv.Client()
	for _, q := range []string{"emails", "tenant-500.queue-000", "zz-last"} {
		h.add(b, q, "a", "b")
	}
	if n := rdb.ZCard(ctx, keyspace.QueueNamesKey(h.prefix)).Val(); n != tenants*perTenant+2 {
		b.Fatalf("the registry holds %d names, want %d", n, tenants*perTenant+2)
	}

	// walk reads pages of the queues with prefix from cursor, each timed.
	var took []time.Duration
	walk := func(prefix, cursor string, pages int) {
		for range pages {
			query := url.Values{"limit": {"100"}, "prefix": {prefix}, "cursor": {cursor}}
			start := time.Now()
			resp, err := client.Get(srv.URL + "/queues?" + query.Encode())
			if err != nil {
				b.Fatal(err)
			}
			var page struct {
				Queues     []json.RawMessage `json:"queues"`
				NextCursor *string           `json:"next_cursor"`
			}
			err = json.NewDecoder(resp.Body).Decode(&page)
			resp.Body.Close()
			took = append(took, time.Since(start))
			if err != nil || resp.StatusCode != http.StatusOK || len(page.Queues) != 100 {
				b.Fatalf("GET /queues?%s: %d, %d queues, %v", query.Encode(), resp.StatusCode, len(page.Queues), err)
			}
			if page.NextCursor != nil { // nil on a prefix's last page
				cursor = *page.NextCursor
			}
		}
	}
	for b.Loop() {
		walk("", "", 50)
		walk("", "tenant-499.queue-099", 50)
		for _, prefix := range []string{"tenant-1", "tenant-23", "tenant-5", "tenant-77", "tenant-9",
			"tenant-0", "tenant-31", "tenant-6", "tenant-84", "tenant-2"} {
			walk(prefix, "", 10)
		}
	}
	slices.Sort(took)
	at := func(p float64) float64 { return float64(took[int(p*float64(len(took)-1))]) / 1e6 }
	b.ReportMetric(at(0.5), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
	b.ReportMetric(at(1), "max-ms")
	b.ReportMetric(float64(len(took))/float64(b.N), "pages/op")
}
