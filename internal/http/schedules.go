package http

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/echo-mq/echo_mq/internal/admin"
	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/lease"
	"github.com/echo-mq/echo_mq/internal/schedule"
	"github.com/echo-mq/echo_mq/internal/scheduler"
)

// schedules is the schedule store the handlers need (*scheduler.Service).
type schedules interface {
	Put(ctx context.Context, queue, name string, d scheduler.Definition, paused bool, by scheduler.Actor) (scheduler.Schedule, bool, error)
	Get(ctx context.Context, queue, name string) (scheduler.Schedule, error)
	List(ctx context.Context, queue, cursor string, limit int) ([]scheduler.Schedule, string, error)
	Delete(ctx context.Context, queue, name string, by scheduler.Actor) error
	SetPaused(ctx context.Context, queue, name string, paused bool, by scheduler.Actor) (scheduler.Schedule, error)
	RunNow(ctx context.Context, queue, name string) (lease.Enqueued, error)
}

// ScheduleJob is the job each tick of a schedule enqueues, pending at once
// with id "<name>:<tick in ms since the epoch>".
type ScheduleJob struct {
	// Any JSON value, null included, at most 1 MiB by default.
	Payload json.RawMessage `json:"payload" validate:"required" swaggertype:"object" extensions:"x-any-json"`
	// 0 to 9, lower first. Default (and 0): the queue's job_defaults
	// (settings), else 0.
	Priority int `json:"priority,omitempty" validate:"min=0,max=9" example:"0"`
	// How many claims each job may have. Default: the queue's job_defaults
	// (settings), else 3.
	MaxAttempts *int `json:"max_attempts,omitempty" validate:"omitnil,min=1,max=1000" example:"3"`
	// The retry delay after a failed attempt; when absent, exponential from
	// 1000 ms, capped at one hour.
	Backoff *BackoffRequest `json:"backoff,omitempty"`
	// The jobs' group (flow control). Default none.
	Group *string `json:"group,omitempty" validate:"omitnil,groupname" minLength:"1" maxLength:"128" example:"tenant-42"`
	// Each job is never claimed once this long has passed since its tick
	// enqueued it: it ends cancelled, reason "expired". Default never.
	ExpiresInMs *int64 `json:"expires_in_ms,omitempty" format:"int64" validate:"omitnil,min=1,max=31536000000" example:"600000"`
	// The total time one attempt of each job may run; then the sweep fails
	// the attempt with last_error "timeout". Default none.
	TimeoutMs *int64 `json:"timeout_ms,omitempty" format:"int64" validate:"omitnil,min=100,max=86400000" example:"30000"`
} // @name ScheduleJob

// ScheduleRequest is a schedule, put whole: exactly one of cron and
// every_ms.
type ScheduleRequest struct {
	// Five fields (minute hour day-of-month month day-of-week), or @hourly,
	// @daily (@midnight), @weekly, @monthly, @yearly (@annually), read in tz.
	Cron *string `json:"cron,omitempty" validate:"omitnil,min=1,max=256" pattern:"^[0-9A-Za-z*/,@? -]+$" example:"*/5 * * * *"`
	// A tick at every multiple of every_ms since the Unix epoch, in ms.
	EveryMs *int64 `json:"every_ms,omitempty" format:"int64" validate:"omitnil,min=100,max=31536000000"`
	// The IANA time zone cron is read in (cron only). Default UTC.
	Tz *string `json:"tz,omitempty" validate:"omitnil,min=1,max=64" pattern:"^[A-Za-z0-9_+/-]+$" example:"Europe/Berlin"`
	// The job each tick enqueues. A refusal names its fields by their
	// path: job.payload, job.backoff.type.
	Job *ScheduleJob `json:"job" validate:"required"`
	// "skip": a tick whose previous job is still pending, delayed or active
	// enqueues nothing and counts in skipped. Default "allow".
	Overlap *string `json:"overlap,omitempty" validate:"omitnil,oneof=allow skip" enums:"allow,skip" example:"allow"`
	// Ticks missed while no service replica ran: one catch-up job for the
	// latest ("once") or none ("skip"); then the cadence resumes. Default
	// "once".
	Misfire *string `json:"misfire,omitempty" validate:"omitnil,oneof=once skip" enums:"once,skip" example:"once"`
	// No tick before start_at.
	StartAt *string `json:"start_at,omitempty" format:"date-time" example:"2026-12-01T00:00:00Z"`
	// No tick after end_at; later than start_at, and than now.
	EndAt *string `json:"end_at,omitempty" format:"date-time" example:"2027-01-01T00:00:00Z"`
	// A paused schedule fires nothing. Default false.
	Paused bool `json:"paused,omitempty" example:"false"`
} // @name ScheduleRequest

