package http

import (
	"encoding/json"
	"time"
)

// Job is a job as the API shows it. Timestamps are RFC 3339 UTC with
// milliseconds; absent ones are omitted. Token is shown only to the claimer.
// The jobjson writers write it (appendJobFields), byte for byte what
// encoding/json writes of this struct (jobjson_test.go).
//
// The struct tags of the answer DTOs also write api/openapi.yaml (swag):
// binding:"required" marks a field every answer has (nothing checks it at
// run time but the contract tests); extensions:"x-any-json" a field that
// holds any JSON value, and extensions:"x-nullable" one that may be null
// (api/specfix spells both as OpenAPI 3.1 does).
type Job struct {
	ID    string `json:"id" binding:"required" example:"0190f8a2-7c4e-7d2a-9b1e-3f5c2a1b0c9d"`
	Queue string `json:"queue" binding:"required" example:"emails"`
	State string `json:"state" binding:"required" enums:"pending,active,delayed,waiting,completed,dead,cancelled" example:"active"`
	// Any JSON value, given back as it was sent (digit for digit,
	// insignificant whitespace removed), as result and progress are.
	// Null for none; left out, as result is, of the jobs a complete, fail
	// or batch complete finished when it was sent with Prefer:
	// return=minimal.
	Payload json.RawMessage `json:"payload,omitempty" swaggertype:"object" extensions:"x-any-json"`
	// What the worker completed the job with: any JSON value.
	Result json.RawMessage `json:"result,omitempty" swaggertype:"object" extensions:"x-any-json"`
	// The last progress a lease extension stored: any JSON value.
	Progress        json.RawMessage `json:"progress,omitempty" swaggertype:"object" extensions:"x-any-json"`
	Priority        int             `json:"priority" binding:"required" example:"0"`
	Attempts        int             `json:"attempts" binding:"required" example:"1"`
	MaxAttempts     int             `json:"max_attempts" binding:"required" example:"3"`
	Stalled         int             `json:"stalled" binding:"required" example:"0"`
	LastError       string          `json:"last_error,omitempty"`
	CancelRequested bool            `json:"cancel_requested" binding:"required"`
	CancelReason    string          `json:"cancel_reason,omitempty"`
	Worker          string          `json:"worker,omitempty" example:"worker-1"`
	// The job's group, when its enqueue named one (flow control).
	Group string `json:"group,omitempty" example:"tenant-42"`
	// The job's dedupe key, when its enqueue named one.
	DedupeKey string `json:"dedupe_key,omitempty" example:"user-42:digest"`
	// When the job stops being claimable if it has not started
	// (expires_in_ms).
	ExpiresAt string `json:"expires_at,omitempty" format:"date-time"`
	// The total time one attempt may run, when its enqueue set one.
	TimeoutMs int64 `json:"timeout_ms,omitempty" format:"int64" example:"30000"`
	// The W3C traceparent header its enqueue sent, so that its worker
	// can continue the producer's trace.
	Traceparent string `json:"traceparent,omitempty" example:"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"`
	// The batch the job belongs to, when it was enqueued in one.
	BatchID string `json:"batch_id,omitempty" example:"import-7"`
	// The jobs it waits (state waiting) or waited for: it became pending
	// once each completed.
	DependsOn []string `json:"depends_on,omitempty" example:"extract-7"`
	// With depends_on: what it does when one of them ends dead or
	// cancelled (cancel: it is cancelled; run: it runs anyway).
	OnDependencyFailure string `json:"on_dependency_failure,omitempty" enums:"cancel,run" example:"cancel"`
	Token               int64  `json:"token,omitempty" format:"int64" example:"42"`
	CreatedAt           string `json:"created_at,omitempty" format:"date-time" binding:"required" example:"2026-11-29T19:06:37.123Z"`
	RunAt               string `json:"run_at,omitempty" format:"date-time"`
	StartedAt           string `json:"started_at,omitempty" format:"date-time"`
	LeaseExpiresAt      string `json:"lease_expires_at,omitempty" format:"date-time"`
	FinishedAt          string `json:"finished_at,omitempty" format:"date-time"`
	// How many lines the job's log holds (at most 1000), when it has
	// any: GET /queues/{queue}/jobs/{id}/logs reads them.
	LogLines int `json:"log_lines,omitempty" example:"120"`
} // @name Job

// stamp formats t as RFC 3339 UTC with milliseconds, "" for the zero time.
func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// JobList is a list of jobs.
type JobList struct {
	Jobs []Job `json:"jobs" binding:"required"`
} // @name JobList
