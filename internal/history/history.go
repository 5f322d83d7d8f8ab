// Package history reads a queue's last 24 hours, minute by minute, and its
// latency now (docs/design.md#history). The scripts write the history as
// they change jobs, on the Redis server's clock (lua/history.lua); this
// package decodes it.
package history

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/lua"
)

// MaxMinutes is how far back the history goes: 24 hours.
const MaxMinutes = 1440

// A record's layout, as lua/history.lua writes it: recordBytes, a u32
// stamp (the minute it holds), seven u32 counters and two u48 sums,
// big-endian; one record for each minute that had counts.
const (
	recordBytes = 44
	countersAt  = 4
	sumsAt      = 32
)

// Minute is what happened in a queue in one minute.
type Minute struct {
	At        time.Time // the minute's start
	Enqueued  int64
	Started   int64
	Completed int64
	Failed    int64 // failed attempts that were retried
	Dead      int64
	Cancelled int64
	// Runs are the attempts that ended on their holder's report (complete
	// or fail), whose times RunMS sums; WaitMS sums the Started jobs'
	// waits.
	Runs          int64
	WaitMS, RunMS int64
	WaitMean      float64 // ms; 0 when nothing started
	RunMean       float64 // ms; 0 when nothing ran
}

// Stats is a queue's history and its latency.
type Stats struct {
	Queue string
	// OldestPendingAge is how long the pending job that has waited longest
	// has been claimable; 0 when none is pending.
	OldestPendingAge time.Duration
	// Minutes are the last minutes, oldest first; the last is the current
	// minute, still filling.
	Minutes []Minute
}

// Reader reads queues' history.
type Reader struct {
	prefix  string
	scripts *lua.Runner
}

// NewReader returns a Reader for the queues under prefix.
func NewReader(rdb redis.UniversalClient, prefix string) *Reader {
	return &Reader{prefix: prefix, scripts: lua.NewRunner(rdb)}
}

// Read answers queue's last minutes (1 to MaxMinutes) and its latency.
func (r *Reader) Read(ctx context.Context, queue string, minutes int) (Stats, error) {
	if minutes < 1 || minutes > MaxMinutes {
		return Stats{}, fmt.Errorf("minutes %d: want 1 to %d", minutes, MaxMinutes)
	}
	reply, err := r.read(ctx, queue, minutes)
	if err != nil {
		return Stats{}, err
	}
	out := Decode(reply.window, reply.now, minutes)
	addUnwritten(out, reply.unwritten)
	return Stats{Queue: queue, OldestPendingAge: age(reply.now, reply.oldest), Minutes: out}, nil
}

// Latency answers how long queue's oldest pending job has been claimable
// (0 when none is).
func (r *Reader) Latency(ctx context.Context, queue string) (time.Duration, error) {
	reply, err := r.read(ctx, queue, 0)
	return age(reply.now, reply.oldest), err
}

// statsReply is stats.lua's answer: the server's now and the oldest ready
// time (ms, -1 none), the records of the minutes asked for, and the counts
// the scripts hold that are not in the stats key yet ({minute, counter
// 1..9}, or none).
type statsReply struct {
	now, oldest int64
	window      []byte
	unwritten   []int64
}

// read runs stats.lua, for the last minutes of history (none for 0).
func (r *Reader) read(ctx context.Context, queue string, minutes int) (statsReply, error) {
	reply, err := r.scripts.Reply(ctx, lua.StatsArgs{Minutes: minutes}.Call(keyspace.NewQueue(r.prefix, queue)))
	if err != nil {
		return statsReply{}, err
	}
	items, ok := reply.([]any)
	if !ok || len(items) != 4 {
		return statsReply{}, fmt.Errorf("stats reply: unexpected %T", reply)
	}
	now, ok1 := items[0].(int64)
	oldest, ok2 := items[1].(int64)
	window, ok3 := items[2].(string)
	counts, ok4 := items[3].([]any)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return statsReply{}, fmt.Errorf("stats reply: unexpected %v", items)
	}
	out := statsReply{now: now, oldest: oldest, window: []byte(window)}
	for _, c := range counts {
		n, ok := c.(int64)
		if !ok {
			return statsReply{}, fmt.Errorf("stats reply: unexpected count %v", c)
		}
		out.unwritten = append(out.unwritten, n)
	}
	return out, nil
}

// age is now minus the oldest ready time, both ms; 0 when none (-1) or in
// the future.
func age(now, oldest int64) time.Duration {
	if oldest < 0 || oldest > now {
		return 0
	}
	return time.Duration(now-oldest) * time.Millisecond
}

// Decode reads the n minutes up to the one of now (ms, the server's clock)
// from records, stats.lua's window: each record counts for the minute its
// stamp names, wherever it lies, so a record of another minute (or a
// trailing part of one) is left out, and two of one minute add up. A
// minute without a record reads as zeros.
func Decode(records []byte, now int64, n int) []Minute {
	first := now/60000 - int64(n-1)
	out := make([]Minute, n)
	for i := range out {
		out[i].At = time.UnixMilli((first + int64(i)) * 60000).UTC()
	}
	for ; len(records) >= recordBytes; records = records[recordBytes:] {
		if i := int64(binary.BigEndian.Uint32(records)) - first; i >= 0 && i < int64(n) {
			out[i].add(records)
		}
	}
	for i := range out {
		out[i].setMeans()
	}
	return out
}

// add adds the counts of record b to m's.
func (m *Minute) add(b []byte) {
	c := func(k int) int64 { return int64(binary.BigEndian.Uint32(b[countersAt+4*k:])) }
	m.Enqueued += c(0)
	m.Started += c(1)
	m.Completed += c(2)
	m.Failed += c(3)
	m.Dead += c(4)
	m.Cancelled += c(5)
	m.Runs += c(6)
	m.WaitMS += u48(b[sumsAt:])
	m.RunMS += u48(b[sumsAt+6:])
}

// setMeans sets m's means from its counts and sums.
func (m *Minute) setMeans() {
	m.WaitMean, m.RunMean = 0, 0
	if m.Started > 0 {
		m.WaitMean = float64(m.WaitMS) / float64(m.Started)
	}
	if m.Runs > 0 {
		m.RunMean = float64(m.RunMS) / float64(m.Runs)
	}
}

// addUnwritten adds to its minute of out the counts not written to the
// stats key yet ({minute, counter 1..9}, lua/history.lua's order; none:
// nothing).
func addUnwritten(out []Minute, counts []int64) {
	if len(counts) != 10 || len(out) == 0 {
		return
	}
	i := len(out) - 1 - int((out[len(out)-1].At.Unix()/60)-counts[0])
	if i < 0 || i >= len(out) {
		return
	}
	m := &out[i]
	m.Enqueued += counts[1]
	m.Started += counts[2]
	m.Completed += counts[3]
	m.Failed += counts[4]
	m.Dead += counts[5]
	m.Cancelled += counts[6]
	m.Runs += counts[7]
	m.WaitMS += counts[8]
	m.RunMS += counts[9]
	m.setMeans()
}

func u48(b []byte) int64 {
	var n int64
	for _, x := range b[:6] {
		n = n<<8 | int64(x)
	}
	return n
}
