package http

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5/middleware"

	"github.com/echo-mq/echo_mq/internal/events"
)

// Timing of an event stream.
const (
	eventPoll      = 250 * time.Millisecond // the wait between polls that found nothing
	eventHeartbeat = 15 * time.Second       // the interval of ": ping" comments
	eventPage      = 100                    // entries read per poll
)

// Event is the data of one Server-Sent Event of GET /queues/{queue}/events
// and GET /events: one state change of a queue or of one of its jobs.
type Event struct {
	Kind   string `json:"kind" binding:"required" enums:"enqueued,claimed,progress,completed,failed,dead,cancel_requested,cancelled,recovered,retried,promoted,updated,due,released,batch_done,removed,paused,resumed,drained,settings,group_paused,group_resumed,snoozed,debounced,schedule_set,schedule_paused,schedule_resumed,schedule_deleted,push_set,push_deleted" example:"completed"`
	Queue  string `json:"queue" binding:"required" example:"emails"`
	JobID  string `json:"job_id,omitempty" example:"0190f8a2-7c4e-7d2a-9b1e-3f5c2a1b0c9d"`
	State  string `json:"state,omitempty" enums:"pending,active,delayed,waiting,completed,dead,cancelled" example:"completed"`
	At     string `json:"at" format:"date-time" binding:"required" example:"2026-11-29T19:06:37.123Z"` // the Redis server's time of the change
	Actor  string `json:"actor,omitempty" example:"alice"`
	Role   string `json:"role,omitempty" example:"admin"`
	Reason string `json:"reason,omitempty" example:"superseded"`
	Error  string `json:"error,omitempty" example:"smtp: connection refused"`
	Count  *int64 `json:"count,omitempty" format:"int64" example:"12"`
	// The group a group_paused or group_resumed event is about.
	Group string `json:"group,omitempty" example:"tenant-42"`
	// The schedule a schedule_* event is about.
	Schedule string `json:"schedule,omitempty" example:"nightly-report"`
	// The batch a batch_done event is about (its reason: "success", or
	// "not every job completed").
	Batch string `json:"batch,omitempty" example:"import-7"`
	// The push target's url a push_set event names (never its secret).
	URL string `json:"url,omitempty" example:"https://worker.example.com/jobs"`
	// The new settings of a settings event.
	Settings *QueueSettings `json:"settings,omitempty"`
	// The progress a progress event stored, as the worker sent it, when
	// its JSON is at most 1024 bytes.
	Progress json.RawMessage `json:"progress,omitempty" swaggertype:"object" extensions:"x-any-json"`
	// true on a progress event whose progress is over 1024 bytes: it is
	// left out; read the job for it.
	ProgressTruncated bool `json:"progress_truncated,omitempty"`
} // @name Event

// eventTiming is how often a stream polls and sends heartbeats.
type eventTiming struct {
	poll, heartbeat time.Duration
}

// handleEvents godoc
//
//	@Summary		Stream a queue's events
//	@Description	Server-Sent Events of the queue's state changes, one event per change, in the order Redis made them: `id: <entry id>`, `event: <kind>`, `data: <Event as one line of JSON>`. `at` is the Redis server's time of the change. Without Last-Event-ID or `from`, the stream starts with the changes made after it opened. A reconnecting client sends Last-Event-ID (EventSource does this itself; or the `last_event_id` query parameter) and gets exactly the events after that one, as long as the stream retains them (about the last 10,000 per queue). `from=0` replays every retained event first; `from=<entry id>` or `from=<Unix ms>` starts at that entry or time. A `: ping` comment comes every 15 s. On a Redis error the stream sends an `error` event whose data is a Problem and ends; reconnect with Last-Event-ID. The stream also ends when the service shuts down. One API key holds at most EMQ_MAX_STREAMS (default 100) event streams open at once on a service replica, this route's and GET /events's together (with the API open, all callers together); past it a stream is refused 429 EMQBUSY, before it starts.
//	@ID				streamEvents
//	@Tags			operator
//	@Security		BearerAuth
//	@Security		Signature
//	@Param			queue			path	string	true	"queue name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Param			Last-Event-ID	header	string	false	"resume strictly after this entry id (<ms>-<seq>)"
//	@Param			last_event_id	query	string	false	"the same as the Last-Event-ID header, for clients that cannot set it"
//	@Param			from			query	string	false	"without Last-Event-ID: 0 replays every retained event; an entry id (<ms>-<seq>) or a Unix time in ms starts there"
//	@Produce		application/problem+json
//	@Failure		400	{object}	Problem	"EMQINVALID"
//	@Failure		429	{object}	Problem	"EMQBUSY: this key has EMQ_MAX_STREAMS event streams open"
//	@Header		429	{integer}	Retry-After	"seconds to wait before trying again"
//	@Produce		text/event-stream
//	@Success		200	{object}	Event	"a stream of events; each one's data is an Event"
//	@Router			/queues/{queue}/events [get]
func (s *server) handleEvents(streams *events.Log) http.HandlerFunc {
	return s.streamEvents(streams, eventTiming{poll: eventPoll, heartbeat: eventHeartbeat})
}

