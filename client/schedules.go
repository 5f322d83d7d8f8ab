package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Overlap says what a schedule's tick does while the job of its previous
// tick is still pending, delayed or active.
type Overlap string

// The overlap policies of a schedule.
const (
	OverlapAllow Overlap = "allow" // enqueue the tick's job anyway (the default)
	OverlapSkip  Overlap = "skip"  // enqueue nothing; the tick counts in Schedule.Skipped
)

// Misfire says what a schedule does with the ticks that came while no
// service replica ran. Either way its cadence then resumes, and the ticks
// passed over count in Schedule.Missed.
type Misfire string

// The misfire policies of a schedule.
const (
	MisfireOnce Misfire = "once" // one catch-up job, for the latest of them (the default)
	MisfireSkip Misfire = "skip" // no job for any of them
)

// ScheduleRequest is a schedule, put whole: its cadence (exactly one of
// Cron and Every) and the job each of its ticks enqueues.
type ScheduleRequest struct {
	// Cron is five fields (minute hour day-of-month month day-of-week), such
	// as "*/5 * * * *", or @hourly, @daily (@midnight), @weekly, @monthly,
	// @yearly (@annually), read in TZ.
	Cron string
	// Every makes a tick at every multiple of Every since the Unix epoch,
	// counted in whole milliseconds: 100 ms to 365 days.
	Every time.Duration
	// TZ is the IANA time zone Cron is read in, such as "Europe/Berlin";
	// empty: UTC. Cron only.
	TZ string
	// Job is the job each tick enqueues.
	Job ScheduleJob
	// Overlap is what a tick does while the previous tick's job is still
	// waiting or running; empty: OverlapAllow.
	Overlap Overlap
	// Misfire is what the ticks missed while no service replica ran do;
	// empty: MisfireOnce.
	Misfire Misfire
	// StartAt, when not zero, is the earliest time a tick may come; EndAt,
	// when not zero, the latest (later than StartAt).
	StartAt time.Time
	EndAt   time.Time
	// Paused puts the schedule paused: it fires nothing until
	// ResumeSchedule.
	Paused bool
}

// ScheduleJob is the job each tick of a schedule enqueues, pending at once
// with the id "<schedule name>:<tick in ms since the epoch>": an
// EnqueueRequest without an id and a delay.
//
// In a Schedule the service answered, Payload is a json.RawMessage, the
// payload as it was sent:
//
//	json.Unmarshal(s.Job.Payload.(json.RawMessage), &v)
//
// and the whole ScheduleJob can go into a ScheduleRequest as it is.
type ScheduleJob struct {
	// Payload is each job's input, sent as JSON: a json.RawMessage as it
	// is, a []byte as a base64 string (see the package doc, "Values"). nil
	// sends JSON null.
	Payload any
	// Priority is 0 (the default, first) to 9 (last).
	Priority int
	// MaxAttempts is how many claims each job gets before a failure is
	// final; 0 leaves the service's default (3).
	MaxAttempts int
	// Backoff is the wait before each retry after a failure; nil leaves
	// the service's default (exponential from 1 s, capped at 1 hour). In a
	// Schedule the service answered, its MaxDelay is the cap in force.
	Backoff *Backoff
	// Group is each job's group for flow control (docs/flow-control.md).
	// Empty: none.
	Group string
	// ExpiresIn, when not 0, bounds each job's wait: one not started
	// within it of its tick is never claimed, and ends cancelled with the
	// CancelReason "expired" (EnqueueRequest.ExpiresIn).
	ExpiresIn time.Duration
	// Timeout, when not 0, is the total time one attempt of each job may
	// run (EnqueueRequest.Timeout).
	Timeout time.Duration
}

// scheduleBody is a ScheduleRequest as the API reads it.
type scheduleBody struct {
	Cron    string          `json:"cron,omitempty"`
	EveryMs *int64          `json:"every_ms,omitempty"`
	TZ      string          `json:"tz,omitempty"`
	Job     scheduleJobBody `json:"job"`
	Overlap Overlap         `json:"overlap,omitempty"`
	Misfire Misfire         `json:"misfire,omitempty"`
	StartAt time.Time       `json:"start_at,omitzero"`
	EndAt   time.Time       `json:"end_at,omitzero"`
	Paused  bool            `json:"paused,omitempty"`
}

// scheduleJobBody is a ScheduleJob as the API reads and answers it.
type scheduleJobBody struct {
	Payload     json.RawMessage `json:"payload"`
	Priority    int             `json:"priority,omitempty"`
	MaxAttempts int             `json:"max_attempts,omitempty"`
	Backoff     *backoffBody    `json:"backoff,omitempty"`
	Group       string          `json:"group,omitempty"`
	ExpiresInMs *int64          `json:"expires_in_ms,omitempty"`
	TimeoutMs   *int64          `json:"timeout_ms,omitempty"`
}