// Schedule is a schedule's definition and record.
type Schedule struct {
	Name    string      `json:"name" binding:"required" example:"nightly-report"`
	Cron    string      `json:"cron,omitempty" example:"*/5 * * * *"`
	EveryMs int64       `json:"every_ms,omitempty" format:"int64"`
	Tz      string      `json:"tz,omitempty" example:"Europe/Berlin"` // cron only: its zone (UTC by default)
	Job     ScheduleJob `json:"job" binding:"required"`
	Overlap string      `json:"overlap" binding:"required" enums:"allow,skip" example:"allow"`
	Misfire string      `json:"misfire" binding:"required" enums:"once,skip" example:"once"`
	StartAt string      `json:"start_at,omitempty" format:"date-time" example:"2026-12-01T00:00:00.000Z"`
	EndAt   string      `json:"end_at,omitempty" format:"date-time" example:"2027-01-01T00:00:00.000Z"`
	Paused  bool        `json:"paused" binding:"required"`
	// The next tick; null while paused, and once past end_at.
	NextRunAt *string `json:"next_run_at" binding:"required" format:"date-time" extensions:"x-nullable" example:"2026-12-02T05:00:00.000Z"`
	// When its last job was enqueued; null before the first.
	LastRunAt *string `json:"last_run_at" binding:"required" format:"date-time" extensions:"x-nullable" example:"2026-12-02T04:55:00.003Z"`
	// The id of its last job; null before the first.
	LastJobID *string `json:"last_job_id" binding:"required" extensions:"x-nullable" example:"nightly-report:1764651600000"`
	// Jobs enqueued (ticks and runs now).
	Runs int64 `json:"runs" binding:"required" format:"int64"`
	// Ticks that overlap "skip" passed over.
	Skipped int64 `json:"skipped" binding:"required" format:"int64"`
	// Ticks that came while no replica ran and misfire passed over.
	Missed    int64  `json:"missed" binding:"required" format:"int64"`
	CreatedAt string `json:"created_at" binding:"required" format:"date-time" example:"2026-12-01T09:30:00.000Z"`
	UpdatedAt string `json:"updated_at" binding:"required" format:"date-time" example:"2026-12-01T09:30:00.000Z"`
} // @name Schedule

// SchedulePage is a page of a queue's schedules, by name.
type SchedulePage struct {
	Schedules []Schedule `json:"schedules" binding:"required"`
	// Fetches the next page; null on the last one.
	NextCursor *string `json:"next_cursor" binding:"required" extensions:"x-nullable"`
} // @name SchedulePage

// definition is the scheduler.Definition req asks for, its values checked;
// req has been validated, so it has a job.
func (s *server) definition(req ScheduleRequest) (scheduler.Definition, error) {
	// A schedule keeps no priority 0 (it is not told from none): its
	// jobs take the queue's default priority then (docs/design.md#job-defaults).
	var priority *int
	if req.Job.Priority != 0 {
		priority = &req.Job.Priority
	}
	nj, err := s.newJob(topField("job.payload"), EnqueueRequest{Payload: req.Job.Payload, Priority: priority,
		MaxAttempts: req.Job.MaxAttempts, Backoff: req.Job.Backoff, Group: req.Job.Group,
		ExpiresInMs: req.Job.ExpiresInMs, TimeoutMs: req.Job.TimeoutMs})
	if err != nil {
		return scheduler.Definition{}, err
	}
	d := scheduler.Definition{Job: nj, Overlap: scheduler.OverlapAllow, Misfire: schedule.MisfireOnce}
	if req.Overlap != nil {
		d.Overlap = *req.Overlap
	}
	if req.Misfire != nil {
		d.Misfire = *req.Misfire
	}
	for _, at := range []struct {
		field string
		text  *string
		to    *time.Time
	}{{"start_at", req.StartAt, &d.Window.Start}, {"end_at", req.EndAt, &d.Window.End}} {
		if at.text == nil {
			continue
		}
		t, err := time.Parse(time.RFC3339, *at.text)
		if err != nil {
			return d, invalid(at.field+" is not a time", FieldError{Field: at.field,
				Message: "must be an RFC 3339 time, such as 2026-12-01T00:00:00Z"})
		}
		*at.to = t
	}
	switch {
	case (req.Cron == nil) == (req.EveryMs == nil):
		return d, invalid("give exactly one of cron and every_ms",
			FieldError{Field: "cron", Message: "give exactly one of cron and every_ms"})
	case req.Cron != nil:
		d.Cron = *req.Cron
		if req.Tz != nil {
			d.TZ = *req.Tz
			if _, err := schedule.Zone(d.TZ); err != nil {
				return d, invalid(err.Error(), FieldError{Field: "tz", Message: "must be an IANA time zone, such as Europe/Berlin"})
			}
		}
	default:
		if req.Tz != nil {
			return d, invalid("tz applies to cron only", FieldError{Field: "tz", Message: "applies to cron only"})
		}
		d.Every = ms(*req.EveryMs)
	}
	if _, err := d.Cadence(); err != nil {
		field := map[bool]string{true: "cron", false: "every_ms"}[req.Cron != nil]
		return d, invalid(err.Error(), FieldError{Field: field, Message: err.Error()})
	}
	if w := d.Window; !w.Start.IsZero() && !w.End.IsZero() && !w.End.After(w.Start) {
		return d, invalid("end_at must be after start_at", FieldError{Field: "end_at", Message: "must be after start_at"})
	}
	if end := d.Window.End; !end.IsZero() && !end.After(time.Now()) {
		return d, invalid("end_at has passed: the schedule would never fire", FieldError{Field: "end_at", Message: "must be in the future"})
	}
	return d, nil
}

