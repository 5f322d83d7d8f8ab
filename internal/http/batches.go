package http

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"net/http"

	"github.com/google/uuid"

	"github.com/echo-mq/echo_mq/internal/batch"
	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/internal/lease"
)

// batches is the batch store the handlers need (*batch.Service).
type batches interface {
	Create(ctx context.Context, queue, id string, jobs []lease.NewJob, open bool, cb batch.Callback) (batch.Batch, []lease.Enqueued, bool, error)
	Add(ctx context.Context, queue, id string, jobs []lease.NewJob) (batch.Batch, []lease.Enqueued, error)
	Commit(ctx context.Context, queue, id string) (batch.Batch, error)
	Get(ctx context.Context, queue, id string) (batch.Batch, error)
	List(ctx context.Context, queue, cursor string, limit int) ([]batch.Batch, string, error)
}

// BatchCallbackRequest is the job a batch enqueues once every job of it
// has ended: id "batch:<batch id>", payload {"batch": the batch, "payload":
// this payload}.
type BatchCallbackRequest struct {
	// The queue it is enqueued on; default the batch's.
	Queue *string `json:"queue,omitempty" validate:"omitnil,queuename" minLength:"1" maxLength:"100" example:"reports"`
	// Any JSON value, given to the callback as its payload's "payload".
	Payload json.RawMessage `json:"payload,omitempty" swaggertype:"object" extensions:"x-any-json"`
	// "complete" (the default): once every job ended, however; "success":
	// only when every job completed.
	When *string `json:"when,omitempty" validate:"omitnil,oneof=complete success" enums:"complete,success" example:"complete"`
} // @name BatchCallbackRequest

// CreateBatchRequest is a batch and its first jobs.
type CreateBatchRequest struct {
	// 1 to 122 of A-Z a-z 0-9 . _ : -, not "batch" (its callback job is
	// "batch:<id>");
	// made by the server (UUIDv7) when absent. An id that exists answers
	// 200 with that batch, and adds nothing.
	ID *string `json:"id,omitempty" validate:"omitnil,batchid" minLength:"1" maxLength:"122" example:"import-7"`
	// Up to 1000 jobs, as POST /queues/{queue}/jobs/batch takes them; at
	// least one unless open is true ([] then). An open batch committed
	// with none is done at once, and owes its callback.
	Jobs []EnqueueRequest `json:"jobs" binding:"required" validate:"required,max=1000,dive" maxItems:"1000"`
	// true: more jobs may be added (POST .../batches/{id}/jobs) until the
	// batch is committed (POST .../batches/{id}/commit); it is never done
	// before. Default false: committed at once.
	Open bool `json:"open,omitempty"`
	// The job enqueued once every job has ended. Absent: none (the batch
	// is still read with GET and ends with a batch_done event); {} for one
	// on the batch's queue, with no payload of its own, when: complete.
	Callback *BatchCallbackRequest `json:"callback,omitempty"`
} // @name CreateBatchRequest

// AddBatchJobsRequest is up to 1000 more jobs for an open batch.
type AddBatchJobsRequest struct {
	Jobs []EnqueueRequest `json:"jobs" validate:"required,min=1,max=1000,dive" minItems:"1" maxItems:"1000"`
} // @name AddBatchJobsRequest

// BatchCounts are a batch's jobs by state: the ones that have not ended
// as they are now (0 in an add's answer), the others as they ended.
type BatchCounts struct {
	Pending   int64 `json:"pending" binding:"required"`
	Active    int64 `json:"active" binding:"required"`
	Delayed   int64 `json:"delayed" binding:"required"`
	Waiting   int64 `json:"waiting" binding:"required"`
	Completed int64 `json:"completed" binding:"required"`
	Dead      int64 `json:"dead" binding:"required"`
	Cancelled int64 `json:"cancelled" binding:"required"`
} // @name BatchCounts

// BatchCallback is a batch's callback as it was asked for.
type BatchCallback struct {
	Queue   string          `json:"queue" binding:"required" example:"reports"`
	Payload json.RawMessage `json:"payload,omitempty" swaggertype:"object" extensions:"x-any-json"`
	When    string          `json:"when" binding:"required" enums:"complete,success" example:"complete"`
} // @name BatchCallback

