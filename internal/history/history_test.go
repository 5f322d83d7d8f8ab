package history_test

import (
	"context"
	"encoding/binary"
	"fmt"
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

// A history that cannot be written (here a stats key of another type)
// costs its counts, never the call: the enqueue answers and its job is
// there, on both stores.
func TestAnUnwritableHistoryLosesOnlyItsCounts(t *testing.T) {
	for name, rdb := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			q := keyspace.NewQueue("hist", redistest.Queue(t))
			if err := rdb.RPush(ctx, q.Stats(), "not a ring").Err(); err != nil {
				t.Fatal(err)
			}
			if _, err := lua.NewRunner(rdb).Reply(ctx, lua.EnqueueArgs{Jobs: []lua.NewJob{{ID: "kept", Payload: "1"}}}.Call(q)); err != nil {
				t.Fatalf("enqueue with an unwritable history: %v, want its reply", err)
			}
			if n, err := rdb.Exists(ctx, q.Job("kept")).Result(); err != nil || n != 1 {
				t.Fatalf("the job's row: %d (%v), want it written", n, err)
			}
			if typ, _ := rdb.Type(ctx, q.Stats()).Result(); typ != "list" {
				t.Errorf("the stats key is a %s now, want it left as it was", typ)
			}
		})
	}
}

// Read answers each minute from its own slot, for a day's window (which
// wraps past the ring's end but at one minute of the day) as for an hour's:
// a slot written 1,000 minutes ago lands 1,000 places before the current
// minute; on both stores.
func TestReadPlacesEachMinute(t *testing.T) {
	for name, rdb := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			q := keyspace.NewQueue("hist", redistest.Queue(t))
			r := history.NewReader(rdb, "hist")
			for attempt := 0; ; attempt++ {
				if _, err := lua.NewRunner(rdb).Reply(ctx, lua.EnqueueArgs{Jobs: []lua.NewJob{{ID: "j" + time.Now().String(), Payload: "1"}}}.Call(q)); err != nil {
					t.Fatal(err)
				}
				minute := time.Now().Unix() / 60
				old := make([]byte, 44)
				binary.BigEndian.PutUint32(old, uint32(minute-1000))
				binary.BigEndian.PutUint32(old[4:], 7) // enqueued
				if err := rdb.SetRange(ctx, q.Stats(), (minute-1000)%history.MaxMinutes*44, string(old)).Err(); err != nil {
					t.Fatal(err)
				}
				day, err := r.Read(ctx, q.Name(), history.MaxMinutes)
				if err != nil {
					t.Fatal(err)
				}
				hour, err := r.Read(ctx, q.Name(), 60)
				if err != nil {
					t.Fatal(err)
				}
				last := day.Minutes[history.MaxMinutes-1]
				if last.At.Unix()/60 != minute || hour.Minutes[59].At != last.At {
					if attempt < 3 {
						continue // the minute turned under the test: again
					}
					t.Fatalf("the current minute is %v, want minute %d", last.At, minute)
				}
				if last.Enqueued < 1 || hour.Minutes[59].Enqueued != last.Enqueued {
					t.Errorf("the current minute enqueued %d (hour's: %d), want the enqueue counted in both", last.Enqueued, hour.Minutes[59].Enqueued)
				}
				if got := day.Minutes[history.MaxMinutes-1-1000]; got.Enqueued != 7 || got.At.Unix()/60 != minute-1000 {
					t.Errorf("1,000 minutes ago: %+v, want the 7 enqueued written there", got)
				}
				return
			}
		})
	}
}

// A delayed job that has come due is claimable (a claim promotes it): the
// latency counts it from its run_at, before anything promotes it.
func TestLatencyCountsADueDelayedJob(t *testing.T) {
	for name, rdb := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			q := keyspace.NewQueue("hist", redistest.Queue(t))
			if _, err := lua.NewRunner(rdb).Reply(ctx, lua.EnqueueArgs{Jobs: []lua.NewJob{{ID: "later", Payload: "1", DelayMS: 1000}}}.Call(q)); err != nil {
				t.Fatal(err)
			}
			r := history.NewReader(rdb, "hist")
			if age, err := r.Latency(ctx, q.Name()); err != nil || age != 0 {
				t.Fatalf("latency before it is due: %v (%v), want 0", age, err)
			}
			time.Sleep(1300 * time.Millisecond)
			age, err := r.Latency(ctx, q.Name())
			if err != nil || age < 250*time.Millisecond || age > time.Minute {
				t.Fatalf("latency of a job due 300 ms ago: %v (%v), want at least that", age, err)
			}
		})
	}
}

// Run as library functions (Redis 7), the scripts write a queue's counts
// to the ring at most once a second; a read answers the counts not written
// yet as well.
func TestCountsAreWrittenWithinASecond(t *testing.T) {
	rdb := redistest.Client(t)
	ctx := context.Background()
	q := keyspace.NewQueue("hist", redistest.Queue(t))
	run, r := lua.NewRunner(rdb), history.NewReader(rdb, "hist")
	run.Load(ctx) // the calls run as functions from the first on
	n := 0
	enqueue := func() {
		t.Helper()
		n++
		if _, err := run.Reply(ctx, lua.EnqueueArgs{Jobs: []lua.NewJob{{ID: fmt.Sprint("j", n), Payload: "1"}}}.Call(q)); err != nil {
			t.Fatal(err)
		}
	}
	// written is the enqueued count the ring holds for minute.
	written := func(minute int64) int64 {
		t.Helper()
		at := minute % history.MaxMinutes * 44
		slot, err := rdb.GetRange(ctx, q.Stats(), at, at+43).Bytes()
		if err != nil || len(slot) != 44 || int64(binary.BigEndian.Uint32(slot)) != minute {
			return 0
		}
		return int64(binary.BigEndian.Uint32(slot[4:]))
	}
	// read is the enqueued count a read answers for minute (-1: another minute).
	read := func(minute int64) int64 {
		t.Helper()
		s, err := r.Read(ctx, q.Name(), 1)
		if err != nil {
			t.Fatal(err)
		}
		if s.Minutes[0].At.Unix()/60 != minute {
			return -1
		}
		return s.Minutes[0].Enqueued
	}
	for attempt := 0; attempt < 3; attempt++ {
		if time.Now().Unix()%60 > 50 {
			time.Sleep(10 * time.Second) // start clear of the minute's turn
		}
		minute := time.Now().Unix() / 60
		enqueue()
		time.Sleep(1100 * time.Millisecond)
		enqueue() // a second since the last write: written
		due := written(minute)
		enqueue() // at once after: held
		held, answered := written(minute), read(minute)
		time.Sleep(1100 * time.Millisecond)
		enqueue() // written, with the one held
		later := written(minute)
		if time.Now().Unix()/60 != minute {
			continue // the minute turned under the test: again
		}
		if due < 2 || held != due || answered != due+1 || later != due+2 || read(minute) != due+2 {
			t.Fatalf("written %d, then %d with one more held (read %d), then %d (read %d); want %d, %d (%d), %d (%d)",
				due, held, answered, later, read(minute), due, due, due+1, due+2, due+2)
		}
		return
	}
	t.Fatal("the minute kept turning under the test")
}
