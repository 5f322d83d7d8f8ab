package history_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/history"
	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/redistest"
	"github.com/echo-mq/echo_mq/lua"
)

// counts are a record's counters in lua/history.lua's order: enqueued,
// started, completed, failed, dead, cancelled, runs, wait_ms, run_ms.
type counts [9]int64

// record is minute's record with counts c, as lua/history.lua lays it out.
func record(minute int64, c counts) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(minute))
	for _, n := range c[:7] {
		b = binary.BigEndian.AppendUint32(b, uint32(n))
	}
	for _, n := range c[7:] {
		b = append(b, byte(n>>40), byte(n>>32), byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	}
	return b
}

// enqueued is a record's counts with n enqueued.
func enqueued(n int64) counts { return counts{n} }

// storedRecords are the records q's stats key holds, by minute, free ones
// (stamped 0) left out; it fails the test unless the key is whole records
// in minute order from the one after the newest (round its end), each
// minute once, and not the previous release's ring's size.
func storedRecords(t testing.TB, rdb redis.UniversalClient, q keyspace.Queue) map[int64]counts {
	t.Helper()
	b, err := rdb.Get(context.Background(), q.Stats()).Bytes()
	if err != nil && err != redis.Nil {
		t.Fatal(err)
	}
	if len(b)%44 != 0 || len(b) == history.MaxMinutes*44 {
		t.Fatalf("the stats key is %d bytes, not records as this release writes them", len(b))
	}
	out := map[int64]counts{}
	var order []int64 // the stamps in the string's order, free ones too
	for ; len(b) > 0; b = b[44:] {
		m := int64(binary.BigEndian.Uint32(b))
		order = append(order, m)
		if m == 0 {
			continue
		}
		if _, ok := out[m]; ok {
			t.Fatalf("the stats key holds minute %d twice", m)
		}
		var c counts
		for k := range 7 {
			c[k] = int64(binary.BigEndian.Uint32(b[4+4*k:]))
		}
		for k := range 2 {
			for _, x := range b[32+6*k : 38+6*k] {
				c[7+k] = c[7+k]<<8 | int64(x)
			}
		}
		out[m] = c
	}
	descents := 0
	for i, m := range order {
		if m < order[(i+len(order)-1)%len(order)] {
			descents++
		}
	}
	if descents > 1 {
		t.Fatalf("the stats key's records are not in minute order round its end: %v", order)
	}
	return out
}

// window is records of the minutes from first to last.
func window(records map[int64]counts, first, last int64) map[int64]counts {
	out := map[int64]counts{}
	for m, c := range records {
		if m >= first && m <= last {
			out[m] = c
		}
	}
	return out
}

// setStats makes b q's stats key, or deletes the key when b is empty.
func setStats(t testing.TB, rdb redis.UniversalClient, q keyspace.Queue, b []byte) {
	t.Helper()
	ctx := context.Background()
	err := rdb.Del(ctx, q.Stats()).Err()
	if len(b) > 0 && err == nil {
		err = rdb.Set(ctx, q.Stats(), b, 0).Err()
	}
	if err != nil {
		t.Fatal(err)
	}
}