// Batch is a batch as the API shows it.
type Batch struct {
	ID    string `json:"id" binding:"required" example:"import-7"`
	Queue string `json:"queue" binding:"required" example:"imports"`
	// open: jobs may be added; running: committed, some job has not ended;
	// done: every job ended.
	State string `json:"state" binding:"required" enums:"open,running,done" example:"running"`
	// How many jobs it has.
	Total  int64       `json:"total" binding:"required" example:"100"`
	Counts BatchCounts `json:"counts" binding:"required"`
	// Done, and every job completed.
	Success bool `json:"success" binding:"required"`
	// The callback as asked for; absent for a batch created without one.
	Callback *BatchCallback `json:"callback,omitempty"`
	// The callback job's id ("batch:<id>"), once it is enqueued.
	CallbackJobID string `json:"callback_job_id,omitempty" example:"batch:import-7"`
	CreatedAt     string `json:"created_at" binding:"required" format:"date-time" example:"2026-12-03T12:00:00.000Z"`
	FinishedAt    string `json:"finished_at,omitempty" format:"date-time"`
	// The jobs this request enqueued, in order (a create or an add only):
	// an id that existed is answered with that job, which did not join.
	// (writeBatch writes them.)
	Jobs []Job `json:"jobs,omitempty"`
} // @name Batch

