package http

import (
	"cmp"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/echo-mq/echo_mq/internal/batch"
	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/internal/lease"
	"github.com/echo-mq/echo_mq/internal/telemetry"
)

// EnqueueRequest is one job to enqueue. (api/specfix gives its id the id
// pattern.)
type EnqueueRequest struct {
	// The client's idempotency key; made by the server (UUIDv7) when
	// absent. Ids starting "batch:" are kept for batch callbacks.
	ID string `json:"id,omitempty" validate:"omitempty,jobid" minLength:"1" maxLength:"128" example:"order-1234"`
	// Any JSON value, null included, at most 1 MiB by default.
	Payload json.RawMessage `json:"payload" validate:"required" swaggertype:"object" extensions:"x-any-json"`
	// 0 to 9, lower first: a pending job of priority 0 is claimed before
	// any of priority 1; FIFO within one priority. Default: the queue's
	// job_defaults (settings), else 0.
	Priority *int `json:"priority,omitempty" validate:"omitnil,min=0,max=9" example:"0"`
	// How long the job waits, delayed, before it may be claimed, in ms;
	// default 0 (pending at once).
	DelayMs int64 `json:"delay_ms,omitempty" format:"int64" validate:"min=0,max=31536000000" example:"0"`
	// When the job runs, an RFC 3339 time from 1970 to 9999, on the Redis
	// server's clock: delayed until then, or pending at once when it has
	// passed. Not with delay_ms.
	RunAt *string `json:"run_at,omitempty" format:"date-time" example:"2026-12-01T09:00:00Z"`
	// How many claims the job may have: a fail of the last one is dead.
	// Default: the queue's job_defaults (settings), else 3.
	MaxAttempts *int `json:"max_attempts,omitempty" validate:"omitnil,min=1,max=1000" example:"3"`
	// The retry delay after a failed attempt; when absent, the queue's
	// job_defaults (settings), else exponential from 1000 ms, capped at one
	// hour.
	Backoff *BackoffRequest `json:"backoff,omitempty"`
	// The job's group (flow control): claims take turns over the groups
	// that have a claimable job, and the queue's group limits apply to each
	// group. Default none.
	Group *string `json:"group,omitempty" validate:"omitnil,groupname" minLength:"1" maxLength:"128" example:"tenant-42"`
	// At most one job per key at a time, or per window: see DedupeRequest.
	Dedupe *DedupeRequest `json:"dedupe,omitempty"`
	// A job not started within this many ms of its enqueue is never
	// claimed: it ends cancelled with cancel_reason "expired". Default: the
	// queue's job_defaults (settings, not for a job with depends_on), else
	// none.
	ExpiresInMs *int64 `json:"expires_in_ms,omitempty" format:"int64" validate:"omitnil,min=1,max=31536000000" example:"600000"`
	// The total time one attempt may run, in ms: extends never move the
	// lease past started_at + timeout_ms, and the sweep then fails the
	// attempt with last_error "timeout" (retried under the backoff).
	// Default: the queue's job_defaults (settings), else none.
	TimeoutMs *int64 `json:"timeout_ms,omitempty" format:"int64" validate:"omitnil,min=100,max=86400000" example:"30000"`
	// The ids of up to 100 jobs of the queue (or of the same request) the
	// job waits for: it is waiting until each has completed, then pending
	// (or delayed, while delay_ms from its enqueue has not passed). An
	// unknown id or a cycle is refused. Not with group, dedupe or
	// expires_in_ms.
	DependsOn []string `json:"depends_on,omitempty" validate:"omitempty,max=100,dive,jobid" maxItems:"100"`
	// With depends_on: when a dependency ends dead or cancelled, "cancel"
	// (the default) cancels the job with cancel_reason "dependency <id>
	// <state>"; "run" counts it as ended and runs the job anyway.
	OnDependencyFailure *string `json:"on_dependency_failure,omitempty" validate:"omitnil,oneof=cancel run" enums:"cancel,run"`
} // @name EnqueueRequest