// serverMinute is the minute of the store's clock, the one the scripts
// count in.
func serverMinute(t testing.TB, rdb redis.UniversalClient) int64 {
	t.Helper()
	now, err := rdb.Time(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return now.Unix() / 60
}

// enqueueOne enqueues one job of its own to q.
func enqueueOne(t testing.TB, run *lua.Runner, q keyspace.Queue) {
	t.Helper()
	id := fmt.Sprint("j", time.Now().UnixNano())
	if _, err := run.Reply(context.Background(), lua.EnqueueArgs{Jobs: []lua.NewJob{{ID: id, Payload: "1"}}}.Call(q)); err != nil {
		t.Fatal(err)
	}
}

// enqueuedBy are the enqueued counts of minutes, by minute.
func enqueuedBy(minutes []history.Minute) map[int64]int64 {
	out := map[int64]int64{}
	for _, m := range minutes {
		if m.Enqueued != 0 {
			out[m.At.Unix()/60] = m.Enqueued
		}
	}
	return out
}

// A read answers every minute of the day from its record, all its
// counters, for a day's window as for two minutes, and a write that finds
// the string holding records of more than a day and a half ago writes it
// anew with the last day's alone; on both stores.
func TestRecordsKeepTheLastDay(t *testing.T) {
	for name, rdb := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			run, r := lua.NewRunner(rdb), history.NewReader(rdb, "hist")
			full := counts{4, 3, 2, 1, 5, 6, 3, 3000, 9000}
			for attempt := 0; ; attempt++ {
				q := keyspace.NewQueue("hist", redistest.Queue(t)) // each attempt its own: a library holds a queue's counts
				m := serverMinute(t, rdb)
				seed := bytes.Join([][]byte{record(m-2500, enqueued(1)), record(m-1440, enqueued(2)),
					record(m-1439, enqueued(3)), record(m-1000, full), record(m-1, enqueued(5))}, nil)
				if err := rdb.Set(ctx, q.Stats(), seed, 0).Err(); err != nil {
					t.Fatal(err)
				}
				enqueueOne(t, run, q)
				day, err := r.Read(ctx, q.Name(), history.MaxMinutes)
				if err != nil {
					t.Fatal(err)
				}
				two, err := r.Read(ctx, q.Name(), 2)
				if err != nil {
					t.Fatal(err)
				}
				if serverMinute(t, rdb) != m {
					if attempt < 3 {
						continue // the minute turned under the test: again
					}
					t.Fatal("the minute kept turning under the test")
				}
				want := map[int64]counts{m - 1439: enqueued(3), m - 1000: full, m - 1: enqueued(5), m: enqueued(1)}
				if got := storedRecords(t, rdb, q); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("stored %v, want %v", got, want)
				}
				if got, want := enqueuedBy(day.Minutes), map[int64]int64{m - 1439: 3, m - 1000: 4, m - 1: 5, m: 1}; fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("a day's read: enqueued %v, want %v", got, want)
				}
				if day.Minutes[0].At.Unix()/60 != m-1439 || day.Minutes[history.MaxMinutes-1].At.Unix()/60 != m {
					t.Errorf("a day's read runs from %v to %v, want minutes %d to %d", day.Minutes[0].At, day.Minutes[history.MaxMinutes-1].At, m-1439, m)
				}
				got := day.Minutes[history.MaxMinutes-1-1000]
				if got.Enqueued != 4 || got.Started != 3 || got.Completed != 2 || got.Failed != 1 || got.Dead != 5 ||
					got.Cancelled != 6 || got.Runs != 3 || got.WaitMS != 3000 || got.RunMS != 9000 || got.WaitMean != 1000 || got.RunMean != 3000 {
					t.Errorf("1,000 minutes ago: %+v, want the record's counters", got)
				}
				if got, want := enqueuedBy(two.Minutes), map[int64]int64{m - 1: 5, m: 1}; fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("two minutes' read: enqueued %v, want %v", got, want)
				}
				return
			}
		})
	}
}

// A new minute's record takes the place of the record after the newest,
// round the string's end, when that one is free or more than a day old:
// the string keeps its size, and only 44 bytes are written. When it is a
// record of the last day the string grows, and when it is more than a day
// and a half old the string is written anew without the old records; on
// both stores.
func TestANewMinuteTakesAnOldRecordsPlace(t *testing.T) {
	const free, now = -1, 0
	for name, rdb := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			run := lua.NewRunner(rdb)
			for _, tc := range []struct {
				name string
				// seed and want are the string's records, in its order, before
				// and after a write of the current minute: each by how many
				// minutes ago, or free.
				seed, want []int64
			}{
				{"a free one", []int64{3, 1, free, free}, []int64{3, 1, now, free}},
				{"an old one", []int64{1500, 1000, 1}, []int64{now, 1000, 1}},
				{"round the end", []int64{1, 1600, 5}, []int64{1, now, 5}},
				{"a recent one: the string grows", []int64{3, 2, 1}, []int64{3, 2, 1, now}},
				{"a very old one: written anew", []int64{2500, 1000, 1}, []int64{1000, 1, now}},
			} {
				for attempt := 0; ; attempt++ {
					q := keyspace.NewQueue("hist", redistest.Queue(t))
					m := serverMinute(t, rdb)
					var seed []byte
					for _, ago := range tc.seed {
						if ago == free {
							seed = append(seed, make([]byte, 44)...)
						} else {
							seed = append(seed, record(m-ago, enqueued(1))...)
						}
					}
					setStats(t, rdb, q, seed)
					enqueueOne(t, run, q)
					b, err := rdb.Get(ctx, q.Stats()).Bytes()
					if err != nil {
						t.Fatal(err)
					}
					if serverMinute(t, rdb) != m {
						if attempt < 3 {
							continue
						}
						t.Fatal("the minute kept turning under the test")
					}
					var got []int64
					for ; len(b) >= 44; b = b[44:] {
						if stamp := int64(binary.BigEndian.Uint32(b)); stamp == 0 {
							got = append(got, free)
						} else {
							got = append(got, m-stamp)
						}
					}
					if len(b) != 0 || !slices.Equal(got, tc.want) {
						t.Errorf("%s: the string holds %v (minutes ago, -1 free) and %d bytes more, want %v", tc.name, got, len(b), tc.want)
					}
					break
				}
			}
		})
	}
}

