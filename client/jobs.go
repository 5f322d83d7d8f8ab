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
	// Priority is 0 (the default, first) to 9 (last).
	Priority int
	// Delay makes the job claimable only after it (delayed, not pending).
	Delay time.Duration
	// MaxAttempts is how many claims the job gets before a failure is
	// final; 0 leaves the service's default (3).
	MaxAttempts int
	// Backoff is the wait before each retry after a failure; nil leaves
	// the service's default (exponential from 1 s, capped at 1 hour).
	Backoff *Backoff
	// Group is the job's group for flow control (docs/flow-control.md):
	// claims take turns over the groups, and the queue's group limits
	// apply to each. Empty: none.
	Group string
}

// Backoff is the wait before a failed job's next attempt: Delay, doubled
// per attempt unless Fixed, capped at MaxDelay (0: one hour, or Delay when
// that is longer).
type Backoff struct {
	Fixed    bool
	Delay    time.Duration
	MaxDelay time.Duration
}

// enqueueBody is an EnqueueRequest as the API reads it.
type enqueueBody struct {
	ID          string          `json:"id,omitempty"`
	Payload     json.RawMessage `json:"payload"`
	Priority    int             `json:"priority,omitempty"`
	DelayMs     int64           `json:"delay_ms,omitempty"`
	MaxAttempts int             `json:"max_attempts,omitempty"`
	Backoff     *backoffBody    `json:"backoff,omitempty"`
	Group       string          `json:"group,omitempty"`
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
	return enqueueBody{ID: r.ID, Payload: payload, Priority: r.Priority, DelayMs: millis(r.Delay),
		MaxAttempts: r.MaxAttempts, Backoff: r.Backoff.body(), Group: r.Group}, nil
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

// Enqueue adds a job to queue. created is true for a new job, false when a
// job with req.ID was there already: then job is that job, unchanged, and
// nothing was added.
func (c *Client) Enqueue(ctx context.Context, queue string, req EnqueueRequest) (job Job, created bool, err error) {
	body, err := req.body()
	if err != nil {
		return Job{}, false, err
	}
	status, err := c.do(ctx, http.MethodPost, queuePath(queue, "/jobs"), body, &job)
	return job, status == http.StatusCreated, err
}

// EnqueueBatch adds up to 1000 jobs to queue in one atomic step and
// returns them in order. A job whose ID exists is answered as it is, as
// Enqueue does; one invalid job refuses the whole batch.
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
