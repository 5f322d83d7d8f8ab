package http

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/echo-mq/echo_mq/internal/admin"
	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/internal/lease"
)

// runAtRule is what a run_at that is no time of the range is told.
const runAtRule = "must be an RFC 3339 time from 1970 to 9999, such as 2026-12-01T09:00:00Z"

// parseRunAt reads a run_at: an RFC 3339 time (fractions of a second and
// any offset allowed) from 1970-01-01T00:00:00Z to the end of 9999 in UTC,
// kept to the millisecond, as the scripts keep times.
func parseRunAt(field, text string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, text)
	if err != nil || t.Before(time.UnixMilli(0)) || t.UTC().Year() > 9999 {
		return time.Time{}, invalid("run_at is not a time from 1970 to 9999", FieldError{Field: field, Message: runAtRule})
	}
	return t.Truncate(time.Millisecond), nil
}

// runAtOf checks an enqueue's run_at (field names its payload) and sets
// nj's: a time, and not beside delay_ms.
func runAtOf(field valueField, req EnqueueRequest, nj *lease.NewJob) error {
	if req.RunAt == nil {
		return nil
	}
	at := valueField{field.index, "run_at"}.String()
	if req.DelayMs != 0 {
		return invalid("give run_at or delay_ms, not both", FieldError{Field: at, Message: "does not go with delay_ms: give one of them"})
	}
	t, err := parseRunAt(at, *req.RunAt)
	nj.RunAt = t
	return err
}

// UpdateJobRequest is what PATCH changes of a job that has not started:
// at least one field; delay_ms and run_at not both.
type UpdateJobRequest struct {
	// The new payload, replacing the old one whole: any JSON value, null
	// included, at most 1 MiB by default.
	Payload json.RawMessage `json:"payload,omitempty" swaggertype:"object" extensions:"x-any-json"`
	// The new priority, 0 to 9, lower first. A pending job moves to the new
	// priority's place for the time it was enqueued: among the jobs of that
	// priority, after those enqueued before it.
	Priority *int `json:"priority,omitempty" validate:"omitnil,min=0,max=9" example:"0"`
	// Runs the job this long after now, in ms: 0 makes a delayed job
	// pending now. For a waiting job, how long after now it runs once its
	// dependencies have ended.
	DelayMs *int64 `json:"delay_ms,omitempty" format:"int64" validate:"omitnil,min=0,max=31536000000"`
	// Runs the job at this time (RFC 3339, 1970 to 9999), on the Redis
	// server's clock: a time that has passed makes a delayed job pending
	// now.
	RunAt *string `json:"run_at,omitempty" format:"date-time" example:"2026-12-01T09:00:00Z"`
} // @name UpdateJobRequest

// changeOf checks what the tags cannot (one field at least, delay_ms and
// run_at not both, the payload's size, run_at's time) and turns req into
// an admin.Change.
func (s *server) changeOf(req UpdateJobRequest) (admin.Change, error) {
	c := admin.Change{Payload: compactJSON(req.Payload), Priority: req.Priority}
	switch {
	case req.Payload == nil && req.Priority == nil && req.DelayMs == nil && req.RunAt == nil:
		return c, invalid("the request changes nothing: give payload, priority, delay_ms or run_at",
			FieldError{Field: "payload", Message: "give at least one of payload, priority, delay_ms and run_at"})
	case req.DelayMs != nil && req.RunAt != nil:
		return c, invalid("give run_at or delay_ms, not both",
			FieldError{Field: "run_at", Message: "does not go with delay_ms: give one of them"})
	}
	if err := s.checkSize(topField("payload"), c.Payload); err != nil {
		return c, err
	}
	if req.DelayMs != nil {
		d := ms(*req.DelayMs)
		c.Delay = &d
	}
	if req.RunAt != nil {
		t, err := parseRunAt("run_at", *req.RunAt)
		if err != nil {
			return c, err
		}
		c.RunAt = &t
	}
	return c, nil
}

// changed names the fields req changes, for the audit log.
func (req UpdateJobRequest) changed() string {
	var fields []string
	for _, f := range []struct {
		name string
		set  bool
	}{{"payload", req.Payload != nil}, {"priority", req.Priority != nil},
		{"delay_ms", req.DelayMs != nil}, {"run_at", req.RunAt != nil}} {
		if f.set {
			fields = append(fields, f.name)
		}
	}
	return strings.Join(fields, ",")
}

// handleJobUpdate godoc
//
//	@Summary		Change a job that has not started
//	@Description	Changes a pending, delayed or waiting job in one atomic step, as BullMQ's updateData, changePriority and changeDelay do: payload replaces the payload; priority moves a pending job to its place among the jobs of that priority (by the time it was enqueued); delay_ms or run_at sets when it runs, on the Redis server's clock: a time to come makes a pending job delayed and moves a delayed one, a time that has come (delay_ms 0, a run_at passed) makes a delayed job pending now and leaves a pending one as it is; a waiting job stays waiting and runs then once its dependencies have ended (a delay counts from now). Writes the event "updated" with the key that asked. An active or finished job is 409 EMQSTATE and is not changed.
//	@ID				updateJob
//	@Tags			operator
//	@Security		BearerAuth
//	@Security		Signature
//	@Accept			json
//	@Param			queue	path	string				true	"queue name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Param			id		path	string				true	"job id: 1 to 128 of A-Z a-z 0-9 . _ : -, not only dots"	minlength(1)	maxlength(128)
//	@Param			change	body	UpdateJobRequest	true	"what to change: at least one field"
//	@Produce		application/problem+json
//	@Failure		400	{object}	Problem	"EMQINVALID: no field, delay_ms with run_at, or an invalid field"
//	@Failure		403	{object}	Problem	"EMQFORBIDDEN: the key's role may not do this"
//	@Failure		404	{object}	Problem	"EMQGONE"
//	@Failure		409	{object}	Problem	"EMQSTATE: the job is active, completed, dead or cancelled"
//	@Produce		json
//	@Success		200	{object}	Job	"the job as changed"
//	@Router			/queues/{queue}/jobs/{id} [patch]
func (s *server) handleJobUpdate(w http.ResponseWriter, r *http.Request) {
	queue, id, err := jobParams(r)
	var req UpdateJobRequest
	if err == nil {
		err = s.decode(r, &req)
	}
	var c admin.Change
	if err == nil {
		c, err = s.changeOf(req)
	}
	var j job.Job
	if err == nil {
		j, err = s.admin.Update(r.Context(), queue, id, c, actorOf(r))
	}
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	s.audit(r, "update", "queue", queue, "job", id, "fields", req.changed())
	writeJob(w, http.StatusOK, j)
}
