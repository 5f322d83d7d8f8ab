package history_test

import (
	"context"
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

// stores are the two ways the scripts write the history: as library
// functions on Redis (BITFIELD at the offset they remember), by EVAL on
// the embedded store (GETRANGE/SETRANGE, SET).
func stores(t *testing.T) map[string]redis.UniversalClient {
	emb := redis.NewClient(&redis.Options{Addr: miniredis.RunT(t).Addr()})
	t.Cleanup(func() { emb.Close() })
	return map[string]redis.UniversalClient{"redis": redistest.Client(t), "embedded": emb}
}

// Decode reads zeros where there are no records, one minute apart, the
// last the current one.
func TestDecodeNoRecords(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 30, 15, 0, time.UTC).UnixMilli()
	out := history.Decode(nil, now, 3)
	if len(out) != 3 || !out[2].At.Equal(time.Date(2026, 12, 1, 10, 30, 0, 0, time.UTC)) ||
		!out[0].At.Equal(time.Date(2026, 12, 1, 10, 28, 0, 0, time.UTC)) {
		t.Fatalf("minutes %+v", out)
	}
	for _, m := range out {
		if m.Enqueued != 0 || m.WaitMean != 0 {
			t.Errorf("no records counted %+v", m)
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
// to the stats key at most once a second; a read answers the counts not written
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
	// written is the enqueued count the stats key holds for minute.
	written := func(minute int64) int64 {
		t.Helper()
		return storedRecords(t, rdb, q)[minute][0]
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
