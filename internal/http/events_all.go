package http

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5/middleware"
	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/keyspace"
)

// Timing and bounds of the merged stream, GET /events. Each poll costs one
// XRANGE per merged queue, for each open stream: 1,000 queues and one open
// dashboard are 2,000 XRANGEs a second, most of them answering nothing.
const (
	allEventsPoll    = 500 * time.Millisecond // the wait between polls that found nothing
	registryRefresh  = 2 * time.Second        // how often the queue registry is read again
	maxMergedQueues  = 1000                   // the queues merged, first by name
	registryScanStep = 1000                   // the names one SSCAN asks for
)

// allEventLog reads every known queue's event stream at once (*EventLog).
type allEventLog interface {
	// Now returns the Redis server's clock.
	Now(ctx context.Context) (time.Time, error)
	// Queues returns the first limit names of the queue registry, sorted,
	// and whether it holds more.
	Queues(ctx context.Context, limit int) (names []string, more bool, err error)
	// LastIDs returns the id of each queue's last entry, "0-0" for none.
	LastIDs(ctx context.Context, queues []string) (map[string]string, error)
	// ReadAfter returns up to count entries of each queue of after,
	// strictly after its id there, oldest first.
	ReadAfter(ctx context.Context, after map[string]string, count int64) (map[string][]redis.XMessage, error)
}

// eventStreams is what the event routes read: one queue's stream, and every
// queue's at once (*EventLog).
type eventStreams interface {
	eventLog
	allEventLog
}

// Now returns the Redis server's clock (TIME), so that "when the stream
// opened" is on the clock that stamps the entries.
func (l *EventLog) Now(ctx context.Context) (time.Time, error) {
	return l.rdb.Time(ctx).Result()
}

// Queues returns the first limit names of the queue registry by name, and
// whether it holds more. It reads the whole set a page at a time (SSCAN),
// so that no one call holds Redis for long; a name no queue could have is
// skipped.
func (l *EventLog) Queues(ctx context.Context, limit int) ([]string, bool, error) {
	var names []string
	iter := l.rdb.SScan(ctx, keyspace.QueuesKey(l.prefix), 0, "", registryScanStep).Iterator()
	for iter.Next(ctx) {
		if name := iter.Val(); keyspace.ValidQueueName(name) {
			names = append(names, name)
		}
	}
	if err := iter.Err(); err != nil {
		return nil, false, err
	}
	slices.Sort(names)
	names = slices.Compact(names) // SSCAN may return a name twice
	if len(names) > limit {
		return names[:limit], true, nil
	}
	return names, false, nil
}

