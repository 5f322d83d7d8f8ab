package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// BatchState is the state of a batch, as the service names it.
type BatchState string

// The states of a batch.
const (
	BatchOpen    BatchState = "open"    // jobs may be added until CommitBatch
	BatchRunning BatchState = "running" // committed; some job of it has not ended
	BatchDone    BatchState = "done"    // every job of it ended: its callback is owed
)

// CallbackWhen says when a done batch enqueues its callback job.
type CallbackWhen string

// The conditions of a batch's callback.
const (
	// CallbackComplete: once every job of the batch has ended, completed,
	// dead or cancelled (the default).
	CallbackComplete CallbackWhen = "complete"
	// CallbackSuccess: only when every job of the batch completed; a batch
	// with a dead or cancelled job enqueues none.
	CallbackSuccess CallbackWhen = "success"
)

// BatchCallbackPrefix starts the id of a batch's callback job:
// "batch:<batch id>".
const BatchCallbackPrefix = "batch:"

// CreateBatchRequest is a batch and its first jobs.
type CreateBatchRequest struct {
	// ID is the batch's idempotency key (1 to 122 of A-Z a-z 0-9 . _ : -,
	// not only dots; its callback job is "batch:<ID>"): creating an id that
	// exists adds nothing and answers the batch already there. Empty: the
	// service makes a time-ordered id.
	ID string
	// Jobs are 1 to 1000 jobs, enqueued in one atomic step as EnqueueBatch
	// does; each carries the batch's id (Job.BatchID). Only an Open batch
	// may start with none; one committed with none is done at once.
	Jobs []EnqueueRequest
	// Open lets more jobs be added with AddBatchJobs until CommitBatch; an
	// open batch is never done. false: the batch is committed at once.
	Open bool
	// Callback is the job the batch enqueues once it is done; nil: none
	// (the batch is still read with Batch). &BatchCallback{}: one on the
	// batch's queue, with a null Payload, on CallbackComplete.
	Callback *BatchCallback
}

// BatchCallback is the job a batch enqueues, exactly once, when every job
// of it has ended: id "batch:<batch id>" on Queue, its payload the batch
// as it ended and Payload (see BatchCallbackPayload).
//
// In a Batch the service answered, Queue is the queue in force and
// Payload is a json.RawMessage, the payload as it was sent, or nil for
// none.
type BatchCallback struct {
	// Queue is the queue the callback job is enqueued on, any queue;
	// empty: the batch's.
	Queue string
	// Payload is given to the callback job as BatchCallbackPayload.Payload,
	// sent as JSON: a json.RawMessage as it is (see the package doc,
	// "Values"). nil: none, JSON null there.
	Payload any
	// When is the condition of the callback; empty: CallbackComplete.
	When CallbackWhen
}

// batchCallbackBody is a BatchCallback as the API reads and answers it.
type batchCallbackBody struct {
	Queue   string          `json:"queue,omitempty"`
	Payload json.RawMessage `json:"payload,omitempty"`
	When    CallbackWhen    `json:"when,omitempty"`
}

// body is cb as the API reads it; nil for a nil cb.
func (cb *BatchCallback) body() (*batchCallbackBody, error) {
	if cb == nil {
		return nil, nil
	}
	payload, err := marshal(cb.Payload)
	if err != nil {
		return nil, err
	}
	return &batchCallbackBody{Queue: cb.Queue, Payload: payload, When: cb.When}, nil
}

// MarshalJSON writes cb as the API does.
func (cb BatchCallback) MarshalJSON() ([]byte, error) {
	b, err := cb.body()
	if err != nil {
		return nil, err
	}
	return json.Marshal(b)
}

// UnmarshalJSON reads cb as the API writes it, its payload as a
// json.RawMessage.
func (cb *BatchCallback) UnmarshalJSON(data []byte) error {
	var b batchCallbackBody
	if err := json.Unmarshal(data, &b); err != nil {
		return err
	}
	*cb = BatchCallback{Queue: b.Queue, When: b.When}
	if b.Payload != nil {
		cb.Payload = b.Payload
	}
	return nil
}