func (r ScheduleRequest) body() (scheduleBody, error) {
	job, err := r.Job.body()
	if err != nil {
		return scheduleBody{}, err
	}
	b := scheduleBody{Cron: r.Cron, TZ: r.TZ, Job: job, Overlap: r.Overlap, Misfire: r.Misfire,
		StartAt: r.StartAt, EndAt: r.EndAt, Paused: r.Paused}
	if r.Every != 0 {
		// Sent whenever set, so that a cadence under 1 ms is refused, not
		// taken for none.
		ms := millis(r.Every)
		b.EveryMs = &ms
	}
	return b, nil
}

func (j ScheduleJob) body() (scheduleJobBody, error) {
	payload, err := payloadOf(j.Payload)
	if err != nil {
		return scheduleJobBody{}, err
	}
	return scheduleJobBody{Payload: payload, Priority: j.Priority, MaxAttempts: j.MaxAttempts,
		Backoff: j.Backoff.body(), Group: j.Group, ExpiresInMs: millisIfSet(j.ExpiresIn), TimeoutMs: millisIfSet(j.Timeout)}, nil
}

// MarshalJSON writes j as the API does.
func (j ScheduleJob) MarshalJSON() ([]byte, error) {
	b, err := j.body()
	if err != nil {
		return nil, err
	}
	return json.Marshal(b)
}

// UnmarshalJSON reads j as the API writes it, its payload as a
// json.RawMessage.
func (j *ScheduleJob) UnmarshalJSON(data []byte) error {
	var b scheduleJobBody
	if err := json.Unmarshal(data, &b); err != nil {
		return err
	}
	*j = ScheduleJob{Priority: b.Priority, MaxAttempts: b.MaxAttempts, Backoff: b.Backoff.backoff(), Group: b.Group}
	if b.ExpiresInMs != nil {
		j.ExpiresIn = time.Duration(*b.ExpiresInMs) * time.Millisecond
	}
	if b.TimeoutMs != nil {
		j.Timeout = time.Duration(*b.TimeoutMs) * time.Millisecond
	}
	if b.Payload != nil {
		j.Payload = b.Payload
	}
	return nil
}