// LastIDs returns the id of each queue's last entry, "0-0" when its stream
// is empty or absent, in one pipeline: one round trip, or one per node of a
// Cluster, sent at once.
func (l *EventLog) LastIDs(ctx context.Context, queues []string) (map[string]string, error) {
	cmds := make(map[string]*redis.XMessageSliceCmd, len(queues))
	if err := l.pipeline(ctx, func(p redis.Pipeliner) {
		for _, q := range queues {
			cmds[q] = p.XRevRangeN(ctx, keyspace.NewQueue(l.prefix, q).Events(), "+", "-", 1)
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
func (l *EventLog) ReadAfter(ctx context.Context, after map[string]string, count int64) (map[string][]redis.XMessage, error) {
	cmds := make(map[string]*redis.XMessageSliceCmd, len(after))
	if err := l.pipeline(ctx, func(p redis.Pipeliner) {
		for q, id := range after {
			cmds[q] = p.XRangeN(ctx, keyspace.NewQueue(l.prefix, q).Events(), "("+id, "+", count)
		}
	}); err != nil {
		return nil, err
	}
	pages := make(map[string][]redis.XMessage, len(cmds))
	for q, cmd := range cmds {
		pages[q] = cmd.Val()
	}
	return pages, nil
}

// pipeline sends the commands queue adds in one pipeline, and returns the
// first error of any; none at all sends nothing.
func (l *EventLog) pipeline(ctx context.Context, queue func(p redis.Pipeliner)) error {
	p := l.rdb.Pipeline()
	queue(p)
	if p.Len() == 0 {
		return nil
	}
	_, err := p.Exec(ctx)
	return err
}

// handleAllEvents godoc
//
//	@Summary		Stream every queue's events
//	@Description	Server-Sent Events of the state changes of every queue in the queue registry (the queues of GET /queues), merged into one stream, so that a browser needs one connection for all of them. The wire format is the per-queue stream's without ids: `event: <kind>`, `data: <Event as one line of JSON>`; the Event's `queue` names the queue. Each queue's events come in the order Redis made them; a poll's events of several queues come in entry id order. It is a live tail, not resumable: it starts with the changes made after it opened and sends no `id:` lines, so an EventSource that reconnects sends no Last-Event-ID. A request with `from`, `last_event_id` or a Last-Event-ID header is answered 400 EMQINVALID: resume one queue with GET /queues/{queue}/events. The registry is read again every 2 s: a queue created later joins with its events from the time the stream opened (the Redis server's clock), and an obliterated queue leaves without an error. Up to 1,000 queues are merged, the first by name; the rest are left out (the service logs a warning). Each stream polls every merged queue every 0.5 s when idle, one XRANGE per queue per poll (one pipelined round trip). A `: ping` comment comes every 15 s. On a Redis error the stream sends an `error` event whose data is a Problem and ends; reconnect to go on (the events in between are not replayed). The stream also ends when the service shuts down.
//	@ID				streamAllEvents
//	@Tags			operator
//	@Security		BearerAuth
//	@Security		Signature
//	@Produce		application/problem+json
//	@Failure		400	{object}	Problem	"EMQINVALID: from, last_event_id or Last-Event-ID given"
//	@Failure		401	{object}	Problem	"EMQUNAUTHORIZED: no key, a wrong one, or a bad signature"
//	@Failure		500	{object}	Problem	"EMQINTERNAL: a bug, logged with the request id"
//	@Failure		503	{object}	Problem	"EMQUNAVAILABLE"
//	@Header		401	{string}	WWW-Authenticate	"the Bearer scheme, realm echo_mq"
//	@Header		503	{integer}	Retry-After	"seconds to wait before trying again"
//	@Produce		text/event-stream
//	@Success		200	{object}	Event	"a stream of events of every queue; each one's data is an Event"
//	@Router			/events [get]
func (s *server) handleAllEvents(events allEventLog) http.HandlerFunc {
	return s.streamAllEvents(events, eventTiming{poll: allEventsPoll, heartbeat: eventHeartbeat})
}

// streamAllEvents serves the merged stream, polling every merged queue
// with t: a client holds no Redis connection while it waits.
func (s *server) streamAllEvents(events allEventLog, t eventTiming) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if events == nil {
			s.writeProblem(w, r, errors.New("the events route has no event log"))
			return
		}
		err := refuseResume(r)
		var m *merged
		if err == nil {
			m, err = openMerged(r.Context(), events)
		}
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		s.warnIfCut(r, m)
		if rc, ok := startStream(w); ok {
			s.pumpAllEvents(w, rc, r, m, t)
		}
	}
}

// refuseResume refuses the per-queue stream's resume points: the merged
// stream cannot honour them, and ignoring them would surprise.
func refuseResume(r *http.Request) error {
	const use = "the merged stream cannot resume: use GET /queues/{queue}/events to resume a queue"
	var fields []FieldError
	if len(r.Header.Values("Last-Event-ID")) > 0 {
		fields = append(fields, FieldError{Field: "Last-Event-ID", Message: use})
	}
	q := r.URL.Query()
	for _, name := range []string{"last_event_id", "from"} {
		if q.Has(name) {
			fields = append(fields, FieldError{Field: name, Message: use})
		}
	}
	if len(fields) > 0 {
		return invalid("GET /events is a live tail and cannot resume", fields...)
	}
	return nil
}

// pumpAllEvents sends every merged queue's entries as they come, until the
// client goes away, the service stops or Redis fails; it reads the
// registry again every registryRefresh.
func (s *server) pumpAllEvents(w http.ResponseWriter, rc *http.ResponseController, r *http.Request, m *merged, t eventTiming) {
	ctx := r.Context()
	pace := newPacer(t)
	defer pace.stop()
	refreshed := time.Now()
	for {
		entries, more, err := m.read(ctx)
		if err != nil {
			s.endAllEvents(w, rc, r, err)
			return
		}
		for _, e := range entries {
			if writeEvent(w, "", e.queue, e.msg) != nil {
				return
			}
		}
		if len(entries) > 0 && rc.Flush() != nil {
			return
		}
		if time.Since(refreshed) >= registryRefresh {
			if err := m.refresh(ctx); err != nil {
				s.endAllEvents(w, rc, r, err)
				return
			}
			refreshed = time.Now()
			s.warnIfCut(r, m)
		}
		// A full page may have more behind it: read on at once, every queue
		// again, so that one busy queue never holds the others back.
		if more && !stopped(ctx, s.cfg.Stopping) {
			continue
		}
		if !pace.next(ctx, s.cfg.Stopping, w, rc) {
			return
		}
	}
}

// endAllEvents ends the merged stream on err with an error event, unless
// the client is gone.
func (s *server) endAllEvents(w http.ResponseWriter, rc *http.ResponseController, r *http.Request, err error) {
	if r.Context().Err() == nil {
		s.sendStreamError(w, rc, r, err, "Redis cannot be reached; reconnect to go on (events in between are not replayed)")
	}
}

// warnIfCut logs, once per stream, that the registry holds more queues than
// a stream merges.
func (s *server) warnIfCut(r *http.Request, m *merged) {
	if m.cut && !m.warned {
		m.warned = true
		s.log.Warn("More queues than one event stream merges; the rest are left out",
			"merged", maxMergedQueues, "path", r.URL.Path, "request_id", middleware.GetReqID(r.Context()))
	}
}

// merged is where one merged stream is in each queue's stream.
type merged struct {
	log    allEventLog
	opened string            // the id just before the stream opened: where a queue that joins later starts
	after  map[string]string // each merged queue: the id of the last entry sent, or where it starts
	names  []string          // the merged queues, sorted
	cut    bool              // the registry holds more queues than are merged
	warned bool              // cut has been logged
}

// queueEntry is one entry of a queue's stream.
type queueEntry struct {
	queue string
	msg   redis.XMessage
}

// openMerged reads the registry and where each queue starts: a queue known
// now after its last entry, one that joins later at the Redis server's time
// of now.
func openMerged(ctx context.Context, log allEventLog) (*merged, error) {
	now, err := log.Now(ctx)
	if err != nil {
		return nil, err
	}
	names, cut, err := log.Queues(ctx, maxMergedQueues)
	if err != nil {
		return nil, err
	}
	after, err := log.LastIDs(ctx, names)
	if err != nil {
		return nil, err
	}
	opened, err := fromParam(strconv.FormatInt(now.UnixMilli(), 10))
	return &merged{log: log, opened: opened, after: after, names: names, cut: cut}, err
}

// refresh reads the registry again: a queue new to it joins where the
// stream opened, a queue gone from it (obliterated) leaves.
func (m *merged) refresh(ctx context.Context) error {
	names, cut, err := m.log.Queues(ctx, maxMergedQueues)
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

// read returns the entries after each merged queue's cursor, ordered by
// id, and moves the cursors past them; more reports that a queue filled
// its page, so that more may be waiting.
func (m *merged) read(ctx context.Context) (entries []queueEntry, more bool, err error) {
	after := make(map[string]string, len(m.names))
	for _, q := range m.names {
		after[q] = m.after[q]
	}
	pages, err := m.log.ReadAfter(ctx, after, eventPage)
	if err != nil {
		return nil, false, err
	}
	for q, page := range pages {
		for _, msg := range page {
			entries = append(entries, queueEntry{queue: q, msg: msg})
		}
		if len(page) > 0 {
			m.after[q] = page[len(page)-1].ID
		}
		more = more || len(page) == eventPage
	}
	slices.SortFunc(entries, compareEntries)
	return entries, more, nil
}

// compareEntries orders entries by id, then by queue.
func compareEntries(a, b queueEntry) int {
	ams, aseq, _ := parseEventID(a.msg.ID)
	bms, bseq, _ := parseEventID(b.msg.ID)
	return cmp.Or(cmp.Compare(ams, bms), cmp.Compare(aseq, bseq), cmp.Compare(a.queue, b.queue))
}
