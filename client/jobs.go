package client

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// EnqueueRequest is one job to add to a queue.
type EnqueueRequest struct {
	// ID is the job's idempotency key (1 to 128 of A-Z a-z 0-9 . _ : -):
	// enqueueing an id that exists adds nothing and answers the job already
	// there. Empty: the service makes a time-ordered id.
	ID string
	// Payload is the job's input, sent as JSON: a json.RawMessage as it
	// is, a []byte as a base64 string (encoding/json's way; see the
	// package doc, "Values"). nil sends JSON null.
	Payload any
	// Priority is 0 (first) to 9 (last); 0 leaves the queue's default
	// (QueueSettings.JobDefaults), else 0.
	Priority int
	// Delay makes the job claimable only after it (delayed, not pending).
	Delay time.Duration
	// RunAt, when not zero, makes the job claimable only from then on, on
	// the service's (Redis's) clock, to the millisecond: Sidekiq's
	// perform_at. A time that has passed makes it pending at once. Not
	// with Delay (ErrInvalid).
	RunAt time.Time
	// MaxAttempts is how many claims the job gets before a failure is
	// final; 0 leaves the queue's default (QueueSettings.JobDefaults), else
	// the service's (3).
	MaxAttempts int
	// Backoff is the wait before each retry after a failure; nil leaves
	// the queue's default (QueueSettings.JobDefaults), else the service's
	// (exponential from 1 s, capped at 1 hour).
	Backoff *Backoff
	// Group is the job's group for flow control (docs/flow-control.md):
	// claims take turns over the groups, and the queue's group limits
	// apply to each. Empty: none.
	Group string
	// Dedupe keeps at most one job per key at a time, or per window: an
	// enqueue its key matches adds nothing and answers the keyed job
	// (Enqueue's created is false). See Dedupe. nil: none. An ID that
	// exists wins over the key.
	Dedupe *Dedupe
	// ExpiresIn, when not 0, bounds the wait: a job not started within it
	// of its enqueue is never claimed, and ends cancelled with the
	// CancelReason "expired". Job.ExpiresAt is CreatedAt + ExpiresIn.
	ExpiresIn time.Duration
	// Timeout, when not 0, is the total time one attempt may run (100 ms
	// to 24 hours): an extend never moves the lease past StartedAt +
	// Timeout, and the sweep then fails the attempt with the LastError
	// "timeout", retried under Backoff. A holder is stale from then on:
	// Work cancels a handler still running with ErrLeaseLost at its next
	// extend.
	Timeout time.Duration
	// DependsOn are the ids of up to 100 jobs of the queue, or of the same
	// EnqueueBatch or batch call, that the job waits for: it is
	// StateWaiting until each of them has completed (one completed already
	// counts as done), then pending (or delayed, until Delay from its
	// enqueue has passed). An id that is no job, or a cycle, is refused
	// (ErrInvalid). It does not apply to a job with a Group, a Dedupe key
	// or an ExpiresIn. Empty: none. See docs/batches.md.
	DependsOn []string
	// OnDependencyFailure is what the job does when one of DependsOn ends
	// dead or cancelled; empty: DependencyFailureCancel. DependsOn only.
	OnDependencyFailure DependencyFailure
}

// DependencyFailure says what a job with dependencies does when one of
// them ends dead or cancelled rather than completed.
type DependencyFailure string

// The policies of a job whose dependency failed.
const (
	// DependencyFailureCancel: the job is cancelled, with the CancelReason
	// "dependency <id> <state>" (the default).
	DependencyFailureCancel DependencyFailure = "cancel"
	// DependencyFailureRun: the failed dependency counts as done, and the
	// job runs anyway once the others are done too.
	DependencyFailureRun DependencyFailure = "run"
)

// DedupeMode says what an enqueue with a dedupe key does when the key is
// held.
type DedupeMode string