// streamEvents serves a queue's event stream, polling it with t: a client
// holds no Redis connection while it waits.
func (s *server) streamEvents(streams *events.Log, t eventTiming) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if streams == nil {
			s.writeProblem(w, r, errors.New("the events route has no event log"))
			return
		}
		queue, err := queueParam(r)
		var after string
		if err == nil {
			after, err = resumePoint(r)
		}
		release := func() {}
		if err == nil {
			release, err = s.holdStream(r)
		}
		if err == nil && after == "" {
			after, err = streams.LastID(r.Context(), queue)
		}
		if err != nil {
			release()
			s.writeProblem(w, r, err)
			return
		}
		defer release()
		if rc, ok := startStream(w); ok {
			s.pumpEvents(w, rc, r, streams, queue, after, t)
		}
	}
}

// startStream answers 200 with an event stream's headers and sends them at
// once; false when the client is already gone.
func startStream(w http.ResponseWriter) (*http.ResponseController, bool) {
	rc := http.NewResponseController(w)
	// The server's write timeout is for requests, not for a stream that
	// lasts: left set, it would cut the stream after a minute.
	_ = rc.SetWriteDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	return rc, rc.Flush() == nil
}

// pumpEvents sends the entries after after as they come, until the client
// goes away, the service stops or Redis fails.
func (s *server) pumpEvents(w http.ResponseWriter, rc *http.ResponseController, r *http.Request,
	streams *events.Log, queue, after string, t eventTiming) {
	ctx := r.Context()
	pace := newPacer(t)
	defer pace.stop()
	for {
		entries, err := streams.Read(ctx, queue, after, eventPage)
		if err != nil {
			if ctx.Err() == nil {
				s.sendStreamError(w, rc, r, err, "Redis cannot be reached; reconnect with Last-Event-ID")
			}
			return
		}
		for _, e := range entries {
			if writeEvent(w, e.ID, queue, e) != nil {
				return
			}
			after = e.ID
		}
		if len(entries) > 0 && rc.Flush() != nil {
			return
		}
		if len(entries) == eventPage && !stopped(ctx, s.cfg.Stopping) {
			continue // more are there: read on at once
		}
		if !pace.next(ctx, s.cfg.Stopping, w, rc) {
			return
		}
	}
}

// pacer paces a stream: a poll each poll interval, a heartbeat each
// heartbeat interval.
type pacer struct {
	t         eventTiming
	heartbeat *time.Ticker
	wait      *time.Timer
}

func newPacer(t eventTiming) *pacer {
	return &pacer{t: t, heartbeat: time.NewTicker(t.heartbeat), wait: time.NewTimer(t.poll)}
}

func (p *pacer) stop() {
	p.heartbeat.Stop()
	p.wait.Stop()
}

// next waits until the next poll is due, sending a heartbeat if one falls
// due first (the poll then comes early). It reports false when the stream
// must end: the client went away, the service stops, or the heartbeat
// could not be sent.
func (p *pacer) next(ctx context.Context, stopping <-chan struct{}, w http.ResponseWriter, rc *http.ResponseController) bool {
	p.wait.Reset(p.t.poll)
	select {
	case <-ctx.Done():
		return false
	case <-stopping:
		return false
	case <-p.heartbeat.C:
		_, err := fmt.Fprint(w, ": ping\n\n")
		return err == nil && rc.Flush() == nil
	case <-p.wait.C:
		return true
	}
}

// stopped reports whether the client went away or the service stops.
func stopped(ctx context.Context, stopping <-chan struct{}) bool {
	select {
	case <-ctx.Done():
		return true
	case <-stopping:
		return true
	default:
		return false
	}
}

