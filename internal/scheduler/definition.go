// Package scheduler keeps a queue's schedules in Redis and fires them
// (docs/design.md#schedules): the Service creates, reads, pauses, runs and
// deletes them through the schedule scripts, and every service replica
// runs a Timer that enqueues each tick's job. When the ticks fall (cron in
// a time zone, or a fixed interval) is package schedule's arithmetic; what
// a tick does is one atomic script (lua/schedule_fire.lua), so that of the
// replicas that see a tick, exactly one fires it.
package scheduler

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/internal/lease"
	"github.com/echo-mq/echo_mq/internal/schedule"
)

// Overlap policies: what a tick does while the job of the one before it
// has not finished.
const (
	OverlapAllow = "allow" // enqueue it anyway
	OverlapSkip  = "skip"  // enqueue nothing, count the tick in skipped
)

// Definition is a schedule as it is put: its cadence (Cron in TZ, or
// Every), the job each tick enqueues, and its policies.
type Definition struct {
	Cron    string
	TZ      string
	Every   time.Duration
	Job     lease.NewJob // ID and Delay are not used: a tick's job is pending at once
	Overlap string       // OverlapAllow or OverlapSkip
	Misfire string       // schedule.MisfireOnce or schedule.MisfireSkip
	Window  schedule.Window
}

// Cadence is when d's ticks fall. Errors wrap schedule.ErrCadence.
func (d Definition) Cadence() (schedule.Cadence, error) {
	switch {
	case d.Cron != "" && d.Every != 0:
		return schedule.Cadence{}, fmt.Errorf("%w: give cron or every_ms, not both", schedule.ErrCadence)
	case d.Cron != "":
		return schedule.Cron(d.Cron, d.TZ)
	case d.Every != 0:
		if d.TZ != "" {
			// every_ms counts from the epoch, in no zone; a zone would
			// suggest otherwise.
			return schedule.Cadence{}, fmt.Errorf("%w: tz applies to cron only", schedule.ErrCadence)
		}
		return schedule.Every(d.Every)
	default:
		return schedule.Cadence{}, fmt.Errorf("%w: give cron or every_ms", schedule.ErrCadence)
	}
}

// Schedule is one schedule: its name, definition and record.
type Schedule struct {
	Name string
	Definition
	Paused               bool
	Version              string    // changes with every change of the definition or of Paused
	Next                 time.Time // the next tick; zero: none (paused, or past its end)
	LastRunAt            time.Time // when its last job was enqueued; zero: never
	LastJobID            string
	Runs, Skipped        int64 // jobs enqueued; ticks overlap "skip" passed over
	Missed               int64 // ticks missed while no replica ran, misfire passed over
	CreatedAt, UpdatedAt time.Time
}

// ErrNotFound means there is no such schedule: a job.ErrGone, so that the
// API answers it 404 EMQGONE. Service's errors name the schedule
// (notFound); errors.Is(err, ErrNotFound) holds for them.
var ErrNotFound error = &job.GoneError{What: "schedule"}

// notFound is ErrNotFound naming schedule name of queue.
func notFound(queue, name string) error {
	return &job.GoneError{What: "schedule", Queue: queue, Name: name}
}

// stored is the form a definition is kept in, in the schedules hash.
type stored struct {
	Cron        string          `json:"cron,omitempty"`
	TZ          string          `json:"tz,omitempty"`
	EveryMS     int64           `json:"every_ms,omitempty"`
	Payload     json.RawMessage `json:"payload"`
	Priority    int             `json:"priority,omitempty"`
	MaxAttempts int             `json:"max_attempts,omitempty"`
	Backoff     *storedBackoff  `json:"backoff,omitempty"`
	Group       string          `json:"group,omitempty"`
	ExpiresInMS int64           `json:"expires_in_ms,omitempty"`
	TimeoutMS   int64           `json:"timeout_ms,omitempty"`
	Overlap     string          `json:"overlap"`
	Misfire     string          `json:"misfire"`
	StartAt     int64           `json:"start_at,omitempty"` // ms
	EndAt       int64           `json:"end_at,omitempty"`   // ms
}