// DedupeRequest is an enqueue's dedupe key, per queue. until_done: while
// the job with the key is pending, delayed or active, an enqueue with it
// answers 200 with that job. throttle: for ttl_ms after that job was
// created, finished or not. debounce: while that job has not started, an
// enqueue replaces its payload and priority and moves its run time to now
// + delay_ms, never past max_wait_ms after it was created; once it started,
// a new job is made. An id that exists wins over the key.
type DedupeRequest struct {
	// 1 to 256 bytes.
	Key  string `json:"key" validate:"required" minLength:"1" maxLength:"256" example:"user-42:digest"`
	Mode string `json:"mode" validate:"required,oneof=until_done throttle debounce" enums:"until_done,throttle,debounce" example:"until_done"`
	// throttle only, and required there: the window after the first
	// enqueue, in ms.
	TtlMs *int64 `json:"ttl_ms,omitempty" format:"int64" validate:"omitnil,min=1,max=31536000000" example:"60000"`
	// debounce only: the longest a job is put off after its first enqueue,
	// in ms; default no bound.
	MaxWaitMs *int64 `json:"max_wait_ms,omitempty" format:"int64" validate:"omitnil,min=0,max=31536000000" example:"300000"`
} // @name Dedupe

// maxDedupeKey is the longest dedupe key, in bytes.
const maxDedupeKey = 256

// dedupeOf checks what the tags cannot (the key's length in bytes, which
// window goes with which mode, debounce without a group) and turns a
// dedupe request into a lease.Dedupe.
func dedupeOf(field valueField, req EnqueueRequest) (lease.Dedupe, error) {
	d := req.Dedupe
	if d == nil {
		return lease.Dedupe{}, nil
	}
	at := func(name string) string { return valueField{field.index, "dedupe." + name}.String() }
	refuse := func(name, message string) error {
		return invalid("the request has invalid fields", FieldError{Field: at(name), Message: message})
	}
	switch {
	case len(d.Key) > maxDedupeKey:
		return lease.Dedupe{}, refuse("key", "must be at most 256 bytes")
	case d.Mode == lease.DedupeThrottle && d.TtlMs == nil:
		return lease.Dedupe{}, refuse("ttl_ms", "is required for mode throttle")
	case d.Mode != lease.DedupeThrottle && d.TtlMs != nil:
		return lease.Dedupe{}, refuse("ttl_ms", "applies to mode throttle only")
	case d.Mode != lease.DedupeDebounce && d.MaxWaitMs != nil:
		return lease.Dedupe{}, refuse("max_wait_ms", "applies to mode debounce only")
	case d.Mode == lease.DedupeDebounce && req.Group != nil:
		return lease.Dedupe{}, refuse("mode", "debounce does not apply to a job with a group")
	}
	out := lease.Dedupe{Key: d.Key, Mode: d.Mode}
	if w := cmp.Or(d.TtlMs, d.MaxWaitMs); w != nil {
		out.Window = ms(*w)
	}
	return out, nil
}

// dependenciesOf checks what the tags cannot (which options go with
// depends_on) and sets nj's dependencies.
func dependenciesOf(field valueField, req EnqueueRequest, nj *lease.NewJob) error {
	refuse := func(name, message string) error {
		return invalid("the request has invalid fields",
			FieldError{Field: valueField{field.index, name}.String(), Message: message})
	}
	if len(req.DependsOn) == 0 {
		if req.OnDependencyFailure != nil {
			return refuse("on_dependency_failure", "applies to a job with depends_on only")
		}
		return nil
	}
	switch {
	case req.Group != nil:
		return refuse("depends_on", "does not apply to a job with a group")
	case req.Dedupe != nil:
		return refuse("depends_on", "does not apply to a job with a dedupe key")
	case req.ExpiresInMs != nil:
		return refuse("depends_on", "does not apply to a job with expires_in_ms")
	}
	nj.DependsOn = req.DependsOn
	nj.RunOnFailure = req.OnDependencyFailure != nil && *req.OnDependencyFailure == job.OnDependencyFailureRun
	return nil
}