// A queue written by the previous release has its ring: 1,440 slots of 44
// bytes, slot = minute % 1,440, zeros where never written. It reads as it
// is, and its first write of a new minute makes it records, with the
// counts of the last 1,440 minutes kept (the current one's too); on both
// stores.
func TestTheOldRingIsReadAndConverted(t *testing.T) {
	for name, rdb := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			run, r := lua.NewRunner(rdb), history.NewReader(rdb, "hist")
			for attempt := 0; ; attempt++ {
				q := keyspace.NewQueue("hist", redistest.Queue(t))
				m := serverMinute(t, rdb)
				if m%history.MaxMinutes == history.MaxMinutes-1 {
					// The ring's last slot is the current minute's: a write
					// adds to it in place, and converts at the next minute.
					time.Sleep(time.Duration(60-time.Now().Unix()%60) * time.Second)
					continue
				}
				ring := make([]byte, history.MaxMinutes*44)
				for minute, c := range map[int64]counts{m - 1500: enqueued(9), m - 1000: enqueued(7), m - 1: enqueued(5), m: enqueued(2)} {
					copy(ring[minute%history.MaxMinutes*44:], record(minute, c))
				}
				if err := rdb.Set(ctx, q.Stats(), ring, 0).Err(); err != nil {
					t.Fatal(err)
				}
				before, err := r.Read(ctx, q.Name(), history.MaxMinutes)
				if err != nil {
					t.Fatal(err)
				}
				enqueueOne(t, run, q)
				after, err := r.Read(ctx, q.Name(), history.MaxMinutes)
				if err != nil {
					t.Fatal(err)
				}
				if serverMinute(t, rdb) != m {
					if attempt < 3 {
						continue // the minute turned under the test: again
					}
					t.Fatal("the minute kept turning under the test")
				}
				if got, want := enqueuedBy(before.Minutes), map[int64]int64{m - 1000: 7, m - 1: 5, m: 2}; fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("the ring read: enqueued %v, want %v", got, want)
				}
				if got, want := enqueuedBy(after.Minutes), map[int64]int64{m - 1000: 7, m - 1: 5, m: 3}; fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("read after a write: enqueued %v, want %v", got, want)
				}
				want := map[int64]counts{m - 1000: enqueued(7), m - 1: enqueued(5), m: enqueued(3)}
				if got := storedRecords(t, rdb, q); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("stored after a write %v, want %v", got, want)
				}
				return
			}
		})
	}
}

// Decode counts each record in the minute its stamp names, wherever it
// lies: two of one minute add up, and records outside the window, zeros
// and a trailing part of a record are left out.
func TestDecodePlacesRecordsByTheirStamp(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 10, 30, 15, 0, time.UTC).UnixMilli()
	m := now / 60000
	records := bytes.Join([][]byte{
		record(m, counts{1, 2, 0, 0, 0, 0, 1, 40, 10}),
		record(m-2, enqueued(5)),
		make([]byte, 44),          // zeros: never written
		record(m-3, enqueued(50)), // before the window
		record(m+1, enqueued(60)), // ahead of the clock
		record(m, counts{2, 2, 0, 0, 0, 0, 1, 20, 30}),
		record(m-1, enqueued(7))[:20],
	}, nil)
	out := history.Decode(records, now, 3)
	if got, want := enqueuedBy(out), map[int64]int64{m - 2: 5, m: 3}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("enqueued %v, want %v", got, want)
	}
	if c := out[2]; c.Started != 4 || c.Runs != 2 || c.WaitMS != 60 || c.RunMS != 40 || c.WaitMean != 15 || c.RunMean != 20 {
		t.Errorf("the current minute %+v, want its two records added", c)
	}
}
