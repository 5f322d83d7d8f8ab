// Package job is echo_mq's model of a job: its states, the Job row as the
// scripts return it, and the errors the scripts reply with.
package job

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The states of a job.
const (
	StatePending   = "pending"
	StateActive    = "active"
	StateDelayed   = "delayed"
	StateCompleted = "completed"
	StateDead      = "dead"
	StateCancelled = "cancelled"
	// StateWaiting is a job that waits for its dependencies to complete
	// (docs/design.md#batches-and-dependencies).
	StateWaiting = "waiting"
)

// What a dependant does when a dependency of it ends dead or cancelled
// (its on_dependency_failure): it is cancelled, or runs anyway.
const (
	OnDependencyFailureCancel = "cancel"
	OnDependencyFailureRun    = "run"
)

// OnDependencyFailure names a dependant's policy: run, or cancel.
func OnDependencyFailure(run bool) string {
	if run {
		return OnDependencyFailureRun
	}
	return OnDependencyFailureCancel
}

// DefaultMaxAttempts is a job's attempt budget when its enqueue gave none.
// A row stores max_attempts only when it differs (lua/row.lua), so this
// value is part of the row format: changing it changes stored jobs too.
const DefaultMaxAttempts = 3

// MaxLogLines is how many lines of its log a job keeps: an append beyond
// drops the oldest (lua/log_append.lua).
const MaxLogLines = 1000

// Job is one job as its row in Redis holds it. Zero times are absent.
type Job struct {
	ID              string
	Queue           string
	State           string
	Payload         json.RawMessage
	Result          json.RawMessage
	Progress        json.RawMessage
	Priority        int
	Attempts        int
	MaxAttempts     int
	Stalled         int
	LastError       string
	CancelRequested bool
	CancelReason    string
	Worker          string
	Group           string // "": none (docs/design.md#flow-control)
	DedupeKey       string // "": none (docs/design.md#admission-and-lifetimes)
	DedupeMode      string
	ExpiresAt       time.Time
	Timeout         time.Duration
	// Traceparent is the W3C traceparent its enqueue sent, kept so that
	// its worker can continue the producer's trace; "": none.
	Traceparent string
	// BatchID is the batch it belongs to; "": none.
	BatchID string
	// DependsOn are the jobs it waits (or waited) for; RunOnFailure that
	// it runs when one of them dies or is cancelled, rather than be
	// cancelled.
	DependsOn    []string
	RunOnFailure bool
	Token        int64
	CreatedAt    time.Time
	RunAt        time.Time
	// ReadyAt is when the job last became claimable (moved into pending),
	// the start of its wait; zero for a row written before it was kept,
	// whose wait starts at CreatedAt or RunAt.
	ReadyAt        time.Time
	StartedAt      time.Time
	LeaseExpiresAt time.Time
	FinishedAt     time.Time
	// FailedAt is when its last attempt failed and was retried: that
	// attempt's end, for its run's length; zero when none has.
	FailedAt time.Time
	// LogLines is how many lines of its log the job keeps (at most
	// MaxLogLines); 0 for none.
	LogLines int
}

// Parse reads a job from the reply forms the scripts use: the id, then
// the row's fields and values as HGETALL returns them; or the id, then
// lists of such pairs, later lists overriding earlier ones (a script passes
// the row it read through untouched and adds what it changed). An empty
// value is an absent field: a script clears one that way.
func Parse(queue string, reply any) (Job, error) {
	items, ok := reply.([]any)
	if !ok || len(items) == 0 {
		return Job{}, fmt.Errorf("job reply: unexpected %T of length %d", reply, len(items))
	}
	j := Job{Queue: queue, ID: str(items[0]), MaxAttempts: DefaultMaxAttempts}
	if len(items) > 1 {
		if _, nested := items[1].([]any); nested {
			for _, list := range items[1:] {
				pairs, _ := list.([]any)
				if err := j.setAll(pairs); err != nil {
					return Job{}, err
				}
			}
			return j, nil
		}
	}
	if len(items)%2 != 1 {
		return Job{}, fmt.Errorf("job reply: unexpected %T of length %d", reply, len(items))
	}
	return j, j.setAll(items[1:])
}

// setAll stores the field and value pairs of pairs, in order.
func (j *Job) setAll(pairs []any) error {
	if len(pairs)%2 != 0 {
		return fmt.Errorf("job %s: %d items in a list of pairs", j.ID, len(pairs))
	}
	for i := 0; i < len(pairs); i += 2 {
		if err := j.set(str(pairs[i]), str(pairs[i+1])); err != nil {
			return fmt.Errorf("job %s: field %s: %w", j.ID, str(pairs[i]), err)
		}
	}
	return nil
}