// checkDependencies refuses an enqueue whose jobs' dependencies make a
// cycle (lease.CheckDependencies), naming the job's depends_on; one is
// the first job's field (a single enqueue names it without an index).
func checkDependencies(jobs []lease.NewJob, single bool) error {
	err := lease.CheckDependencies(jobs)
	var de *lease.DependencyError
	if !errors.As(err, &de) {
		return err
	}
	return invalid("the request has invalid fields", FieldError{Field: dependsOnField(de.Index, single), Message: de.Reason})
}

// dependsOnField names the depends_on of job i of an enqueue (of the one
// job, without an index, when single).
func dependsOnField(i int, single bool) string {
	if single {
		return topField("depends_on").String()
	}
	return valueField{i, "depends_on"}.String()
}

// unknownDependency turns a script's refusal of a dependency that is no
// job of the queue into the problem's field: the first of jobs naming it
// (a single enqueue's own depends_on when single).
func unknownDependency(err error, jobs []lease.NewJob, single bool) error {
	id, ok := strings.CutPrefix(err.Error(), "unknown dependency: ")
	if !ok || !errors.Is(err, job.ErrInvalid) {
		return err
	}
	for i, j := range jobs {
		if slices.Contains(j.DependsOn, id) {
			return invalid("the request has invalid fields",
				FieldError{Field: dependsOnField(i, single), Message: "names " + id + ", no job of the queue nor of the request"})
		}
	}
	return err
}

// BackoffRequest is the retry delay after a failed attempt: delay_ms,
// doubled per attempt for "exponential", capped at max_delay_ms.
type BackoffRequest struct {
	Type string `json:"type" validate:"required,oneof=exponential fixed" enums:"exponential,fixed"`
	// The first retry's delay, in ms; each later one doubles it for
	// "exponential". Default 1000 (or max_delay_ms when that is less); 0
	// retries at once.
	DelayMs *int64 `json:"delay_ms,omitempty" format:"int64" validate:"omitnil,min=0,max=86400000" example:"1000"`
	// The cap of the delay, in ms, at least delay_ms; when absent, one
	// hour, or delay_ms when that is longer.
	MaxDelayMs *int64 `json:"max_delay_ms,omitempty" format:"int64" validate:"omitnil,min=0,max=604800000,backoffcap" example:"3600000"`
} // @name Backoff

// delay is the first retry's delay b asks for: delay_ms, or the default
// under its cap.
func (b BackoffRequest) delay() time.Duration {
	switch {
	case b.DelayMs != nil:
		return ms(*b.DelayMs)
	case b.MaxDelayMs != nil:
		return min(lease.DefaultBackoffDelay, ms(*b.MaxDelayMs))
	default:
		return lease.DefaultBackoffDelay
	}
}

// EnqueueBatchRequest is up to 1000 jobs to enqueue at once.
type EnqueueBatchRequest struct {
	Jobs []EnqueueRequest `json:"jobs" validate:"required,min=1,max=1000,dive"`
} // @name EnqueueBatchRequest

// newJob checks one enqueue request's sizes and turns it into a lease.NewJob.
func (s *server) newJob(field valueField, req EnqueueRequest) (lease.NewJob, error) {
	if strings.HasPrefix(req.ID, batch.CallbackPrefix) {
		return lease.NewJob{}, invalid("the request has invalid fields", FieldError{
			Field: valueField{field.index, "id"}.String(), Message: `must not start with "batch:", kept for batch callbacks`})
	}
	payload := compactJSON(req.Payload)
	if err := s.checkSize(field, payload); err != nil {
		return lease.NewJob{}, err
	}
	nj := lease.NewJob{ID: req.ID, Payload: payload,
		Delay: time.Duration(req.DelayMs) * time.Millisecond}
	if req.Priority != nil {
		nj.Priority, nj.PriorityNamed = *req.Priority, true
	}
	if err := runAtOf(field, req, &nj); err != nil {
		return lease.NewJob{}, err
	}
	if req.Group != nil {
		nj.Group = *req.Group
	}
	if req.MaxAttempts != nil {
		nj.MaxAttempts = *req.MaxAttempts
	}
	var err error
	if nj.Dedupe, err = dedupeOf(field, req); err != nil {
		return lease.NewJob{}, err
	}
	if req.ExpiresInMs != nil {
		nj.ExpiresIn = ms(*req.ExpiresInMs)
	}
	if req.TimeoutMs != nil {
		nj.Timeout = ms(*req.TimeoutMs)
	}
	if err := dependenciesOf(field, req, &nj); err != nil {
		return lease.NewJob{}, err
	}
	if b := req.Backoff; b != nil {
		var maxDelay *time.Duration
		if b.MaxDelayMs != nil {
			d := ms(*b.MaxDelayMs)
			maxDelay = &d
		}
		nj.Backoff = lease.NewBackoff(b.Type == "exponential", b.delay(), maxDelay)
	}
	return nj, nil
}

