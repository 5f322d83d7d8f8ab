// Package events reads the queues' event streams, which the scripts write
// in the same atomic step as each change (docs/design.md#events): one
// queue's stream from a point on, and every active queue's at once, merged
// in order (Merged). The HTTP layer writes what it reads as Server-Sent
// Events; this package is the only one that reads the streams.
package events

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/keyspace"
)

// Entry is one entry of a queue's stream: one state change of the queue or
// of one of its jobs.
type Entry struct {
	// ID is the entry's id, "<ms>-<seq>": the Redis server's time of the
	// change in ms, and its order among the changes of that ms.
	ID string
	// Fields are the entry's fields as the scripts wrote them: kind, job,
	// state, and actor, role, reason, error and count where they apply.
	Fields map[string]string
}

// Field is the value of one of the entry's fields, "" when it has none.
func (e Entry) Field(name string) string { return e.Fields[name] }

// At is the Redis server's time of the change, from the entry's id.
func (e Entry) At() (time.Time, bool) {
	id, ok := ParseID(e.ID)
	if !ok || id.MS > math.MaxInt64 {
		return time.Time{}, false
	}
	return time.UnixMilli(int64(id.MS)), true
}

// ID is a stream entry's id: the Redis server's time in ms and the
// sequence within that ms.
type ID struct{ MS, Seq uint64 }

// ParseID parses an entry id, "<ms>-<seq>".
func ParseID(s string) (ID, bool) {
	a, b, found := strings.Cut(s, "-")
	ms, err1 := strconv.ParseUint(a, 10, 64)
	seq, err2 := strconv.ParseUint(b, 10, 64)
	return ID{ms, seq}, found && err1 == nil && err2 == nil
}

func (id ID) String() string { return fmt.Sprintf("%d-%d", id.MS, id.Seq) }

// Before is the id just before id, so that reading after it starts at id
// ("0-0" stays "0-0": nothing comes before it).
func (id ID) Before() ID {
	switch {
	case id.Seq > 0:
		return ID{id.MS, id.Seq - 1}
	case id.MS > 0:
		return ID{id.MS - 1, math.MaxUint64}
	}
	return id
}

// Compare orders ids as the stream does: -1, 0 or +1.
func (id ID) Compare(other ID) int {
	return cmp.Or(cmp.Compare(id.MS, other.MS), cmp.Compare(id.Seq, other.Seq))
}

// Log reads the event streams under a key prefix,
// "<prefix>:{<queue>}:events", and which queues have them lately (the
// activity index). It holds no connection between calls.
type Log struct {
	rdb      redis.UniversalClient
	prefix   string
	activity *keyspace.Activity
}

// NewLog returns the Log of the queues under prefix.
func NewLog(rdb redis.UniversalClient, prefix string) *Log {
	return &Log{rdb: rdb, prefix: prefix, activity: keyspace.NewActivity(rdb, prefix)}
}

// Read returns up to count entries of queue's stream strictly after
// afterID, oldest first.
func (l *Log) Read(ctx context.Context, queue, afterID string, count int64) ([]Entry, error) {
	msgs, err := l.rdb.XRangeN(ctx, l.key(queue), "("+afterID, "+", count).Result()
	return entriesOf(msgs), err
}

// LastID returns the id of the last entry of queue's stream, "0-0" when the
// stream is empty or absent.
func (l *Log) LastID(ctx context.Context, queue string) (string, error) {
	last, err := l.rdb.XRevRangeN(ctx, l.key(queue), "+", "-", 1).Result()
	if err != nil || len(last) == 0 {
		return "0-0", err
	}
	return last[0].ID, nil
}

// Now returns the Redis server's clock (TIME): the clock that stamps the
// entries.
func (l *Log) Now(ctx context.Context) (time.Time, error) {
	return l.rdb.Time(ctx).Result()
}

// Active returns the queues active since ms (the Redis server's clock) in
// the activity index, the most recently active limit of them, sorted, and
// whether there were more.
func (l *Log) Active(ctx context.Context, ms int64, limit int) ([]string, bool, error) {
	names, more, err := l.activity.Since(ctx, ms, limit)
	slices.Sort(names)
	return names, more, err
}

// LastIDs returns the id of each queue's last entry, "0-0" when its stream
// is empty or absent, in one pipeline: one round trip, or one per node of a
// Cluster, sent at once.
func (l *Log) LastIDs(ctx context.Context, queues []string) (map[string]string, error) {
	cmds := make(map[string]*redis.XMessageSliceCmd, len(queues))
	if err := l.pipeline(ctx, func(p redis.Pipeliner) {
		for _, q := range queues {
			cmds[q] = p.XRevRangeN(ctx, l.key(q), "+", "-", 1)
		}
	}); err != nil {
		return nil, err
	}
	last := make(map[string]string, len(cmds))
	for q, cmd := range cmds {
		last[q] = "0-0"
		if msgs := cmd.Val(); len(msgs) > 0 {
			last[q] = msgs[0].ID
		}
	}
	return last, nil
}

// ReadAfter returns up to count entries of each queue's stream strictly
// after its id in after, in one pipeline of XRANGEs, as LastIDs.
func (l *Log) ReadAfter(ctx context.Context, after map[string]string, count int64) (map[string][]Entry, error) {
	cmds := make(map[string]*redis.XMessageSliceCmd, len(after))
	if err := l.pipeline(ctx, func(p redis.Pipeliner) {
		for q, id := range after {
			cmds[q] = p.XRangeN(ctx, l.key(q), "("+id, "+", count)
		}
	}); err != nil {
		return nil, err
	}
	pages := make(map[string][]Entry, len(cmds))
	for q, cmd := range cmds {
		pages[q] = entriesOf(cmd.Val())
	}
	return pages, nil
}

func (l *Log) key(queue string) string { return keyspace.NewQueue(l.prefix, queue).Events() }

// pipeline sends the commands queue adds in one pipeline, and returns the
// first error of any; none at all sends nothing.
func (l *Log) pipeline(ctx context.Context, queue func(p redis.Pipeliner)) error {
	p := l.rdb.Pipeline()
	queue(p)
	if p.Len() == 0 {
		return nil
	}
	_, err := p.Exec(ctx)
	return err
}

// entriesOf turns stream messages into entries; a field whose value is
// not a string (never written so) is left out.
func entriesOf(msgs []redis.XMessage) []Entry {
	entries := make([]Entry, len(msgs))
	for i, m := range msgs {
		fields := make(map[string]string, len(m.Values))
		for k, v := range m.Values {
			if s, ok := v.(string); ok {
				fields[k] = s
			}
		}
		entries[i] = Entry{ID: m.ID, Fields: fields}
	}
	return entries
}