// ParseList reads a list of jobs in reply form.
func ParseList(queue string, reply any) ([]Job, error) {
	items, ok := reply.([]any)
	if !ok {
		return nil, fmt.Errorf("job list reply: unexpected %T", reply)
	}
	jobs := make([]Job, 0, len(items))
	for _, item := range items {
		j, err := Parse(queue, item)
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, j)
	}
	return jobs, nil
}

// FromHash reads a job from its row as HGETALL returns it to Go.
func FromHash(queue, id string, row map[string]string) (Job, error) {
	j := Job{Queue: queue, ID: id, MaxAttempts: DefaultMaxAttempts}
	for field, value := range row {
		if err := j.set(field, value); err != nil {
			return Job{}, fmt.Errorf("job %s: field %s: %w", id, field, err)
		}
	}
	return j, nil
}

// set stores one field of the row; unknown fields (backoff, outcomes,
// gseq, flow) stay inside the scripts. An empty value is the field's zero
// (for max_attempts, the default), as an absent one is.
func (j *Job) set(field, value string) error {
	var err error
	switch field {
	case "state":
		j.State = value
	case "payload":
		j.Payload = rawJSON(value)
	case "result":
		j.Result = rawJSON(value)
	case "progress":
		j.Progress = rawJSON(value)
	case "priority":
		j.Priority, err = atoi(value)
	case "attempts":
		j.Attempts, err = atoi(value)
	case "max_attempts":
		j.MaxAttempts, err = atoi(value)
		if value == "" {
			j.MaxAttempts = DefaultMaxAttempts
		}
	case "stalled":
		j.Stalled, err = atoi(value)
	case "last_error":
		j.LastError = value
	case "cancel_requested":
		j.CancelRequested = value == "1"
	case "cancel_reason":
		j.CancelReason = value
	case "worker":
		j.Worker = value
	case "group":
		j.Group = value
	case "dedupe_key":
		j.DedupeKey = value
	case "dedupe_mode":
		j.DedupeMode = value
	case "expires_at":
		j.ExpiresAt, err = millis(value)
	case "timeout_ms":
		var ms int
		ms, err = atoi(value)
		j.Timeout = time.Duration(ms) * time.Millisecond
	case "token":
		j.Token = 0
		if value != "" {
			j.Token, err = strconv.ParseInt(value, 10, 64)
		}
	case "created_at":
		j.CreatedAt, err = millis(value)
	case "run_at":
		j.RunAt, err = millis(value)
	case "ready_at":
		j.ReadyAt, err = millis(value)
	case "traceparent":
		j.Traceparent = value
	case "batch_id":
		j.BatchID = value
	case "depends_on":
		j.DependsOn = nil
		if value != "" {
			j.DependsOn = strings.Split(value, ",")
		}
	case "dep_failure":
		j.RunOnFailure = value == "run"
	case "started_at":
		j.StartedAt, err = millis(value)
	case "lease_expires_at":
		j.LeaseExpiresAt, err = millis(value)
	case "finished_at":
		j.FinishedAt, err = millis(value)
	case "failed_at":
		j.FailedAt, err = millis(value)
	case "logs": // every line ever appended: the job keeps the last MaxLogLines
		j.LogLines, err = atoi(value)
		j.LogLines = min(j.LogLines, MaxLogLines)
	}
	return err
}

// rawJSON is a field's JSON text, nil when empty.
func rawJSON(value string) json.RawMessage {
	if value == "" {
		return nil
	}
	return json.RawMessage(value)
}

// atoi parses a whole number; empty is 0.
func atoi(value string) (int, error) {
	if value == "" {
		return 0, nil
	}
	return strconv.Atoi(value)
}

// millis parses a time in milliseconds since the epoch; empty is the zero
// time.
func millis(value string) (time.Time, error) {
	if value == "" {
		return time.Time{}, nil
	}
	ms, err := strconv.ParseInt(value, 10, 64)
	if err != nil {
		return time.Time{}, err
	}
	return time.UnixMilli(ms).UTC(), nil
}

// Millis turns a reply integer of milliseconds into a time.
func Millis(ms int64) time.Time {
	return time.UnixMilli(ms).UTC()
}

func str(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	default:
		return fmt.Sprint(v)
	}
}