// scheduleOf is the API view of sch.
func scheduleOf(sch scheduler.Schedule) Schedule {
	out := Schedule{Name: sch.Name, Cron: sch.Cron, Tz: sch.TZ, EveryMs: sch.Every.Milliseconds(),
		Job: scheduleJobOf(sch.Job), Overlap: sch.Overlap, Misfire: sch.Misfire,
		StartAt: stamp(sch.Window.Start), EndAt: stamp(sch.Window.End), Paused: sch.Paused,
		NextRunAt: optionalStamp(sch.Next), LastRunAt: optionalStamp(sch.LastRunAt),
		Runs: sch.Runs, Skipped: sch.Skipped, Missed: sch.Missed,
		CreatedAt: stamp(sch.CreatedAt), UpdatedAt: stamp(sch.UpdatedAt)}
	if sch.Cron != "" && out.Tz == "" {
		out.Tz = "UTC"
	}
	if sch.LastJobID != "" {
		out.LastJobID = &sch.LastJobID
	}
	return out
}

func scheduleJobOf(nj lease.NewJob) ScheduleJob {
	out := ScheduleJob{Payload: nj.Payload, Priority: nj.Priority}
	if nj.MaxAttempts != 0 {
		out.MaxAttempts = &nj.MaxAttempts
	}
	if nj.Group != "" {
		out.Group = &nj.Group
	}
	if nj.ExpiresIn != 0 {
		expires := nj.ExpiresIn.Milliseconds()
		out.ExpiresInMs = &expires
	}
	if nj.Timeout != 0 {
		timeout := nj.Timeout.Milliseconds()
		out.TimeoutMs = &timeout
	}
	if b := nj.Backoff; b != nil {
		kind := map[bool]string{true: "exponential", false: "fixed"}[b.Exponential]
		delay, maxDelay := b.Delay.Milliseconds(), b.MaxDelay.Milliseconds()
		out.Backoff = &BackoffRequest{Type: kind, DelayMs: &delay, MaxDelayMs: &maxDelay}
	}
	return out
}

func optionalStamp(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := stamp(t)
	return &s
}

// scheduleParams reads and validates the {queue} and {name} path
// parameters.
func scheduleParams(r *http.Request) (queue, name string, err error) {
	if queue, err = queueParam(r); err != nil {
		return "", "", err
	}
	name = pathParam(r, "name")
	if !keyspace.ValidQueueName(name) {
		return "", "", invalid("invalid schedule name", FieldError{Field: "name", Message: queueNameRule})
	}
	return queue, name, nil
}

