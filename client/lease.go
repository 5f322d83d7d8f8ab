package client

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// ClaimRequest says how many jobs to claim, for how long, and how long to
// wait for one.
type ClaimRequest struct {
	// Count is how many jobs to claim at most, 1 to 100; 0 means 1.
	Count int
	// Lease is how long each claimed job is held before a sweep may take it
	// back, unless extended; 0 means DefaultLease.
	Lease time.Duration
	// Wait, up to 30 s, makes the claim a long poll: when no job is there,
	// the answer comes as soon as one is, or empty after Wait.
	Wait time.Duration
	// Worker names the claimer on the job (up to 200 characters).
	Worker string
}

type claimBody struct {
	LeaseMs int64  `json:"lease_ms,omitempty"`
	Count   int    `json:"count,omitempty"`
	WaitMs  int64  `json:"wait_ms,omitempty"`
	Worker  string `json:"worker,omitempty"`
}

// Claim leases up to req.Count jobs of queue, priority first and FIFO
// within a priority, each with its Token. It returns an empty list when no
// job came within req.Wait (or the queue is paused).
//
// Keep ctx alive for the whole wait: a claim cancelled after the service
// leased the jobs loses them until their leases lapse and a sweep takes
// them back (counting a stall). Work claims with a context of its own for
// that reason.
func (c *Client) Claim(ctx context.Context, queue string, req ClaimRequest) ([]Job, error) {
	body := claimBody{LeaseMs: millis(req.Lease), Count: req.Count, WaitMs: millis(req.Wait), Worker: req.Worker}
	var out struct {
		Jobs []Job `json:"jobs"`
	}
	_, err := c.do(ctx, http.MethodPost, queuePath(queue, "/claim"), body, &out)
	return out.Jobs, err
}

// ExtendRequest renews the lease of a job held under Token.
type ExtendRequest struct {
	Token int64
	// Lease is the new lease, counted from now on the service's clock;
	// 0 means DefaultLease.
	Lease time.Duration
	// Progress, when not nil, is stored on the job as JSON (a
	// json.RawMessage as it is: see the package doc, "Values").
	Progress any
}

type extendBody struct {
	Token    int64           `json:"token"`
	LeaseMs  int64           `json:"lease_ms,omitempty"` // 0: a checkpoint of progress alone
	Progress json.RawMessage `json:"progress,omitempty"`
}

// Lease is the answer to an extend: the new lease, and whether someone
// asked the job to stop.
type Lease struct {
	ExpiresAt       time.Time `json:"lease_expires_at"`
	CancelRequested bool      `json:"cancel_requested"`
	CancelReason    string    `json:"cancel_reason"`
}

// Extend checkpoints job id held under req.Token: it renews the lease,
// stores the progress, and tells whether a cancel was requested (stop at
// the next safe point and Fail). ErrStale or ErrGone means the job is no
// longer this holder's: stop and report nothing.
func (c *Client) Extend(ctx context.Context, queue, id string, req ExtendRequest) (Lease, error) {
	progress, err := marshal(req.Progress)
	if err != nil {
		return Lease{}, err
	}
	lease := req.Lease
	if lease == 0 {
		lease = DefaultLease
	}
	var out Lease
	body := extendBody{Token: req.Token, LeaseMs: millis(lease), Progress: progress}
	_, err = c.do(ctx, http.MethodPost, jobPath(queue, id, "/lease"), body, &out)
	return out, err
}

// SetProgress stores progress on job id of queue, held under token, and
// leaves its lease as it is (only Extend renews it): a checkpoint of
// progress alone. The answer's LeaseExpiresAt is the lease in force,
// which may have passed. Errors as Extend's.
func (c *Client) SetProgress(ctx context.Context, queue, id string, token int64, progress any) (Lease, error) {
	raw, err := marshal(progress)
	if err != nil {
		return Lease{}, err
	}
	if raw == nil {
		raw = json.RawMessage("null")
	}
	var out Lease
	body := extendBody{Token: token, Progress: raw}
	_, err = c.do(ctx, http.MethodPost, jobPath(queue, id, "/lease"), body, &out)
	return out, err
}