// The modes of a dedupe key.
const (
	// DedupeUntilDone: while the keyed job is pending, delayed or active,
	// an enqueue with the key adds nothing and answers that job.
	DedupeUntilDone DedupeMode = "until_done"
	// DedupeThrottle: for Dedupe.TTL after the keyed job was created, an
	// enqueue with the key adds nothing and answers that job, finished or
	// not.
	DedupeThrottle DedupeMode = "throttle"
	// DedupeDebounce: while the keyed job has not started, an enqueue with
	// the key replaces its payload and priority and moves its run time to
	// now + Delay, never past Dedupe.MaxWait after it was created, and
	// answers it updated; once it started, a new job is made. It does not
	// apply to a job with a Group.
	DedupeDebounce DedupeMode = "debounce"
)

// Dedupe is an enqueue's dedupe key, per queue.
type Dedupe struct {
	// Key is 1 to 256 bytes.
	Key  string
	Mode DedupeMode
	// TTL is DedupeThrottle's window after the keyed job's enqueue; it is
	// required there, and refused (ErrInvalid) with any other mode.
	TTL time.Duration
	// MaxWait is, for DedupeDebounce only, the longest the keyed job is
	// put off after its first enqueue; 0: no bound.
	MaxWait time.Duration
}

// Backoff is the wait before a failed job's next attempt: Delay, doubled
// per attempt unless Fixed, capped at MaxDelay (0: one hour, or Delay when
// that is longer). It is sent whole: a Delay of 0 retries at once (the
// API's default of a second is for a backoff that names no delay).
type Backoff struct {
	Fixed    bool
	Delay    time.Duration
	MaxDelay time.Duration
}

// enqueueBody is an EnqueueRequest as the API reads it.
type enqueueBody struct {
	ID                  string            `json:"id,omitempty"`
	Payload             json.RawMessage   `json:"payload"`
	Priority            int               `json:"priority,omitempty"`
	DelayMs             int64             `json:"delay_ms,omitempty"`
	RunAt               string            `json:"run_at,omitempty"`
	MaxAttempts         int               `json:"max_attempts,omitempty"`
	Backoff             *backoffBody      `json:"backoff,omitempty"`
	Group               string            `json:"group,omitempty"`
	Dedupe              *dedupeBody       `json:"dedupe,omitempty"`
	ExpiresInMs         *int64            `json:"expires_in_ms,omitempty"`
	TimeoutMs           *int64            `json:"timeout_ms,omitempty"`
	DependsOn           []string          `json:"depends_on,omitempty"`
	OnDependencyFailure DependencyFailure `json:"on_dependency_failure,omitempty"`
}

type dedupeBody struct {
	Key       string     `json:"key"`
	Mode      DedupeMode `json:"mode"`
	TTLMs     *int64     `json:"ttl_ms,omitempty"`
	MaxWaitMs *int64     `json:"max_wait_ms,omitempty"`
}

type backoffBody struct {
	Type       string `json:"type"`
	DelayMs    int64  `json:"delay_ms"`
	MaxDelayMs int64  `json:"max_delay_ms,omitempty"`
}

func (r EnqueueRequest) body() (enqueueBody, error) {
	payload, err := payloadOf(r.Payload)
	if err != nil {
		return enqueueBody{}, err
	}
	return enqueueBody{ID: r.ID, Payload: payload, Priority: r.Priority, DelayMs: millis(r.Delay), RunAt: timeText(r.RunAt),
		MaxAttempts: r.MaxAttempts, Backoff: r.Backoff.body(), Group: r.Group, Dedupe: r.Dedupe.body(),
		ExpiresInMs: millisIfSet(r.ExpiresIn), TimeoutMs: millisIfSet(r.Timeout),
		DependsOn: r.DependsOn, OnDependencyFailure: r.OnDependencyFailure}, nil
}

// body is d as the API reads it; nil for a nil d.
func (d *Dedupe) body() *dedupeBody {
	if d == nil {
		return nil
	}
	return &dedupeBody{Key: d.Key, Mode: d.Mode, TTLMs: millisIfSet(d.TTL), MaxWaitMs: millisIfSet(d.MaxWait)}
}