// handleSchedulePut godoc
//
//	@Summary		Create or replace a schedule
//	@Description	Puts the schedule whole. Each tick enqueues one job, with id `<name>:<tick in ms since the epoch>`, within a second of the tick, however many service replicas run; no tick is fired twice. A replaced schedule keeps its runs, skipped, missed and last run, and its cadence starts again from now. Audited as a schedule_set event.
//	@ID				putSchedule
//	@Tags			schedules
//	@Security		BearerAuth
//	@Security		Signature
//	@Accept			json
//	@Param			queue		path	string			true	"queue name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Param			name		path	string			true	"schedule name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Param			schedule	body	ScheduleRequest	true	"the schedule"
//	@Produce		application/problem+json
//	@Failure		400	{object}	Problem	"EMQINVALID"
//	@Failure		403	{object}	Problem	"EMQFORBIDDEN: the key's role may not do this"
//	@Failure		409	{object}	Problem	"EMQQUOTA: the queue is new and there are EMQ_MAX_QUEUES queues already"
//	@Produce		json
//	@Success		201	{object}	Schedule	"a new schedule"
//	@Success		200	{object}	Schedule	"the schedule, replaced"
//	@Router			/queues/{queue}/schedules/{name} [put]
func (s *server) handleSchedulePut(w http.ResponseWriter, r *http.Request) {
	queue, name, err := scheduleParams(r)
	var req ScheduleRequest
	if err == nil {
		err = s.decode(r, &req)
	}
	var d scheduler.Definition
	if err == nil {
		d, err = s.definition(req)
	}
	var sch scheduler.Schedule
	created := false
	if err == nil {
		sch, created, err = s.cfg.Schedules.Put(r.Context(), queue, name, d, req.Paused, actorOf(r))
	}
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	s.audit(r, "put_schedule", "queue", queue, "schedule", name)
	writeJSON(w, map[bool]int{true: http.StatusCreated, false: http.StatusOK}[created], scheduleOf(sch))
}

// handleScheduleGet godoc
//
//	@Summary		Read a schedule
//	@Description	The schedule's definition, its next tick and what it has done.
//	@ID				getSchedule
//	@Tags			schedules
//	@Security		BearerAuth
//	@Security		Signature
//	@Param			queue	path	string	true	"queue name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Param			name	path	string	true	"schedule name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Produce		application/problem+json
//	@Failure		400	{object}	Problem	"EMQINVALID"
//	@Failure		403	{object}	Problem	"EMQFORBIDDEN: the key's role may not do this"
//	@Failure		404	{object}	Problem	"EMQGONE: no such schedule"
//	@Produce		json
//	@Success		200	{object}	Schedule
//	@Router			/queues/{queue}/schedules/{name} [get]
func (s *server) handleScheduleGet(w http.ResponseWriter, r *http.Request) {
	queue, name, err := scheduleParams(r)
	var sch scheduler.Schedule
	if err == nil {
		sch, err = s.cfg.Schedules.Get(r.Context(), queue, name)
	}
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, scheduleOf(sch))
}

// handleScheduleList godoc
//
//	@Summary		List a queue's schedules
//	@Description	A page of the queue's schedules by name. Pass next_cursor back as cursor until it is null.
//	@ID				listSchedules
//	@Tags			schedules
//	@Security		BearerAuth
//	@Security		Signature
//	@Param			queue	path	string	true	"queue name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Param			limit	query	int		false	"schedules per page"	minimum(1)	maximum(1000)	default(100)
//	@Param			cursor	query	string	false	"next_cursor of the previous page"
//	@Produce		application/problem+json
//	@Failure		400	{object}	Problem	"EMQINVALID"
//	@Failure		403	{object}	Problem	"EMQFORBIDDEN: the key's role may not do this"
//	@Produce		json
//	@Success		200	{object}	SchedulePage
//	@Router			/queues/{queue}/schedules [get]
func (s *server) handleScheduleList(w http.ResponseWriter, r *http.Request) {
	queue, err := queueParam(r)
	limit := 0
	if err == nil {
		limit, err = limitQuery(r, 100, 1000)
	}
	cursor := r.URL.Query().Get("cursor")
	if err == nil && cursor != "" && !keyspace.ValidQueueName(cursor) {
		err = admin.ErrCursor
	}
	var list []scheduler.Schedule
	var next string
	if err == nil {
		list, next, err = s.cfg.Schedules.List(r.Context(), queue, cursor, limit)
	}
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	page := SchedulePage{Schedules: make([]Schedule, len(list))}
	for i, sch := range list {
		page.Schedules[i] = scheduleOf(sch)
	}
	if next != "" {
		page.NextCursor = &next
	}
	writeJSON(w, http.StatusOK, page)
}

// handleScheduleDelete godoc
//
//	@Summary		Delete a schedule
//	@Description	It fires no more; the jobs it enqueued stay. Audited as a schedule_deleted event.
//	@ID				deleteSchedule
//	@Tags			schedules
//	@Security		BearerAuth
//	@Security		Signature
//	@Param			queue	path	string	true	"queue name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Param			name	path	string	true	"schedule name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Produce		application/problem+json
//	@Failure		400	{object}	Problem	"EMQINVALID"
//	@Failure		403	{object}	Problem	"EMQFORBIDDEN: the key's role may not do this"
//	@Failure		404	{object}	Problem	"EMQGONE: no such schedule"
//	@Produce		json
//	@Success		200	{object}	Removed	"removed: 1"
//	@Router			/queues/{queue}/schedules/{name} [delete]
func (s *server) handleScheduleDelete(w http.ResponseWriter, r *http.Request) {
	queue, name, err := scheduleParams(r)
	if err == nil {
		err = s.cfg.Schedules.Delete(r.Context(), queue, name, actorOf(r))
	}
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	s.audit(r, "delete_schedule", "queue", queue, "schedule", name)
	writeJSON(w, http.StatusOK, Removed{Removed: 1})
}