// CompleteRequest finishes a job held under Token.
type CompleteRequest struct {
	Token int64
	// Result, when not nil, is stored on the job as JSON (a
	// json.RawMessage as it is: see the package doc, "Values").
	Result any
	// Minimal asks for the completed job without its Payload and Result,
	// which stay stored on it: a caller that does not read them saves
	// their bytes (Prefer: return=minimal). A service too old to know it
	// answers the job whole.
	Minimal bool
}

type completeBody struct {
	Token  int64           `json:"token"`
	Result json.RawMessage `json:"result,omitempty"`
}

// Complete finishes job id with req.Result and returns the job, now
// completed (without Payload and Result when req.Minimal). Repeating a
// complete that succeeded answers the same, so it is safe to retry on a
// network error.
func (c *Client) Complete(ctx context.Context, queue, id string, req CompleteRequest) (Job, error) {
	result, err := marshal(req.Result)
	if err != nil {
		return Job{}, err
	}
	var job Job
	_, err = c.do(ctx, http.MethodPost, jobPath(queue, id, "/complete"), completeBody{req.Token, result}, &job,
		preferMinimal(req.Minimal))
	return job, err
}

// FailRequest reports that the attempt held under Token failed.
type FailRequest struct {
	Token int64
	// Error says what went wrong; it is kept as the job's LastError (cut at
	// 4 KiB).
	Error string
	// RetryIn, when not 0, replaces the job's backoff for this retry: the
	// job is claimable again after RetryIn, or at once when it is negative.
	RetryIn time.Duration
	// Fatal makes the job dead at once, with no retry.
	Fatal bool
	// Minimal asks for the job without its Payload and Result, as
	// CompleteRequest.Minimal does.
	Minimal bool
}

type failBody struct {
	Token     int64  `json:"token"`
	Error     string `json:"error"`
	RetryInMs *int64 `json:"retry_in_ms,omitempty"`
	Fatal     bool   `json:"fatal,omitempty"`
}

// Fail reports a failed attempt of job id and returns the job as it is
// now (without Payload and Result when req.Minimal): delayed or pending
// for a retry, dead when out of attempts or fatal, cancelled when a cancel
// was requested for this attempt. Repeating a fail that succeeded answers
// the same, so it is safe to retry.
func (c *Client) Fail(ctx context.Context, queue, id string, req FailRequest) (Job, error) {
	body := failBody{Token: req.Token, Error: req.Error, Fatal: req.Fatal}
	if req.RetryIn != 0 {
		ms := max(0, millis(req.RetryIn))
		body.RetryInMs = &ms
	}
	var job Job
	_, err := c.do(ctx, http.MethodPost, jobPath(queue, id, "/fail"), body, &job, preferMinimal(req.Minimal))
	return job, err
}

type snoozeBody struct {
	Token   int64 `json:"token"`
	DelayMs int64 `json:"delay_ms"`
}

// Snooze puts job id, held under token, back for later without spending
// its attempt: delayed for delay (pending at once for 0), with its attempts
// as before the claim, its stalls unchanged and its flow control slot
// freed. The token is dead afterwards. A job whose cancel was requested is
// cancelled instead. Repeating a snooze that succeeded answers the same, so
// it is safe to retry. Use it for work that cannot go ahead yet (a rate
// limit upstream, a resource not ready), which is not a failure.
func (c *Client) Snooze(ctx context.Context, queue, id string, token int64, delay time.Duration) (Job, error) {
	var job Job
	_, err := c.do(ctx, http.MethodPost, jobPath(queue, id, "/snooze"), snoozeBody{Token: token, DelayMs: max(0, millis(delay))}, &job)
	return job, err
}

// Cancellation says whether a cancel was requested for an attempt.
type Cancellation struct {
	Requested bool   `json:"cancel_requested"`
	Reason    string `json:"cancel_reason"`
}

// Cancellation checks, cheaply and without extending the lease, whether a
// cancel was requested for the attempt of job id held under token.
func (c *Client) Cancellation(ctx context.Context, queue, id string, token int64) (Cancellation, error) {
	var out Cancellation
	path := jobPath(queue, id, "/cancellation?token="+strconv.FormatInt(token, 10))
	_, err := c.do(ctx, http.MethodGet, path, nil, &out)
	return out, err
}