// Schedule is a schedule as the service shows it: its definition, its
// next tick and what it has done. A time the API answers as null is nil
// here (NextRunAt, LastRunAt, and LastJobID with it); one it leaves out is
// the zero time (StartAt, EndAt).
type Schedule struct {
	Name string `json:"name"`
	// Cron is the cadence of a cron schedule, empty for an Every one.
	Cron string `json:"cron,omitempty"`
	// Every is the cadence of an every_ms schedule, 0 for a cron one.
	Every time.Duration `json:"-"` // every_ms, by MarshalJSON and UnmarshalJSON
	// TZ is the zone Cron is read in ("UTC" when the put named none); empty
	// for an Every schedule.
	TZ      string      `json:"tz,omitempty"`
	Job     ScheduleJob `json:"job"`
	Overlap Overlap     `json:"overlap"`
	Misfire Misfire     `json:"misfire"`
	StartAt time.Time   `json:"start_at,omitzero"`
	EndAt   time.Time   `json:"end_at,omitzero"`
	Paused  bool        `json:"paused"`
	// NextRunAt is the next tick; nil while paused, and once past EndAt.
	NextRunAt *time.Time `json:"next_run_at"`
	// LastRunAt is when its last job was enqueued, and LastJobID that job's
	// id; both nil before the first.
	LastRunAt *time.Time `json:"last_run_at"`
	LastJobID *string    `json:"last_job_id"`
	// Runs counts the jobs it enqueued, by its ticks and by RunSchedule.
	Runs int64 `json:"runs"`
	// Skipped counts the ticks that OverlapSkip passed over.
	Skipped int64 `json:"skipped"`
	// Missed counts the ticks that came while no service replica ran and
	// that Misfire passed over.
	Missed    int64     `json:"missed"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// scheduleFields is a Schedule without its methods, for its JSON.
type scheduleFields Schedule

// MarshalJSON writes s as the API does, Every as every_ms.
func (s Schedule) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		scheduleFields
		EveryMs int64 `json:"every_ms,omitempty"`
	}{scheduleFields(s), millis(s.Every)})
}

// UnmarshalJSON reads s as the API writes it, every_ms into Every.
func (s *Schedule) UnmarshalJSON(data []byte) error {
	w := struct {
		*scheduleFields
		EveryMs int64 `json:"every_ms"`
	}{scheduleFields: (*scheduleFields)(s)}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	s.Every = time.Duration(w.EveryMs) * time.Millisecond
	return nil
}

// maxSchedulePage is the most schedules the service answers in a page.
const maxSchedulePage = 1000

// PutSchedule creates or replaces, whole, the schedule name of queue (1 to
// 100 of A-Z a-z 0-9 . _ -, not only dots). created is true for a new
// schedule, false for one replaced: a replaced schedule keeps its Runs,
// Skipped, Missed and last run, and its cadence starts again from now.
//
// Each tick enqueues one job, with the id "<name>:<tick in ms since the
// epoch>", within a second of the tick however many service replicas run;
// no tick is fired twice. A request with both Cron and Every, or neither,
// is ErrInvalid on the field "cron". Putting a schedule takes an admin key.
func (c *Client) PutSchedule(ctx context.Context, queue, name string, req ScheduleRequest) (s Schedule, created bool, err error) {
	body, err := req.body()
	if err != nil {
		return Schedule{}, false, err
	}
	status, err := c.do(ctx, http.MethodPut, schedulePath(queue, name, ""), body, &s)
	return s, status == http.StatusCreated, err
}

// Schedule returns the schedule name of queue as it is now; ErrGone if
// there is none.
func (c *Client) Schedule(ctx context.Context, queue, name string) (Schedule, error) {
	var s Schedule
	_, err := c.do(ctx, http.MethodGet, schedulePath(queue, name, ""), nil, &s)
	return s, err
}

// ListSchedules returns one page of queue's schedules, by name: up to
// limit of them (1 to 1000; 0: the service's default, 100) after cursor
// ("" for the first page), and next, the cursor of the page after; next
// is "" on the last page.
func (c *Client) ListSchedules(ctx context.Context, queue, cursor string, limit int) (page []Schedule, next string, err error) {
	query := url.Values{}
	if limit != 0 {
		query.Set("limit", strconv.Itoa(limit))
	}
	if cursor != "" {
		query.Set("cursor", cursor)
	}
	path := queuePath(queue, "/schedules")
	if len(query) > 0 {
		path += "?" + query.Encode()
	}
	var out struct {
		Schedules  []Schedule `json:"schedules"`
		NextCursor string     `json:"next_cursor"` // null on the last page: ""
	}
	_, err = c.do(ctx, http.MethodGet, path, nil, &out)
	return out.Schedules, out.NextCursor, err
}

// Schedules returns all of queue's schedules, by name, reading them page
// by page with ListSchedules. A schedule put or deleted while it reads
// may or may not be in the list.
func (c *Client) Schedules(ctx context.Context, queue string) ([]Schedule, error) {
	var all []Schedule
	cursor := ""
	for {
		page, next, err := c.ListSchedules(ctx, queue, cursor, maxSchedulePage)
		if err != nil {
			return nil, err
		}
		all = append(all, page...)
		if next == "" {
			return all, nil
		}
		cursor = next
	}
}

// DeleteSchedule deletes the schedule name of queue: it fires no more,
// and the jobs it enqueued stay. ErrGone if there is none. It takes an
// admin key.
func (c *Client) DeleteSchedule(ctx context.Context, queue, name string) error {
	_, err := c.do(ctx, http.MethodDelete, schedulePath(queue, name, ""), nil, nil)
	return err
}

// PauseSchedule pauses the schedule name of queue and returns it: it fires
// nothing until resumed, and its NextRunAt is nil meanwhile. Pausing a
// paused schedule changes nothing. ErrGone if there is none. It takes an
// admin key.
func (c *Client) PauseSchedule(ctx context.Context, queue, name string) (Schedule, error) {
	var s Schedule
	_, err := c.do(ctx, http.MethodPost, schedulePath(queue, name, "/pause"), nil, &s)
	return s, err
}

// ResumeSchedule resumes the schedule name of queue and returns it: it
// fires again from its next tick after now; the ticks that passed while it
// was paused are not caught up. Resuming a running schedule changes
// nothing. ErrGone if there is none. It takes an admin key.
func (c *Client) ResumeSchedule(ctx context.Context, queue, name string) (Schedule, error) {
	var s Schedule
	_, err := c.do(ctx, http.MethodPost, schedulePath(queue, name, "/resume"), nil, &s)
	return s, err
}

// RunSchedule enqueues one job of the schedule name of queue now, outside
// its cadence (paused or not, whatever its Overlap), and returns it: its
// id is "<name>:run:<ms since the epoch>", and it counts in the schedule's
// Runs and is its last job. Two runs in the same millisecond both answer
// the one job the first enqueued. ErrGone if there is no such schedule. It
// takes an admin key.
func (c *Client) RunSchedule(ctx context.Context, queue, name string) (Job, error) {
	var job Job
	_, err := c.do(ctx, http.MethodPost, schedulePath(queue, name, "/run"), nil, &job)
	return job, err
}
