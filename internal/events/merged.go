package events

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/echo-mq/echo_mq/internal/keyspace"
)

// Slack is how far before a point in time the merged reading looks for
// activity and for a joining queue's entries. It covers the activity
// index's TouchEvery (a queue's score may be that much older than its
// change), the services' estimates of the Redis server's clock, and the
// background work that records its activity after its change (a push
// delivery, after the receiver's answer).
const Slack = keyspace.TouchEvery + 25*time.Second

// Merged is where one merged reading of the active queues' streams is in
// each of them. It tails the queues of the activity index active since it
// opened (less Slack), at most limit of them, the most recently active:
// each one there at the opening from after its last entry then, and a
// queue that joins later from the opening, or, when the reading has
// looked at the index since, from Slack before it last did. A queue that
// leaves the index (obliterated, or idle for keyspace.ActiveWindow) is let
// go.
type Merged struct {
	log      *Log
	limit    int
	openMS   int64             // the Redis server's time of the opening, ms
	openedAt time.Time         // this process's time of the opening (monotonic)
	opened   ID                // the id just before the opening
	checked  int64             // the server's time (as estimated) of the last read of the index, ms
	after    map[string]string // each merged queue: the id of the last entry read, or where it starts
	names    []string          // the merged queues, sorted
	cut      bool              // more queues were active than are merged
}

// QueueEntry is one entry of a queue's stream.
type QueueEntry struct {
	Queue string
	Entry
}

// OpenMerged reads the active queues and where each starts, merging at
// most limit queues.
func OpenMerged(ctx context.Context, log *Log, limit int) (*Merged, error) {
	now, err := log.Now(ctx)
	if err != nil {
		return nil, err
	}
	m := &Merged{log: log, limit: limit, openMS: now.UnixMilli(), openedAt: time.Now()}
	m.opened = ID{MS: uint64(max(m.openMS, 0))}.Before()
	m.checked = m.openMS
	names, cut, err := log.Active(ctx, m.since(m.openMS), limit)
	if err != nil {
		return nil, err
	}
	after, err := log.LastIDs(ctx, names)
	if err != nil {
		return nil, err
	}
	m.after, m.names, m.cut = after, names, cut
	return m, nil
}

// Cut reports whether more queues were active than are merged, when the
// index was last read.
func (m *Merged) Cut() bool { return m.cut }

// Refresh reads the activity index again: a queue new to the reading
// joins (from the opening, or Slack before the last read of the index,
// whichever is later: no entry after the opening is missed, none is read
// twice), a queue gone from it leaves.
func (m *Merged) Refresh(ctx context.Context) error {
	at := m.serverNow()
	names, cut, err := m.log.Active(ctx, m.since(at), m.limit)
	if err != nil {
		return err
	}
	join := m.opened
	if from := (ID{MS: uint64(max(m.checked-Slack.Milliseconds(), 0))}).Before(); from.Compare(join) > 0 {
		join = from
	}
	after := make(map[string]string, len(names))
	for _, q := range names {
		after[q] = cmp.Or(m.after[q], join.String())
	}
	m.after, m.names, m.cut, m.checked = after, names, cut, at
	return nil
}

// serverNow is the Redis server's time now, ms, as estimated from its time
// at the opening and this process's clock since.
func (m *Merged) serverNow() int64 {
	return m.openMS + time.Since(m.openedAt).Milliseconds()
}

// since is the activity the reading looks at, at the server's time at: the
// queues active since the opening and within keyspace.ActiveWindow, less
// Slack.
func (m *Merged) since(at int64) int64 {
	return max(m.openMS, at-keyspace.ActiveWindow.Milliseconds()) - Slack.Milliseconds()
}

// Read returns up to page entries of each merged queue after its cursor,
// all ordered by id (then queue), and moves the cursors past them; more
// reports that a queue filled its page, so that more may be waiting.
func (m *Merged) Read(ctx context.Context, page int64) (entries []QueueEntry, more bool, err error) {
	after := make(map[string]string, len(m.names))
	for _, q := range m.names {
		after[q] = m.after[q]
	}
	pages, err := m.log.ReadAfter(ctx, after, page)
	if err != nil {
		return nil, false, err
	}
	for q, p := range pages {
		for _, e := range p {
			entries = append(entries, QueueEntry{Queue: q, Entry: e})
		}
		if len(p) > 0 {
			m.after[q] = p[len(p)-1].ID
		}
		more = more || int64(len(p)) == page
	}
	slices.SortFunc(entries, compareEntries)
	return entries, more, nil
}

// compareEntries orders entries by id, then by queue.
func compareEntries(a, b QueueEntry) int {
	aid, _ := ParseID(a.ID)
	bid, _ := ParseID(b.ID)
	return cmp.Or(aid.Compare(bid), cmp.Compare(a.Queue, b.Queue))
}
