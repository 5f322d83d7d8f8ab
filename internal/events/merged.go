package events

import (
	"cmp"
	"context"
	"slices"
)

// Merged is where one merged reading of every known queue's stream is in
// each of them: the queues of the registry (the first limit by name),
// each from after its last entry when the reading opened, and a queue that
// joins later from the Redis server's time of the opening.
type Merged struct {
	log    *Log
	limit  int
	opened string            // the id just before the reading opened: where a queue that joins later starts
	after  map[string]string // each merged queue: the id of the last entry read, or where it starts
	names  []string          // the merged queues, sorted
	cut    bool              // the registry holds more queues than are merged
}

// QueueEntry is one entry of a queue's stream.
type QueueEntry struct {
	Queue string
	Entry
}

// OpenMerged reads the registry and where each queue starts, merging at
// most limit queues.
func OpenMerged(ctx context.Context, log *Log, limit int) (*Merged, error) {
	now, err := log.Now(ctx)
	if err != nil {
		return nil, err
	}
	names, cut, err := log.Queues(ctx, limit)
	if err != nil {
		return nil, err
	}
	after, err := log.LastIDs(ctx, names)
	if err != nil {
		return nil, err
	}
	opened := ID{MS: uint64(max(now.UnixMilli(), 0))}.Before().String()
	return &Merged{log: log, limit: limit, opened: opened, after: after, names: names, cut: cut}, nil
}

// Cut reports whether the registry held more queues than are merged, when
// it was last read.
func (m *Merged) Cut() bool { return m.cut }

// Refresh reads the registry again: a queue new to it joins where the
// reading opened, a queue gone from it (obliterated) leaves.
func (m *Merged) Refresh(ctx context.Context) error {
	names, cut, err := m.log.Queues(ctx, m.limit)
	if err != nil {
		return err
	}
	after := make(map[string]string, len(names))
	for _, q := range names {
		after[q] = cmp.Or(m.after[q], m.opened)
	}
	m.after, m.names, m.cut = after, names, cut
	return nil
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