// writeBatch answers b with the jobs a create or an add enqueued (none for
// the other routes), written as every job is (jobjson.go).
func writeBatch(w http.ResponseWriter, status int, b batch.Batch, jobs []lease.Enqueued) {
	body := encodeJSON(batchOf(b))
	if len(jobs) > 0 {
		list := make([]job.Job, len(jobs))
		for i, e := range jobs {
			list[i] = e.Job
		}
		body = append(appendJobs(append(body[:len(body)-1], `,"jobs":`...), list, whole), '}')
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// batchOf is b as the API shows it, without jobs.
func batchOf(b batch.Batch) Batch {
	out := Batch{ID: b.ID, Queue: b.Queue, State: b.State, Total: b.Total, Success: b.Success,
		Counts: BatchCounts{Pending: b.Counts[job.StatePending], Active: b.Counts[job.StateActive],
			Delayed: b.Counts[job.StateDelayed], Waiting: b.Counts[job.StateWaiting],
			Completed: b.Counts[job.StateCompleted], Dead: b.Counts[job.StateDead], Cancelled: b.Counts[job.StateCancelled]},
		CallbackJobID: b.CallbackJobID, CreatedAt: stamp(b.CreatedAt), FinishedAt: stamp(b.FinishedAt)}
	if b.Callback.When != "" {
		out.Callback = &BatchCallback{Queue: cmp.Or(b.Callback.Queue, b.Queue), Payload: b.Callback.Payload, When: b.Callback.When}
	}
	return out
}

// BatchCallbackPayload is a callback job's payload.
type BatchCallbackPayload struct {
	Batch   Batch           `json:"batch" binding:"required"`
	Payload json.RawMessage `json:"payload" binding:"required" swaggertype:"object" extensions:"x-any-json x-nullable"`
} // @name BatchCallbackPayload

// BatchCallbackBody is done batch b's callback payload (batch.Dispatcher's
// Encode).
func BatchCallbackBody(b batch.Batch) (json.RawMessage, error) {
	p := BatchCallbackPayload{Batch: batchOf(b), Payload: b.Callback.Payload}
	if len(p.Payload) == 0 {
		p.Payload = json.RawMessage("null")
	}
	return encodeJSON(p), nil
}

// encodeJSON is v's JSON as writeJSON writes it (payloads as sent: "<"
// stays "<"), without the newline. v holds nothing that fails to encode.
func encodeJSON(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// newJobs checks an enqueue's jobs (newJob each) and their dependencies.
func (s *server) newJobs(r *http.Request, reqs []EnqueueRequest) ([]lease.NewJob, error) {
	jobs := make([]lease.NewJob, len(reqs))
	trace := producerTrace(r)
	for i, one := range reqs {
		var err error
		if jobs[i], err = s.newJob(valueField{i, "payload"}, one); err != nil {
			return nil, err
		}
		jobs[i].Traceparent = trace
	}
	return jobs, checkDependencies(jobs, false)
}

// batchParams reads the queue and batch id of a batch's route.
func batchParams(r *http.Request) (string, string, error) {
	queue, err := queueParam(r)
	if err != nil {
		return "", "", err
	}
	id := pathParam(r, "id")
	if !validBatchID(id) {
		return "", "", invalid("the path has invalid fields",
			FieldError{Field: "id", Message: `must be 1 to 122 of A-Z a-z 0-9 . _ : -, not only dots, and not "batch"`})
	}
	return queue, id, nil
}

// handleBatchCreate godoc
//
//	@Summary		Create a batch
//	@Description	Enqueues up to 1000 jobs as one batch, in one atomic step; each job carries batch_id. When every job of the committed batch has ended (completed, dead or cancelled), exactly one callback job is enqueued when a callback was asked for: id "batch:<id>", on callback.queue, with the batch and callback.payload as its payload (with when: success, only if every job completed); without callback, none is. jobs needs at least one job unless open is true. With open: true, add more jobs and then commit. An id that exists answers 200 with that batch and adds nothing.
//	@ID				createBatch
//	@Tags			batches
//	@Security		BearerAuth
//	@Security		Signature
//	@Accept			json
//	@Param			queue	path	string				true	"queue name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Param			batch	body	CreateBatchRequest	true	"the batch"
//	@Param			traceparent	header	string	false	"the producer's W3C traceparent, kept with every job (ignored unless valid)"
//	@Produce		application/problem+json
//	@Failure		400	{object}	Problem	"EMQINVALID: invalid fields, an unknown dependency or a cycle"
//	@Failure		403	{object}	Problem	"EMQFORBIDDEN: the key's role may not do this"
//	@Failure		409	{object}	Problem	"EMQQUOTA: the queue is new and there are EMQ_MAX_QUEUES queues already"
//	@Produce		json
//	@Success		201	{object}	Batch	"a new batch, with its jobs"
//	@Success		200	{object}	Batch	"the existing batch with that id; nothing was added"
//	@Router			/queues/{queue}/batches [post]
func (s *server) handleBatchCreate(w http.ResponseWriter, r *http.Request) {
	queue, err := queueParam(r)
	var req CreateBatchRequest
	if err == nil {
		err = s.decode(r, &req)
	}
	if err == nil && len(req.Jobs) == 0 && !req.Open {
		err = invalid("the request has invalid fields",
			FieldError{Field: "jobs", Message: "must have at least 1 item, unless open is true"})
	}
	var jobs []lease.NewJob
	if err == nil {
		jobs, err = s.newJobs(r, req.Jobs)
	}
	var cb batch.Callback
	if err == nil {
		cb, err = s.callbackRequested(req)
	}
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	id := uuid.Must(uuid.NewV7()).String()
	if req.ID != nil {
		id = *req.ID
	}
	b, out, created, err := s.cfg.Batches.Create(r.Context(), queue, id, jobs, req.Open, cb)
	if err != nil {
		s.writeProblem(w, r, unknownDependency(err, jobs, false))
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
		s.enqueued(queue, out)
	}
	writeBatch(w, status, b, out)
}

// callbackRequested checks a create's callback: none when it asks for
// none.
func (s *server) callbackRequested(req CreateBatchRequest) (batch.Callback, error) {
	c := req.Callback
	if c == nil {
		return batch.Callback{}, nil
	}
	cb := batch.Callback{When: batch.WhenComplete}
	if c.Queue != nil {
		cb.Queue = *c.Queue
	}
	if c.When != nil {
		cb.When = *c.When
	}
	if len(c.Payload) > 0 {
		cb.Payload = compactJSON(c.Payload)
		if err := s.checkSize(topField("callback.payload"), cb.Payload); err != nil {
			return batch.Callback{}, err
		}
	}
	return cb, nil
}

// enqueued counts the new jobs of out for the metrics.
func (s *server) enqueued(queue string, out []lease.Enqueued) {
	created := 0
	for _, e := range out {
		if e.Created {
			created++
		}
	}
	s.transition(queue, "enqueued", created)
}

// handleBatchAdd godoc
//
//	@Summary		Add jobs to an open batch
//	@Description	Enqueues up to 1000 more jobs into an open batch, in one atomic step. 409 EMQSTATE once the batch is committed. The answer's counts hold the batch's ended jobs only (an add reads none of its jobs); GET reads the others.
//	@ID				addBatchJobs
//	@Tags			batches
//	@Security		BearerAuth
//	@Security		Signature
//	@Accept			json
//	@Param			queue	path	string				true	"queue name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Param			id		path	string				true	"batch id: 1 to 122 of A-Z a-z 0-9 . _ : -, not only dots"	minlength(1)	maxlength(122)
//	@Param			jobs	body	AddBatchJobsRequest	true	"the jobs"
//	@Param			traceparent	header	string	false	"the producer's W3C traceparent, kept with every job (ignored unless valid)"
//	@Produce		application/problem+json
//	@Failure		400	{object}	Problem	"EMQINVALID: invalid fields, an unknown dependency or a cycle"
//	@Failure		403	{object}	Problem	"EMQFORBIDDEN: the key's role may not do this"
//	@Failure		404	{object}	Problem	"EMQGONE: no such batch"
//	@Failure		409	{object}	Problem	"EMQSTATE: the batch is committed"
//	@Produce		json
//	@Success		200	{object}	Batch	"the batch, with the jobs this request enqueued"
//	@Router			/queues/{queue}/batches/{id}/jobs [post]
func (s *server) handleBatchAdd(w http.ResponseWriter, r *http.Request) {
	queue, id, err := batchParams(r)
	var req AddBatchJobsRequest
	if err == nil {
		err = s.decode(r, &req)
	}
	var jobs []lease.NewJob
	if err == nil {
		jobs, err = s.newJobs(r, req.Jobs)
	}
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	b, out, err := s.cfg.Batches.Add(r.Context(), queue, id, jobs)
	if err != nil {
		s.writeProblem(w, r, unknownDependency(err, jobs, false))
		return
	}
	s.enqueued(queue, out)
	writeBatch(w, http.StatusOK, b, out)
}

// handleBatchCommit godoc
//
//	@Summary		Commit an open batch
//	@Description	Closes the batch to more jobs: it is done once every job of it has ended (at once, when every one has), and then its callback is enqueued. A committed batch is answered as it is.
//	@ID				commitBatch
//	@Tags			batches
//	@Security		BearerAuth
//	@Security		Signature
//	@Param			queue	path	string	true	"queue name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Param			id		path	string	true	"batch id: 1 to 122 of A-Z a-z 0-9 . _ : -, not only dots"	minlength(1)	maxlength(122)
//	@Produce		application/problem+json
//	@Failure		400	{object}	Problem	"EMQINVALID"
//	@Failure		403	{object}	Problem	"EMQFORBIDDEN: the key's role may not do this"
//	@Failure		404	{object}	Problem	"EMQGONE: no such batch"
//	@Produce		json
//	@Success		200	{object}	Batch
//	@Router			/queues/{queue}/batches/{id}/commit [post]
func (s *server) handleBatchCommit(w http.ResponseWriter, r *http.Request) {
	queue, id, err := batchParams(r)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	b, err := s.cfg.Batches.Commit(r.Context(), queue, id)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeBatch(w, http.StatusOK, b, nil)
}

// handleBatchGet godoc
//
//	@Summary		Get a batch
//	@Description	The batch's state and counts: its jobs that have not ended as they are now, the others as they ended. A done batch is kept 7 days.
//	@ID				getBatch
//	@Tags			batches
//	@Security		BearerAuth
//	@Security		Signature
//	@Param			queue	path	string	true	"queue name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Param			id		path	string	true	"batch id: 1 to 122 of A-Z a-z 0-9 . _ : -, not only dots"	minlength(1)	maxlength(122)
//	@Produce		application/problem+json
//	@Failure		400	{object}	Problem	"EMQINVALID"
//	@Failure		404	{object}	Problem	"EMQGONE: no such batch"
//	@Produce		json
//	@Success		200	{object}	Batch
//	@Router			/queues/{queue}/batches/{id} [get]
func (s *server) handleBatchGet(w http.ResponseWriter, r *http.Request) {
	queue, id, err := batchParams(r)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	b, err := s.cfg.Batches.Get(r.Context(), queue, id)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeBatch(w, http.StatusOK, b, nil)
}
