package client

import (
	"context"
	"net/http"
	"time"
)

// MaxBulkLimit is the largest limit of one bulk call (RetryJobs,
// CleanJobs, PromoteJobs); a larger one is ErrInvalid.
const MaxBulkLimit = 1_000

// Bulk is what one bulk call did. A bulk call retries, deletes or
// promotes up to a limit of a queue's jobs (1 to MaxBulkLimit; the
// service's default is 1000) in one atomic step on the service, and takes
// an admin key (ErrForbidden otherwise). Call again while More is true:
//
//	for {
//		r, err := c.RetryJobs(ctx, "emails", client.RetryJobsRequest{State: "dead"})
//		if err != nil || !r.More {
//			break
//		}
//	}
type Bulk struct {
	// N is how many jobs the call retried, deleted or promoted.
	N int
	// More is whether jobs the call would have taken are left.
	More bool
}

// RetryJobsRequest says which jobs RetryJobs sends back to pending.
type RetryJobsRequest struct {
	// State is "dead" or "cancelled".
	State string `json:"state"`
	// Limit is the most jobs of this call; 0: the service's default.
	Limit int `json:"limit,omitempty"`
}

// RetryJobs sends the oldest finished of queue's jobs in req.State back
// to pending, each as a retry of one job does: a fresh attempt budget and
// its stalled count reset (BullMQ's retryJobs, Sidekiq's "Retry All").
func (c *Client) RetryJobs(ctx context.Context, queue string, req RetryJobsRequest) (Bulk, error) {
	var out struct {
		Retried int  `json:"retried"`
		More    bool `json:"more"`
	}
	_, err := c.do(ctx, http.MethodPost, queuePath(queue, "/retry"), req, &out)
	return Bulk{N: out.Retried, More: out.More}, err
}

// CleanJobsRequest says which finished jobs CleanJobs deletes.
type CleanJobsRequest struct {
	// State is "completed", "dead" or "cancelled".
	State string
	// OlderThan keeps the jobs that finished less than this long ago, on
	// the service's clock; 0 deletes all of them. Counted in ms, a part of
	// one as a whole one.
	OlderThan time.Duration
	// Limit is the most jobs of this call; 0: the service's default.
	Limit int
}

// CleanJobs deletes queue's jobs in req.State that finished more than
// req.OlderThan ago, oldest first, rows and logs, as a removal of one job
// does (BullMQ's clean, Sidekiq's "Delete All").
func (c *Client) CleanJobs(ctx context.Context, queue string, req CleanJobsRequest) (Bulk, error) {
	body := struct {
		State       string `json:"state"`
		OlderThanMs int64  `json:"older_than_ms"`
		Limit       int    `json:"limit,omitempty"`
	}{req.State, millis(req.OlderThan), req.Limit}
	if req.OlderThan > 0 && body.OlderThanMs == 0 {
		body.OlderThanMs = 1 // not 0, which would be every job
	}
	var out struct {
		Removed int  `json:"removed"`
		More    bool `json:"more"`
	}
	_, err := c.do(ctx, http.MethodPost, queuePath(queue, "/clean"), body, &out)
	return Bulk{N: out.Removed, More: out.More}, err
}

// PromoteJobs makes up to limit of queue's delayed jobs pending now,
// earliest run-at first (BullMQ's promoteJobs); limit 0: the service's
// default.
func (c *Client) PromoteJobs(ctx context.Context, queue string, limit int) (Bulk, error) {
	body := struct {
		Limit int `json:"limit,omitempty"`
	}{limit}
	var out struct {
		Promoted int  `json:"promoted"`
		More     bool `json:"more"`
	}
	_, err := c.do(ctx, http.MethodPost, queuePath(queue, "/promote"), body, &out)
	return Bulk{N: out.Promoted, More: out.More}, err
}