// millisIfSet is d in whole milliseconds, nil for a d of 0. It is sent
// whenever set, so that a duration under 1 ms (or under a field's minimum)
// is refused by the service, not taken for none.
func millisIfSet(d time.Duration) *int64 {
	if d == 0 {
		return nil
	}
	ms := millis(d)
	return &ms
}

// payloadOf is the raw JSON of a job's payload v: JSON null for a nil v
// (see marshal).
func payloadOf(v any) (json.RawMessage, error) {
	payload, err := marshal(v)
	if payload == nil && err == nil {
		payload = json.RawMessage("null")
	}
	return payload, err
}

// body is b as the API reads it; nil for a nil b.
func (b *Backoff) body() *backoffBody {
	if b == nil {
		return nil
	}
	out := &backoffBody{Type: "exponential", DelayMs: millis(b.Delay), MaxDelayMs: millis(b.MaxDelay)}
	if b.Fixed {
		out.Type = "fixed"
	}
	return out
}

// backoff is the Backoff the API's b says; nil for a nil b.
func (b *backoffBody) backoff() *Backoff {
	if b == nil {
		return nil
	}
	return &Backoff{Fixed: b.Type == "fixed", Delay: time.Duration(b.DelayMs) * time.Millisecond,
		MaxDelay: time.Duration(b.MaxDelayMs) * time.Millisecond}
}

// Enqueue adds a job to queue. created is true for a new job (the service
// answered 201), false when an existing job answered (200) and no job was
// added: a job with req.ID was there already, and job is that job,
// unchanged; or req.Dedupe's key is held, and job is the keyed job, as it
// is (DedupeUntilDone, DedupeThrottle) or updated with req's payload,
// priority and delay (DedupeDebounce).
func (c *Client) Enqueue(ctx context.Context, queue string, req EnqueueRequest) (job Job, created bool, err error) {
	body, err := req.body()
	if err != nil {
		return Job{}, false, err
	}
	status, err := c.do(ctx, http.MethodPost, queuePath(queue, "/jobs"), body, &job)
	return job, status == http.StatusCreated, err
}

// EnqueueBatch adds up to 1000 jobs to queue in one atomic step and
// returns them in order. A job whose ID exists, or whose Dedupe key is
// held, is answered as Enqueue does (a later job of the batch may match the
// key of an earlier one); the answer does not say which jobs were created.
// One invalid job refuses the whole batch.
func (c *Client) EnqueueBatch(ctx context.Context, queue string, reqs []EnqueueRequest) ([]Job, error) {
	bodies := make([]enqueueBody, len(reqs))
	for i, r := range reqs {
		var err error
		if bodies[i], err = r.body(); err != nil {
			return nil, err
		}
	}
	var out struct {
		Jobs []Job `json:"jobs"`
	}
	_, err := c.do(ctx, http.MethodPost, queuePath(queue, "/jobs/batch"), map[string]any{"jobs": bodies}, &out)
	return out.Jobs, err
}

// Job returns the job id of queue as it is now; ErrGone if there is none.
func (c *Client) Job(ctx context.Context, queue, id string) (Job, error) {
	var job Job
	_, err := c.do(ctx, http.MethodGet, jobPath(queue, id, ""), nil, &job)
	return job, err
}

// CancelRequest asks a job to stop.
type CancelRequest struct {
	// Reason is kept on the job and shown to its holder.
	Reason string `json:"reason,omitempty"`
	// Token, when not 0, pins the cancel to the attempt held under it:
	// ErrStale if the job is not held under that token any more.
	Token int64 `json:"token,omitempty"`
}

// Cancel cancels a job. A pending or delayed job is cancelled at once
// (requested is false); an active one is marked cancel_requested for its
// current attempt (requested is true): its holder sees it at its next
// extend and stops (Work cancels the handler's context). Cancelling a
// cancelled job succeeds; a completed or dead one is ErrState.
func (c *Client) Cancel(ctx context.Context, queue, id string, req CancelRequest) (job Job, requested bool, err error) {
	status, err := c.do(ctx, http.MethodPost, jobPath(queue, id, "/cancel"), req, &job)
	return job, status == http.StatusAccepted, err
}
