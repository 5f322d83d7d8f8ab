package history_test

import (
	"context"
	"encoding/binary"
	"os"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/history"
	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/redistest"
	"github.com/echo-mq/echo_mq/lua"
)

func TestMain(m *testing.M) { os.Exit(redistest.Run(m)) }

// stores are the two ways the scripts write the ring: BITFIELD on Redis,
// GETRANGE/SETRANGE on the embedded store.
func stores(t *testing.T) map[string]redis.UniversalClient {
	emb := redis.NewClient(&redis.Options{Addr: miniredis.RunT(t).Addr()})
	t.Cleanup(func() { emb.Close() })
	return map[string]redis.UniversalClient{"redis": redistest.Client(t), "embedded": emb}
}

// A slot left from a day before (its stamp another minute, its counters
// high) is written afresh by the minute's first count, and the ring keeps
// its fixed size; on both stores.
func TestAStaleSlotStartsAfresh(t *testing.T) {
	for name, rdb := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			q := keyspace.NewQueue("hist", redistest.Queue(t))
			run := lua.NewRunner(rdb)
			enqueue := func(id string) {
				t.Helper()
				if _, err := run.Reply(ctx, lua.EnqueueArgs{Jobs: []lua.NewJob{{ID: id, Payload: "1"}}}.Call(q)); err != nil {
					t.Fatal(err)
				}
			}
			enqueue("first")
			ring, err := rdb.Get(ctx, q.Stats()).Bytes()
			if err != nil || len(ring) != 63360 {
				t.Fatalf("ring of %d bytes (%v), want 63,360", len(ring), err)
			}
			// Make the current slot look a day old, with counts of its own.
			minute := time.Now().Unix() / 60
			old := make([]byte, 44)
			binary.BigEndian.PutUint32(old, uint32(minute-history.MaxMinutes))
			for k := 4; k < 44; k++ {
				old[k] = 0x11
			}
			for _, m := range []int64{minute, minute + 1} { // either side of a minute's turn
				if err := rdb.SetRange(ctx, q.Stats(), int64(int(m%history.MaxMinutes)*44), string(old)).Err(); err != nil {
					t.Fatal(err)
				}
			}
			enqueue("second")
			st, err := history.NewReader(rdb, "hist").Read(ctx, q.Name(), 2)
			if err != nil {
				t.Fatal(err)
			}
			var enq, other int64
			for _, m := range st.Minutes {
				enq += m.Enqueued
				other += m.Started + m.Completed + m.Failed + m.Dead + m.Cancelled
			}
			if enq != 1 || other != 0 {
				t.Fatalf("after a stale slot: %d enqueued and %d else, want 1 and 0 (%+v)", enq, other, st.Minutes)
			}
			if n, _ := rdb.StrLen(ctx, q.Stats()).Result(); n != 63360 {
				t.Errorf("the ring is %d bytes, want 63,360", n)
			}
		})
	}
}

// Decode reads zeros from an empty ring, one minute apart, the last the
// current one.
func TestDecodeAnEmptyRing(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 30, 15, 0, time.UTC).UnixMilli()
	out := history.Decode(nil, now, 3)
	if len(out) != 3 || !out[2].At.Equal(time.Date(2026, 12, 1, 10, 30, 0, 0, time.UTC)) ||
		!out[0].At.Equal(time.Date(2026, 12, 1, 10, 28, 0, 0, time.UTC)) {
		t.Fatalf("minutes %+v", out)
	}
	for _, m := range out {
		if m.Enqueued != 0 || m.WaitMean != 0 {
			t.Errorf("an empty ring counted %+v", m)
		}
	}
}