// producerTrace is the request's traceparent header, kept with the jobs it
// enqueues (docs/design.md#traces); "" when it has none, or one that W3C
// Trace Context says to ignore. Of a later version's header, which may be
// longer, only the part version 00 defines is kept, as the specification
// says to read it: a row never holds more than 55 bytes of it.
func producerTrace(r *http.Request) string {
	tp := strings.TrimSpace(r.Header.Get("traceparent"))
	if !telemetry.ValidTraceparent(tp) {
		return ""
	}
	return tp[:telemetry.TraceparentLen]
}

// handleEnqueue godoc
//
//	@Summary		Enqueue a job
//	@Description	Adds a job, pending or delayed by delay_ms. The id is an idempotency key: enqueueing an id that exists answers 200 with the existing job and adds nothing.
//	@ID				enqueueJob
//	@Tags			jobs
//	@Security		BearerAuth
//	@Security		Signature
//	@Accept			json
//	@Param			queue	path	string			true	"queue name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Param			job		body	EnqueueRequest	true	"the job"
//	@Param			traceparent	header	string	false	"the producer's W3C traceparent, kept with the job and answered as its traceparent (ignored unless valid)"
//	@Produce		application/problem+json
//	@Failure		400	{object}	Problem	"EMQINVALID"
//	@Failure		403	{object}	Problem	"EMQFORBIDDEN: the key's role may not do this"
//	@Failure		409	{object}	Problem	"EMQQUOTA: the queue is new and there are EMQ_MAX_QUEUES queues already"
//	@Produce		json
//	@Success		201	{object}	Job	"a new job"
//	@Success		200	{object}	Job	"the existing job with that id"
//	@Router			/queues/{queue}/jobs [post]
func (s *server) handleEnqueue(w http.ResponseWriter, r *http.Request) {
	queue, err := queueParam(r)
	var req EnqueueRequest
	if err == nil {
		err = s.decode(r, &req)
	}
	var nj lease.NewJob
	if err == nil {
		nj, err = s.newJob(topField("payload"), req)
		nj.Traceparent = producerTrace(r)
	}
	if err == nil {
		err = checkDependencies([]lease.NewJob{nj}, true)
	}
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	out, err := s.leases.Enqueue(r.Context(), queue, []lease.NewJob{nj})
	if err != nil {
		s.writeProblem(w, r, unknownDependency(err, []lease.NewJob{nj}, true))
		return
	}
	status := http.StatusOK
	if out[0].Created {
		status = http.StatusCreated
		s.transition(queue, "enqueued", 1)
	}
	writeJob(w, status, out[0].Job)
}