// handleSchedulePause godoc
//
//	@Summary		Pause a schedule
//	@Description	It fires nothing until resumed; its next_run_at is null meanwhile. Pausing a paused schedule changes nothing.
//	@ID				pauseSchedule
//	@Tags			schedules
//	@Security		BearerAuth
//	@Security		Signature
//	@Param			queue	path	string	true	"queue name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Param			name	path	string	true	"schedule name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Produce		application/problem+json
//	@Failure		400	{object}	Problem	"EMQINVALID"
//	@Failure		403	{object}	Problem	"EMQFORBIDDEN: the key's role may not do this"
//	@Failure		404	{object}	Problem	"EMQGONE: no such schedule"
//	@Produce		json
//	@Success		200	{object}	Schedule
//	@Router			/queues/{queue}/schedules/{name}/pause [post]
func (s *server) handleSchedulePause(w http.ResponseWriter, r *http.Request) {
	s.setSchedulePaused(w, r, true)
}

// handleScheduleResume godoc
//
//	@Summary		Resume a schedule
//	@Description	It fires again from its next tick after now; ticks that passed while it was paused are not caught up. Resuming a running schedule changes nothing.
//	@ID				resumeSchedule
//	@Tags			schedules
//	@Security		BearerAuth
//	@Security		Signature
//	@Param			queue	path	string	true	"queue name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Param			name	path	string	true	"schedule name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Produce		application/problem+json
//	@Failure		400	{object}	Problem	"EMQINVALID"
//	@Failure		403	{object}	Problem	"EMQFORBIDDEN: the key's role may not do this"
//	@Failure		404	{object}	Problem	"EMQGONE: no such schedule"
//	@Produce		json
//	@Success		200	{object}	Schedule
//	@Router			/queues/{queue}/schedules/{name}/resume [post]
func (s *server) handleScheduleResume(w http.ResponseWriter, r *http.Request) {
	s.setSchedulePaused(w, r, false)
}

func (s *server) setSchedulePaused(w http.ResponseWriter, r *http.Request, paused bool) {
	queue, name, err := scheduleParams(r)
	var sch scheduler.Schedule
	if err == nil {
		sch, err = s.cfg.Schedules.SetPaused(r.Context(), queue, name, paused, actorOf(r))
	}
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	s.audit(r, map[bool]string{true: "pause_schedule", false: "resume_schedule"}[paused], "queue", queue, "schedule", name)
	writeJSON(w, http.StatusOK, scheduleOf(sch))
}

// handleScheduleRun godoc
//
//	@Summary		Run a schedule now
//	@Description	Enqueues one job of the schedule now, outside its cadence (paused or not, whatever its overlap), with id `<name>:run:<ms since the epoch>`. It counts in runs and is the schedule's last job.
//	@ID				runSchedule
//	@Tags			schedules
//	@Security		BearerAuth
//	@Security		Signature
//	@Param			queue	path	string	true	"queue name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Param			name	path	string	true	"schedule name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Produce		application/problem+json
//	@Failure		400	{object}	Problem	"EMQINVALID"
//	@Failure		403	{object}	Problem	"EMQFORBIDDEN: the key's role may not do this"
//	@Failure		404	{object}	Problem	"EMQGONE: no such schedule"
//	@Produce		json
//	@Success		201	{object}	Job	"the job enqueued"
//	@Success		200	{object}	Job	"the job a run in the same millisecond enqueued"
//	@Router			/queues/{queue}/schedules/{name}/run [post]
func (s *server) handleScheduleRun(w http.ResponseWriter, r *http.Request) {
	queue, name, err := scheduleParams(r)
	var out lease.Enqueued
	if err == nil {
		out, err = s.cfg.Schedules.RunNow(r.Context(), queue, name)
	}
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	status := http.StatusOK
	if out.Created {
		status = http.StatusCreated
		s.transition(queue, "enqueued", 1)
	}
	s.audit(r, "run_schedule", "queue", queue, "schedule", name, "job", out.Job.ID)
	writeJob(w, status, out.Job)
}