// writeEvent writes e, an entry of queue's stream, as one Server-Sent
// Event with an "id:" line when id is not "": a stream that cannot resume
// sends none, so that a reconnecting EventSource sends no Last-Event-ID.
func writeEvent(w http.ResponseWriter, id, queue string, e events.Entry) error {
	data, err := oneLineJSON(eventOf(queue, e))
	if err != nil {
		return err
	}
	var b strings.Builder
	if id != "" {
		b.WriteString("id: " + id + "\n")
	}
	if k := e.Field("kind"); k != "" && !strings.ContainsAny(k, "\r\n") {
		b.WriteString("event: " + k + "\n")
	}
	_, err = fmt.Fprintf(w, "%sdata: %s\n\n", b.String(), data)
	return err
}

// sendStreamError ends a stream with an "error" event whose data is the
// problem, with detail when Redis cannot be reached (how to go on); it
// carries no id, so a client resumes after the last event.
func (s *server) sendStreamError(w http.ResponseWriter, rc *http.ResponseController, r *http.Request, err error, detail string) {
	p := newProblem(codeOf(err), detail)
	p.Instance = r.URL.Path
	if p.Code == CodeUnavailable {
		s.log.Warn("Redis unavailable", "error", err, "path", r.URL.Path)
	} else {
		p = newProblem(CodeInternal, "internal error")
		p.Instance = r.URL.Path
		s.log.Error("Event stream failed", "error", err, "path", r.URL.Path,
			"request_id", middleware.GetReqID(r.Context()))
	}
	data, _ := oneLineJSON(p)
	if _, err := fmt.Fprintf(w, "event: error\ndata: %s\n\n", data); err == nil {
		_ = rc.Flush()
	}
}

// eventOf is the API view of stream entry e. Fields the contract does not
// name are not shown.
func eventOf(queue string, e events.Entry) Event {
	ev := Event{
		Kind: e.Field("kind"), Queue: queue, JobID: e.Field("job"), State: e.Field("state"),
		Actor: e.Field("actor"), Role: e.Field("role"), Reason: e.Field("reason"), Error: e.Field("error"),
	}
	if at, ok := e.At(); ok {
		ev.At = stamp(at)
	}
	if n, err := strconv.ParseInt(e.Field("count"), 10, 64); err == nil {
		ev.Count = &n
	}
	ev.Group, ev.Schedule, ev.URL, ev.Batch = e.Field("group"), e.Field("schedule"), e.Field("url"), e.Field("batch")
	if text := e.Field("settings"); text != "" {
		var s QueueSettings
		if json.Unmarshal([]byte(text), &s) == nil {
			ev.Settings = &s
		}
	}
	if text := e.Field("progress"); text != "" && json.Valid([]byte(text)) {
		ev.Progress = json.RawMessage(text)
	}
	ev.ProgressTruncated = e.Field("progress_truncated") == "1"
	return ev
}

// oneLineJSON is v's JSON without its trailing newline: a string's newlines
// are escaped, so it fits one data line.
func oneLineJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// resumePoint is the entry id after which the stream starts, from the
// Last-Event-ID header, else the last_event_id query parameter, else from;
// "" when none is given. Each one given must be valid.
func resumePoint(r *http.Request) (string, error) {
	q := r.URL.Query()
	header, err1 := eventIDParam("Last-Event-ID", r.Header.Get("Last-Event-ID"))
	query, err2 := eventIDParam("last_event_id", q.Get("last_event_id"))
	from, err3 := fromParam(q.Get("from"))
	if err := cmp.Or(err1, err2, err3); err != nil {
		return "", err
	}
	return cmp.Or(header, query, from), nil
}

// eventIDParam reads an entry id to resume after; "" when v is empty.
func eventIDParam(name, v string) (string, error) {
	if v == "" {
		return "", nil
	}
	id, ok := events.ParseID(v)
	if !ok {
		return "", invalid("invalid event id", FieldError{Field: name,
			Message: "must be an event id: <ms>-<seq>"})
	}
	return id.String(), nil
}

// fromParam reads where a stream starts, an entry id or a Unix time in ms,
// and returns the id just before it; "" when v is empty.
func fromParam(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	id, ok := events.ParseID(v)
	if !ok {
		ms, err := strconv.ParseUint(v, 10, 64)
		id, ok = events.ID{MS: ms}, err == nil
	}
	if !ok {
		return "", invalid("invalid query parameter", FieldError{Field: "from",
			Message: "must be 0, an event id (<ms>-<seq>) or a Unix time in ms"})
	}
	return id.Before().String(), nil
}