// handleEnqueueBatch godoc
//
//	@Summary		Enqueue up to 1000 jobs
//	@Description	Adds every job in one atomic step and answers them in order. Ids that exist are answered with the existing job, as for a single enqueue. An invalid job refuses the whole batch.
//	@ID				enqueueJobs
//	@Tags			jobs
//	@Security		BearerAuth
//	@Security		Signature
//	@Accept			json
//	@Param			queue	path	string				true	"queue name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Param			jobs	body	EnqueueBatchRequest	true	"the jobs"
//	@Param			traceparent	header	string	false	"the producer's W3C traceparent, kept with every job and answered as its traceparent (ignored unless valid)"
//	@Produce		application/problem+json
//	@Failure		400	{object}	Problem	"EMQINVALID"
//	@Failure		403	{object}	Problem	"EMQFORBIDDEN: the key's role may not do this"
//	@Failure		409	{object}	Problem	"EMQQUOTA: the queue is new and there are EMQ_MAX_QUEUES queues already"
//	@Produce		json
//	@Success		200	{object}	JobList
//	@Router			/queues/{queue}/jobs/batch [post]
func (s *server) handleEnqueueBatch(w http.ResponseWriter, r *http.Request) {
	queue, err := queueParam(r)
	var req EnqueueBatchRequest
	if err == nil {
		err = s.decode(r, &req)
	}
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	jobs, err := s.newJobs(r, req.Jobs)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	out, err := s.leases.Enqueue(r.Context(), queue, jobs)
	if err != nil {
		s.writeProblem(w, r, unknownDependency(err, jobs, false))
		return
	}
	enqueued := make([]job.Job, len(out))
	created := 0
	for i, e := range out {
		enqueued[i] = e.Job
		if e.Created {
			created++
		}
	}
	s.transition(queue, "enqueued", created)
	writeJobList(w, enqueued)
}

// handleJobGet godoc
//
//	@Summary		Get a job
//	@Description	The job as it is now, in any state, without its token. 404 EMQGONE when there is no such job (never enqueued, removed, or deleted by retention).
//	@ID			getJob
//	@Tags		jobs
//	@Security		BearerAuth
//	@Security		Signature
//	@Param		queue	path	string	true	"queue name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Param		id		path	string	true	"job id: 1 to 128 of A-Z a-z 0-9 . _ : -, not only dots"	minlength(1)	maxlength(128)
//	@Produce	application/problem+json
//	@Failure	400	{object}	Problem	"EMQINVALID"
//	@Failure	404	{object}	Problem	"EMQGONE"
//	@Produce	json
//	@Success	200	{object}	Job
//	@Router		/queues/{queue}/jobs/{id} [get]
func (s *server) handleJobGet(w http.ResponseWriter, r *http.Request) {
	queue, id, err := jobParams(r)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	j, err := s.admin.Get(r.Context(), queue, id)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJob(w, http.StatusOK, j)
}

// Removed answers a removal.
type Removed struct {
	Removed int `json:"removed" binding:"required" example:"1"`
} // @name Removed

// handleJobRemove godoc
//
//	@Summary		Remove a job
//	@Description	Deletes the job. An active job is removed only with force=true; its holder's next call is then answered 404 EMQGONE. Tokens are random (53 bits), so an id enqueued again does not get an old holder's token.
//	@ID				removeJob
//	@Tags			jobs
//	@Security		BearerAuth
//	@Security		Signature
//	@Param			queue	path	string	true	"queue name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Param			id		path	string	true	"job id: 1 to 128 of A-Z a-z 0-9 . _ : -, not only dots"	minlength(1)	maxlength(128)
//	@Param			force	query	bool	false	"remove an active job too"
//	@Produce		application/problem+json
//	@Failure		400	{object}	Problem	"EMQINVALID"
//	@Failure		403	{object}	Problem	"EMQFORBIDDEN: the key's role may not do this"
//	@Failure		404	{object}	Problem	"EMQGONE"
//	@Failure		409	{object}	Problem	"EMQSTATE: the job is active and force is not set"
//	@Produce		json
//	@Success		200	{object}	Removed
//	@Router			/queues/{queue}/jobs/{id} [delete]
func (s *server) handleJobRemove(w http.ResponseWriter, r *http.Request) {
	queue, id, err := jobParams(r)
	var force bool
	if err == nil {
		force, err = boolQuery(r, "force")
	}
	if err == nil {
		err = s.admin.Remove(r.Context(), queue, id, force, actorOf(r))
	}
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	s.audit(r, "remove", "queue", queue, "job", id, "force", force)
	s.transition(queue, "removed", 1)
	writeJSON(w, http.StatusOK, Removed{Removed: 1})
}
