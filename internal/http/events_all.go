package http

import (
	"errors"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5/middleware"

	"github.com/echo-mq/echo_mq/internal/events"
)

// Timing and bounds of the merged stream, GET /events. It merges the
// queues of the activity index (those with traffic since it opened), so
// each poll costs one XRANGE per active queue, for each open stream, and
// one read of the index: 1,000 active queues and one open dashboard are
// 2,000 XRANGEs a second; idle queues cost nothing.
const (
	allEventsPoll   = 500 * time.Millisecond // the wait between polls that found nothing
	activityRefresh = allEventsPoll          // how often the activity index is read again
	maxMergedQueues = 1000                   // the queues merged at most, the most recently active
)

// handleAllEvents godoc
//
//	@Summary		Stream every queue's events
//	@Description	Server-Sent Events of the state changes of every queue with traffic, merged into one stream, so that a browser needs one connection for all of them. The wire format is the per-queue stream's without ids: `event: <kind>`, `data: <Event as one line of JSON>`; the Event's `queue` names the queue. Each queue's events come in the order Redis made them; a poll's events of several queues come in entry id order. It is a live tail, not resumable: it starts with the changes made after it opened and sends no `id:` lines, so an EventSource that reconnects sends no Last-Event-ID. A request with `from`, `last_event_id` or a Last-Event-ID header is answered 400 EMQINVALID: resume one queue with GET /queues/{queue}/events. The stream merges the queues active since it opened: those a worker or admin request named and that request succeeded (an enqueue, a claim, a complete, an extend, a pause...), or that the service's background work changed (a sweep, a schedule's tick, a push delivery, a batch callback), within the last hour. It looks at which queues are active again every 0.5 s: a queue that becomes active later joins with its events from the time the stream opened (the Redis server's clock), or from 30 s before it last looked, whichever is later, so that no event after the opening is missed; an obliterated queue leaves without an error. Up to 1,000 queues are merged, the most recently active; the rest are left out (the service logs a warning). Each stream polls every merged queue every 0.5 s when idle, one XRANGE per queue per poll (one pipelined round trip). A `: ping` comment comes every 15 s. On a Redis error the stream sends an `error` event whose data is a Problem and ends; reconnect to go on (the events in between are not replayed). The stream also ends when the service shuts down. One API key holds at most EMQ_MAX_STREAMS (default 100) event streams open at once on a service replica, this route's and GET /queues/{queue}/events's together (with the API open, all callers together); past it a stream is refused 429 EMQBUSY, before it starts.
//	@ID				streamAllEvents
//	@Tags			operator
//	@Security		BearerAuth
//	@Security		Signature
//	@Produce		application/problem+json
//	@Failure		400	{object}	Problem	"EMQINVALID: from, last_event_id or Last-Event-ID given"
//	@Failure		429	{object}	Problem	"EMQBUSY: this key has EMQ_MAX_STREAMS event streams open"
//	@Header		429	{integer}	Retry-After	"seconds to wait before trying again"
//	@Produce		text/event-stream
//	@Success		200	{object}	Event	"a stream of events of every queue; each one's data is an Event"
//	@Router			/events [get]
func (s *server) handleAllEvents(streams *events.Log) http.HandlerFunc {
	return s.streamAllEvents(streams, eventTiming{poll: allEventsPoll, heartbeat: eventHeartbeat})
}

// streamAllEvents serves the merged stream, polling every merged queue
// with t: a client holds no Redis connection while it waits.
func (s *server) streamAllEvents(streams *events.Log, t eventTiming) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if streams == nil {
			s.writeProblem(w, r, errors.New("the events route has no event log"))
			return
		}
		err := refuseResume(r)
		release := func() {}
		if err == nil {
			release, err = s.holdStream(r)
		}
		var m *events.Merged
		if err == nil {
			m, err = events.OpenMerged(r.Context(), streams, maxMergedQueues)
		}
		if err != nil {
			release()
			s.writeProblem(w, r, err)
			return
		}
		defer release()
		warned := s.warnIfCut(r, m, false)
		if rc, ok := startStream(w); ok {
			s.pumpAllEvents(w, rc, r, m, t, warned)
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
// activity index again every activityRefresh.
func (s *server) pumpAllEvents(w http.ResponseWriter, rc *http.ResponseController, r *http.Request, m *events.Merged, t eventTiming, warned bool) {
	ctx := r.Context()
	pace := newPacer(t)
	defer pace.stop()
	refreshed := time.Now()
	for {
		entries, more, err := m.Read(ctx, eventPage)
		if err != nil {
			s.endAllEvents(w, rc, r, err)
			return
		}
		for _, e := range entries {
			if writeEvent(w, "", e.Queue, e.Entry) != nil {
				return
			}
		}
		if len(entries) > 0 && rc.Flush() != nil {
			return
		}
		if time.Since(refreshed) >= activityRefresh {
			if err := m.Refresh(ctx); err != nil {
				s.endAllEvents(w, rc, r, err)
				return
			}
			refreshed = time.Now()
			warned = s.warnIfCut(r, m, warned)
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

// warnIfCut logs, once per stream (warned: it has), that more queues are
// active than a stream merges, and reports whether it has.
func (s *server) warnIfCut(r *http.Request, m *events.Merged, warned bool) bool {
	if m.Cut() && !warned {
		s.log.Warn("More active queues than one event stream merges; the least recently active are left out",
			"merged", maxMergedQueues, "path", r.URL.Path, "request_id", middleware.GetReqID(r.Context()))
		return true
	}
	return warned
}