// BatchCounts are a batch's jobs by state: the jobs that have not ended
// as they are now, the others as they ended.
type BatchCounts struct {
	Pending   int64 `json:"pending"`
	Active    int64 `json:"active"`
	Delayed   int64 `json:"delayed"`
	Waiting   int64 `json:"waiting"`
	Completed int64 `json:"completed"`
	Dead      int64 `json:"dead"`
	Cancelled int64 `json:"cancelled"`
}

// Batch is a batch as the service shows it. A done batch is kept 7 days.
type Batch struct {
	ID    string     `json:"id"`
	Queue string     `json:"queue"`
	State BatchState `json:"state"`
	// Total is how many jobs it has.
	Total int64 `json:"total"`
	// Counts are its jobs by state, read whole by Batch, CreateBatch and
	// CommitBatch. The answer of AddBatchJobs counts only the jobs that
	// ended (Completed, Dead, Cancelled): its Pending, Active, Delayed and
	// Waiting are 0 (an add reads none of the batch's jobs).
	Counts BatchCounts `json:"counts"`
	// Success says the batch is done and every job of it completed.
	Success bool `json:"success"`
	// Callback is the callback as it was asked for; nil for a batch made
	// without one.
	Callback *BatchCallback `json:"callback,omitempty"`
	// CallbackJobID is the callback job's id, "batch:<ID>", once it is
	// enqueued (within about 250 ms of the batch's end); empty before, and
	// for a batch with CallbackSuccess that did not succeed.
	CallbackJobID string    `json:"callback_job_id,omitempty"`
	CreatedAt     time.Time `json:"created_at"`
	// FinishedAt is when it became done; the zero time before.
	FinishedAt time.Time `json:"finished_at,omitzero"`
	// Jobs are the jobs the call enqueued, in order, in the answer of a
	// CreateBatch or an AddBatchJobs only: a job whose ID existed is
	// answered as it is, and did not join the batch.
	Jobs []Job `json:"jobs,omitempty"`
}

// batchPath is the path of batch id of queue, with suffix after it.
func batchPath(queue, id, suffix string) string {
	return queuePath(queue, "/batches/"+url.PathEscape(id)+suffix)
}

// batchJobs is jobs as the API reads them, for a create or an add.
func batchJobs(jobs []EnqueueRequest) ([]enqueueBody, error) {
	bodies := make([]enqueueBody, len(jobs))
	for i, r := range jobs {
		var err error
		if bodies[i], err = r.body(); err != nil {
			return nil, err
		}
	}
	return bodies, nil
}

// CreateBatch enqueues req.Jobs into queue as one batch, in one atomic
// step, and returns the batch with those jobs. Once every job of the
// committed batch has ended, the batch is done and enqueues its callback
// job, once, however many service replicas run (see BatchCallback). A job
// may depend on another of the batch (EnqueueRequest.DependsOn). See
// docs/batches.md for what counts as ended.
//
// created is true for a new batch (the service answered 201), false when
// a batch with req.ID was there already (200): nothing was added, and the
// batch is answered as it is, without jobs. One invalid job refuses the
// whole batch (ErrInvalid).
func (c *Client) CreateBatch(ctx context.Context, queue string, req CreateBatchRequest) (b Batch, created bool, err error) {
	jobs, err := batchJobs(req.Jobs)
	if err != nil {
		return Batch{}, false, err
	}
	cb, err := req.Callback.body()
	if err != nil {
		return Batch{}, false, err
	}
	body := struct {
		ID       string             `json:"id,omitempty"`
		Jobs     []enqueueBody      `json:"jobs"`
		Open     bool               `json:"open,omitempty"`
		Callback *batchCallbackBody `json:"callback,omitempty"`
	}{req.ID, jobs, req.Open, cb}
	status, err := c.do(ctx, http.MethodPost, queuePath(queue, "/batches"), body, &b)
	return b, status == http.StatusCreated, err
}

