package history_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/history"
	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/redistest"
	"github.com/echo-mq/echo_mq/lua"
)

// Counts on both sides of a minute's turn are kept exactly, each in its
// minute: a run of enqueues across the turn reads back in full, and the
// stats key holds one record for each minute. It waits for the server's
// clock to near a minute's end: up to a minute.
func TestCountsCrossAMinute(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	type store struct {
		rdb redis.UniversalClient
		run *lua.Runner
		q   keyspace.Queue
		n   int64
	}
	var all []*store
	for name, rdb := range stores(t) {
		s := &store{rdb: rdb, run: lua.NewRunner(rdb), q: keyspace.NewQueue("hist", redistest.Queue(t)+"-"+name)}
		s.run.Load(ctx) // on Redis the calls run as functions from the first on
		all = append(all, s)
	}
	now, err := all[0].rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	turn := now.Truncate(time.Minute).Add(time.Minute)
	if now.After(turn.Add(-1500 * time.Millisecond)) {
		turn = turn.Add(time.Minute)
	}
	time.Sleep(turn.Sub(now) - 1500*time.Millisecond)
	for until := time.Now().Add(3 * time.Second); time.Now().Before(until); time.Sleep(20 * time.Millisecond) {
		for _, s := range all {
			enqueueOne(t, s.run, s.q)
			s.n++
		}
	}
	time.Sleep(1100 * time.Millisecond)
	for _, s := range all {
		enqueueOne(t, s.run, s.q) // a second after the last write: everything is written
		s.n++
		st, err := history.NewReader(s.rdb, "hist").Read(ctx, s.q.Name(), 3)
		if err != nil {
			t.Fatal(err)
		}
		var read, minutes int64
		for _, m := range st.Minutes {
			read += m.Enqueued
			if m.Enqueued > 0 {
				minutes++
			}
		}
		var stored int64
		records := storedRecords(t, s.rdb, s.q)
		for _, c := range records {
			stored += c[0]
		}
		if read != s.n || stored != s.n || minutes != 2 || len(records) != 2 {
			t.Errorf("%s: %d enqueued across a minute's turn: read %d in %d minutes, stored %d in %d records; want all in 2",
				s.q.Name(), s.n, read, minutes, stored, len(records))
		}
	}
}

// A queue pays for the minutes it had traffic: MEMORY USAGE of its stats
// key (its name counted) is under 150 bytes for one minute, grows by 44 to
// 56 bytes a minute, and for a full day is at most the previous release's
// ring. Writes within a minute do not grow it.
func TestMemoryFollowsTraffic(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	run := lua.NewRunner(rdb)
	run.Load(ctx)
	usage := func(key string) int64 {
		t.Helper()
		n, err := rdb.MemoryUsage(ctx, key, 0).Result()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// ring is what the previous release's ring of a queue of the same name's
	// length costs.
	if err := rdb.Set(ctx, "emq:{r0000}:stats", make([]byte, history.MaxMinutes*44), 0).Err(); err != nil {
		t.Fatal(err)
	}
	ring := usage("emq:{r0000}:stats")
	var one int64
	for i, k := range []int64{1, 2, 3, 10, 60, 600, 1440} {
		for attempt := 0; ; attempt++ {
			q := keyspace.NewQueue("emq", fmt.Sprintf("q%d%03d", attempt, i))
			m := serverMinute(t, rdb)
			var seed []byte
			for minute := m - k + 1; minute < m; minute++ {
				seed = append(seed, record(minute, enqueued(1))...)
			}
			setStats(t, rdb, q, seed)
			enqueueOne(t, run, q)
			first := usage(q.Stats())
			time.Sleep(1100 * time.Millisecond)
			enqueueOne(t, run, q) // written a second later, at the offset the library keeps
			got, n := usage(q.Stats()), int64(len(storedRecords(t, rdb, q)))
			if serverMinute(t, rdb) != m {
				if attempt < 3 {
					continue
				}
				t.Fatal("the minute kept turning under the test")
			}
			t.Logf("%d minutes: MEMORY USAGE %d bytes (the previous release's ring: %d)", k, got, ring)
			if n != k || got != first {
				t.Errorf("%d minutes: %d records, MEMORY USAGE %d then %d; want %d records, and no growth within the minute", k, n, first, got, k)
			}
			if k == 1 {
				one = got
				if got >= 150 {
					t.Errorf("one minute's stats cost %d bytes, want under 150", got)
				}
			} else if per := float64(got-one) / float64(k-1); per < 44 || per > 56 {
				t.Errorf("%d minutes cost %d bytes, %.1f a minute over one minute's %d; want 44 to 56", k, got, per, one)
			}
			if got > ring {
				t.Errorf("%d minutes cost %d bytes, more than the ring's %d", k, got, ring)
			}
			break
		}
	}
}

// The offset the library keeps of a queue's record is checked in the same
// BITFIELD that writes at it: when the record there is another minute's
// (the key written anew by another node, or deleted), the counts are taken
// back from it and written where they belong.
func TestAStaleOffsetIsCaught(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	ctx := context.Background()
	run, r := lua.NewRunner(rdb), history.NewReader(rdb, "hist")
	run.Load(ctx)
	for _, tc := range []struct {
		name string
		// before and after are the other minutes' records before the
		// queue's first write and when the offset it keeps is stale.
		before, after []int64
	}{
		{"another record there", []int64{3}, []int64{4, 3}},
		{"past the end", []int64{5, 4, 3}, []int64{3}},
		{"the key deleted", []int64{5, 4, 3}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var q keyspace.Queue
			seed := func(m int64, ago []int64) {
				t.Helper()
				var b []byte
				for _, a := range ago {
					b = append(b, record(m-a, counts{a, a, a, a, a, a, a, 1000 * a, 2000 * a})...)
				}
				setStats(t, rdb, q, b)
			}
			for attempt := 0; ; attempt++ {
				q = keyspace.NewQueue("hist", redistest.Queue(t))
				m := serverMinute(t, rdb)
				seed(m, tc.before)
				enqueueOne(t, run, q) // written at once, its offset kept
				seed(m, tc.after)
				time.Sleep(1100 * time.Millisecond)
				enqueueOne(t, run, q) // written at the stale offset, a second later
				st, err := r.Read(ctx, q.Name(), 10)
				if err != nil {
					t.Fatal(err)
				}
				if serverMinute(t, rdb) != m {
					if attempt < 3 {
						continue
					}
					t.Fatal("the minute kept turning under the test")
				}
				want := map[int64]counts{m: enqueued(1)}
				for _, a := range tc.after {
					want[m-a] = counts{a, a, a, a, a, a, a, 1000 * a, 2000 * a}
				}
				if got := storedRecords(t, rdb, q); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("stored %v, want %v", got, want)
				}
				if got := st.Minutes[9].Enqueued; got != 1 {
					t.Errorf("the current minute read %d enqueued, want 1", got)
				}
				return
			}
		})
	}
}
