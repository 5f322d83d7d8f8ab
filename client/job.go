package client

import (
	"encoding/json"
	"time"
)

// State is the state of a job, as the service names it.
type State string

// The states of a job.
const (
	StatePending   State = "pending"   // waiting to be claimed
	StateActive    State = "active"    // claimed: a worker holds its lease
	StateDelayed   State = "delayed"   // waiting for its run-at (a delay or a retry's backoff)
	StateWaiting   State = "waiting"   // waiting for its dependencies to complete (EnqueueRequest.DependsOn)
	StateCompleted State = "completed" // finished with a result
	StateDead      State = "dead"      // failed for good: out of attempts, fatal, or stalled too often
	StateCancelled State = "cancelled" // cancelled before or while it ran
)

// Job is a job as the service shows it. Payload, Result and Progress are
// the JSON values that were sent, as they were sent; decode them with
// json.Unmarshal. Payload and Result are nil in the answer of a Complete or
// Fail that asked for a minimal one. A timestamp the job does not have yet
// is the zero time.
type Job struct {
	ID       string          `json:"id"`
	Queue    string          `json:"queue"`
	State    State           `json:"state"`
	Payload  json.RawMessage `json:"payload"`
	Result   json.RawMessage `json:"result,omitempty"`
	Progress json.RawMessage `json:"progress,omitempty"`
	// Priority is 0 to 9; lower is claimed first.
	Priority int `json:"priority"`
	// Attempts counts the claims of the job.
	Attempts    int `json:"attempts"`
	MaxAttempts int `json:"max_attempts"`
	// Stalled counts the times its lease lapsed and a sweep took it back.
	Stalled   int    `json:"stalled"`
	LastError string `json:"last_error,omitempty"`
	// CancelRequested says a cancel was asked for the current attempt.
	CancelRequested bool   `json:"cancel_requested"`
	CancelReason    string `json:"cancel_reason,omitempty"`
	// Worker is the name the last claimer gave.
	Worker string `json:"worker,omitempty"`
	// Group is the job's group, when its enqueue named one.
	Group string `json:"group,omitempty"`
	// DedupeKey is the job's dedupe key, when its enqueue named one
	// (EnqueueRequest.Dedupe).
	DedupeKey string `json:"dedupe_key,omitempty"`
	// ExpiresAt is when the job stops being claimable if it has not
	// started: CreatedAt + EnqueueRequest.ExpiresIn. The zero time: never.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	// Timeout is the total time one attempt may run
	// (EnqueueRequest.Timeout); 0: no bound.
	Timeout time.Duration `json:"-"` // timeout_ms, by MarshalJSON and UnmarshalJSON
	// Token fences every call on a claimed job (extend, complete, fail,
	// cancellation check). Only a claim's answer carries it; it is 0
	// anywhere else. Treat it as opaque.
	Token int64 `json:"token,omitempty"`
	// Traceparent is the W3C traceparent header its enqueue sent, the
	// producer's span (ContextWithTraceparent); empty when none. A worker
	// continues the producer's trace from it (see the package doc,
	// "Tracing").
	Traceparent string `json:"traceparent,omitempty"`
	// BatchID is the batch the job belongs to, when it was enqueued in one
	// (CreateBatch, AddBatchJobs).
	BatchID string `json:"batch_id,omitempty"`
	// DependsOn are the jobs it waits for (StateWaiting) or waited for,
	// when its enqueue named some (EnqueueRequest.DependsOn), and
	// OnDependencyFailure what it does when one of them ends dead or
	// cancelled; both empty for a job without dependencies.
	DependsOn           []string          `json:"depends_on,omitempty"`
	OnDependencyFailure DependencyFailure `json:"on_dependency_failure,omitempty"`

	CreatedAt      time.Time `json:"created_at,omitzero"`
	RunAt          time.Time `json:"run_at,omitzero"`
	StartedAt      time.Time `json:"started_at,omitzero"`
	LeaseExpiresAt time.Time `json:"lease_expires_at,omitzero"`
	FinishedAt     time.Time `json:"finished_at,omitzero"`
	// LogLines is how many lines the job's log holds (Client.Logs reads
	// them); 0 for none.
	LogLines int `json:"log_lines,omitempty"`
}

// jobFields is a Job without its methods, for its JSON.
type jobFields Job

// MarshalJSON writes j as the API does, Timeout as timeout_ms.
func (j Job) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		jobFields
		TimeoutMs int64 `json:"timeout_ms,omitempty"`
	}{jobFields(j), millis(j.Timeout)})
}

// UnmarshalJSON reads j as the API writes it, timeout_ms into Timeout.
func (j *Job) UnmarshalJSON(data []byte) error {
	w := struct {
		*jobFields
		TimeoutMs int64 `json:"timeout_ms"`
	}{jobFields: (*jobFields)(j)}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	j.Timeout = time.Duration(w.TimeoutMs) * time.Millisecond
	return nil
}