// AddBatchJobs enqueues 1 to 1000 more jobs into the open batch id of
// queue, in one atomic step, and returns the batch with those jobs. It is
// ErrGone if there is no such batch, and ErrState once the batch is
// committed.
func (c *Client) AddBatchJobs(ctx context.Context, queue, id string, jobs []EnqueueRequest) (Batch, error) {
	bodies, err := batchJobs(jobs)
	if err != nil {
		return Batch{}, err
	}
	var b Batch
	_, err = c.do(ctx, http.MethodPost, batchPath(queue, id, "/jobs"), map[string]any{"jobs": bodies}, &b)
	return b, err
}

// CommitBatch closes the batch id of queue to more jobs and returns it: it
// is done once every job of it has ended (at once, when every one has),
// and then enqueues its callback. Committing a committed batch changes
// nothing. ErrGone if there is no such batch.
func (c *Client) CommitBatch(ctx context.Context, queue, id string) (Batch, error) {
	var b Batch
	_, err := c.do(ctx, http.MethodPost, batchPath(queue, id, "/commit"), nil, &b)
	return b, err
}

// Batch returns the batch id of queue as it is now; ErrGone if there is
// none.
func (c *Client) Batch(ctx context.Context, queue, id string) (Batch, error) {
	var b Batch
	_, err := c.do(ctx, http.MethodGet, batchPath(queue, id, ""), nil, &b)
	return b, err
}

// ListBatches returns one page of queue's batches, newest first, each as
// Batch answers it: up to limit of them (1 to 100; 0: the service's
// default, 20) after cursor ("" for the first page), and next, the cursor
// of the page after; next is "" on the last page. No batch comes twice or
// is skipped across the pages while others are made (a new one comes
// before the first page). A bad cursor is ErrInvalid.
func (c *Client) ListBatches(ctx context.Context, queue, cursor string, limit int) (page []Batch, next string, err error) {
	query := url.Values{}
	if limit != 0 {
		query.Set("limit", strconv.Itoa(limit))
	}
	if cursor != "" {
		query.Set("cursor", cursor)
	}
	path := queuePath(queue, "/batches")
	if len(query) > 0 {
		path += "?" + query.Encode()
	}
	var out struct {
		Batches    []Batch `json:"batches"`
		NextCursor string  `json:"next_cursor"` // null on the last page: ""
	}
	_, err = c.do(ctx, http.MethodGet, path, nil, &out)
	return out.Batches, out.NextCursor, err
}

// BatchCallbackPayload is the payload of a batch's callback job: the batch
// as it ended (done, with its counts; without Jobs), and the payload of
// its BatchCallback, as it was sent (JSON null for none).
type BatchCallbackPayload struct {
	Batch   Batch           `json:"batch"`
	Payload json.RawMessage `json:"payload"`
}

// DecodeBatchCallback reads the payload of job, a batch's callback job,
// so that the worker of the callback's queue learns how the batch ended:
//
//	if strings.HasPrefix(job.ID, client.BatchCallbackPrefix) {
//		cb, err := client.DecodeBatchCallback(job)
//		...
//		if !cb.Batch.Success { ... cb.Batch.Counts.Dead ... }
//		json.Unmarshal(cb.Payload, &mine)
//	}
//
// It is an error for a job that is not one: whose payload is not a
// callback's, or whose id is not "batch:" and the batch's id.
func DecodeBatchCallback(job Job) (BatchCallbackPayload, error) {
	var p BatchCallbackPayload
	if err := json.Unmarshal(job.Payload, &p); err != nil {
		return BatchCallbackPayload{}, fmt.Errorf("client: job %s is no batch callback: %w", job.ID, err)
	}
	if id, ok := strings.CutPrefix(job.ID, BatchCallbackPrefix); !ok || id != p.Batch.ID {
		return BatchCallbackPayload{}, fmt.Errorf("client: job %s is no batch callback: want the id %s<batch id>", job.ID, BatchCallbackPrefix)
	}
	return p, nil
}