type storedBackoff struct {
	Exponential bool  `json:"exponential,omitempty"`
	DelayMS     int64 `json:"delay_ms"`
	MaxDelayMS  int64 `json:"max_delay_ms"`
}

// encode is d in its stored form.
func (d Definition) encode() (string, error) {
	s := stored{Cron: d.Cron, TZ: d.TZ, EveryMS: d.Every.Milliseconds(), Payload: d.Job.Payload,
		Priority: d.Job.Priority, MaxAttempts: d.Job.MaxAttempts, Group: d.Job.Group,
		ExpiresInMS: d.Job.ExpiresIn.Milliseconds(), TimeoutMS: d.Job.Timeout.Milliseconds(),
		Overlap: d.Overlap, Misfire: d.Misfire, StartAt: unixMilli(d.Window.Start), EndAt: unixMilli(d.Window.End)}
	if b := d.Job.Backoff; b != nil {
		s.Backoff = &storedBackoff{Exponential: b.Exponential, DelayMS: b.Delay.Milliseconds(), MaxDelayMS: b.MaxDelay.Milliseconds()}
	}
	text, err := json.Marshal(s)
	return string(text), err
}

// decodeDefinition reads a definition's stored form.
func decodeDefinition(text string) (Definition, error) {
	var s stored
	if err := json.Unmarshal([]byte(text), &s); err != nil {
		return Definition{}, fmt.Errorf("stored schedule: %w", err)
	}
	d := Definition{Cron: s.Cron, TZ: s.TZ, Every: time.Duration(s.EveryMS) * time.Millisecond,
		Job: lease.NewJob{Payload: s.Payload, Priority: s.Priority, MaxAttempts: s.MaxAttempts, Group: s.Group,
			ExpiresIn: time.Duration(s.ExpiresInMS) * time.Millisecond, Timeout: time.Duration(s.TimeoutMS) * time.Millisecond},
		Overlap: s.Overlap, Misfire: s.Misfire, Window: schedule.Window{Start: fromMilli(s.StartAt), End: fromMilli(s.EndAt)}}
	if b := s.Backoff; b != nil {
		d.Job.Backoff = &lease.Backoff{Exponential: b.Exponential, Delay: time.Duration(b.DelayMS) * time.Millisecond,
			MaxDelay: time.Duration(b.MaxDelayMS) * time.Millisecond}
	}
	return d, nil
}

// record fields after the name and definition, in lua/schedules.lua's
// RECORD order.
const (
	fVersion = iota
	fPaused
	fNext
	fLastRunAt
	fLastJobID
	fRuns
	fSkipped
	fMissed
	fCreatedAt
	fUpdatedAt
	recordFields
)

// parseRecord reads a record reply of the schedule scripts: {name,
// definition, RECORD's fields}.
func parseRecord(reply any) (Schedule, error) {
	items, ok := reply.([]any)
	if !ok || len(items) != 2+recordFields {
		return Schedule{}, fmt.Errorf("schedule record: unexpected %T of %d", reply, len(items))
	}
	str := func(v any) string { s, _ := v.(string); return s }
	num := func(v any) int64 { n, _ := strconv.ParseInt(str(v), 10, 64); return n }
	at := func(v any) time.Time { return fromMilli(num(v)) }
	f := items[2:]
	s := Schedule{Name: str(items[0]), Version: str(f[fVersion]), Paused: str(f[fPaused]) == "1",
		Next: at(f[fNext]), LastRunAt: at(f[fLastRunAt]), LastJobID: str(f[fLastJobID]),
		Runs: num(f[fRuns]), Skipped: num(f[fSkipped]), Missed: num(f[fMissed]),
		CreatedAt: at(f[fCreatedAt]), UpdatedAt: at(f[fUpdatedAt])}
	var err error
	s.Definition, err = decodeDefinition(str(items[1]))
	return s, err
}

func unixMilli(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMilli(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}
