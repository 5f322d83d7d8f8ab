package http

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/internal/lease"
)

func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

// ClaimNext asks a complete to claim the worker's next jobs in the same step.
type ClaimNext struct {
	// How many jobs to claim at most; default 1.
	Count *int `json:"count,omitempty" validate:"omitnil,min=1,max=100" example:"1"`
	// How long each claimed job is leased, in ms; default 30000.
	LeaseMs *int64 `json:"lease_ms,omitempty" format:"int64" validate:"omitnil,min=100,max=86400000" example:"30000"`
	// The worker's name, kept on each claimed job (for operators).
	Worker string `json:"worker,omitempty" validate:"max=200" example:"worker-1"`
} // @name ClaimNext

// params turns a claim-next into lease.ClaimParams; nil asks for none.
func (c *ClaimNext) params() *lease.ClaimParams {
	if c == nil {
		return nil
	}
	p := &lease.ClaimParams{Worker: c.Worker}
	if c.Count != nil {
		p.Count = *c.Count
	}
	if c.LeaseMs != nil {
		p.Lease = ms(*c.LeaseMs)
	}
	return p
}

// ExtendRequest is a checkpoint: a heartbeat (lease_ms), a report of
// progress, or both; at least one of the two.
type ExtendRequest struct {
	Token *int64 `json:"token" format:"int64" validate:"required,token" minimum:"1" example:"42"`
	// The new lease: it ends this long after the server's now, in ms.
	// Without it the checkpoint only stores progress, which it then
	// needs, and leaves the lease as it stands.
	LeaseMs *int64 `json:"lease_ms,omitempty" format:"int64" validate:"omitnil,min=100,max=86400000" example:"30000"`
	// Any JSON value, kept on the job (the last one wins).
	Progress json.RawMessage `json:"progress,omitempty" swaggertype:"object" extensions:"x-any-json"`
} // @name ExtendRequest

// ExtendResponse is the lease, and whether the holder should stop.
type ExtendResponse struct {
	// When the lease ends: the new one, or without lease_ms the one the
	// job had (which may have passed).
	LeaseExpiresAt  string `json:"lease_expires_at" format:"date-time" binding:"required" example:"2026-11-29T19:07:07.123Z"`
	CancelRequested bool   `json:"cancel_requested" binding:"required"`
	CancelReason    string `json:"cancel_reason" binding:"required"`
} // @name ExtendResponse

// handleLeaseExtend godoc
//
//	@Summary		Extend a lease (checkpoint)
//	@Description	Re-scores the job's lease to server now + lease_ms, storing progress when given. Without lease_ms the checkpoint only stores progress (then required) and leaves the lease as it stands, as BullMQ's updateProgress leaves its lock: lease_expires_at answers that lease, which only a checkpoint with lease_ms renews. Fenced by the token: a holder that lost the job (its lease lapsed and a sweep recovered it, or it was cancelled or claimed again) gets 409 EMQSTALE and never gets it back. A lapsed lease that no sweep has recovered yet is extended. The answer says whether a cancel was requested: stop at the next safe point and report fail.
//	@ID				extendLease
//	@Tags			worker
//	@Security		BearerAuth
//	@Security		Signature
//	@Accept			json
//	@Param			queue	path	string			true	"queue name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Param			id		path	string			true	"job id: 1 to 128 of A-Z a-z 0-9 . _ : -, not only dots"	minlength(1)	maxlength(128)
//	@Param			extend	body	ExtendRequest	true	"token, and lease_ms, progress or both"
//	@Produce		application/problem+json
//	@Failure		400	{object}	Problem	"EMQINVALID"
//	@Failure		403	{object}	Problem	"EMQFORBIDDEN: the key's role may not do this"
//	@Failure		404	{object}	Problem	"EMQGONE"
//	@Failure		409	{object}	Problem	"EMQSTALE"
//	@Produce		json
//	@Success		200	{object}	ExtendResponse
//	@Router			/queues/{queue}/jobs/{id}/lease [post]
func (s *server) handleLeaseExtend(w http.ResponseWriter, r *http.Request) {
	queue, id, err := jobParams(r)
	var req ExtendRequest
	if err == nil {
		err = s.decode(r, &req)
	}
	if err == nil && req.LeaseMs == nil && req.Progress == nil {
		err = invalid("a checkpoint renews the lease (lease_ms), stores progress, or both",
			FieldError{Field: "lease_ms", Message: "is required without progress"})
	}
	progress := compactJSON(req.Progress)
	if err == nil {
		err = s.checkSize(topField("progress"), progress)
	}
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	p := lease.ExtendParams{Token: *req.Token, Progress: progress}
	if req.LeaseMs != nil {
		p.Lease = ms(*req.LeaseMs)
	}
	ext, err := s.leases.Extend(r.Context(), queue, id, p)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, ExtendResponse{
		LeaseExpiresAt: stamp(ext.LeaseExpiresAt), CancelRequested: ext.CancelRequested, CancelReason: ext.CancelReason})
}

// CompleteRequest finishes a job, and may claim the next ones.
type CompleteRequest struct {
	Token *int64 `json:"token" format:"int64" validate:"required,token" minimum:"1" example:"42"`
	// Any JSON value, kept on the completed job.
	Result json.RawMessage `json:"result,omitempty" swaggertype:"object" extensions:"x-any-json"`
	Claim  *ClaimNext      `json:"claim,omitempty"`
} // @name CompleteRequest

// CompleteResponse is the completed job; with claim-next, Next holds the
// newly claimed jobs with their tokens.
type CompleteResponse struct {
	Job
	Next []Job `json:"next,omitzero"`
} // @name CompleteResponse

// handleComplete godoc
//
//	@Summary		Complete a job
//	@Description	Finishes the job held under token, storing result. With claim, also claims the worker's next jobs in the same step (next: [] when the queue is paused or empty). Repeating a complete that succeeded answers 200 with the job again. With Prefer: return=minimal (RFC 7240) the completed job is answered without payload and result, and Preference-Applied says so; the next jobs are answered whole.
//	@ID				completeJob
//	@Tags			worker
//	@Security		BearerAuth
//	@Security		Signature
//	@Accept			json
//	@Param			queue		path	string			true	"queue name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Param			id			path	string			true	"job id: 1 to 128 of A-Z a-z 0-9 . _ : -, not only dots"	minlength(1)	maxlength(128)
//	@Param			complete	body	CompleteRequest	true	"token, result, claim-next"
//	@Param			Prefer		header	string			false	"RFC 7240 preferences: return=minimal answers the completed job without payload and result"
//	@Produce		application/problem+json
//	@Failure		400	{object}	Problem	"EMQINVALID"
//	@Failure		403	{object}	Problem	"EMQFORBIDDEN: the key's role may not do this"
//	@Failure		404	{object}	Problem	"EMQGONE"
//	@Failure		409	{object}	Problem	"EMQSTALE"
//	@Produce		json
//	@Success		200	{object}	CompleteResponse
//	@Header			200	{string}	Preference-Applied	"return=minimal when the answer is minimal"
//	@Router			/queues/{queue}/jobs/{id}/complete [post]
func (s *server) handleComplete(w http.ResponseWriter, r *http.Request) {
	queue, id, err := jobParams(r)
	var req CompleteRequest
	if err == nil {
		err = s.decode(r, &req)
	}
	result := compactJSON(req.Result)
	if err == nil {
		err = s.checkSize(topField("result"), result)
	}
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	done, next, err := s.leases.Complete(r.Context(), queue, id, *req.Token, result, req.Claim.params())
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	s.transition(queue, "completed", 1)
	s.transition(queue, "claimed", len(next))
	writeCompleted(w, done, finishedView(w, r), next, req.Claim != nil)
}

// CompleteItem is one job of a batch complete.
type CompleteItem struct {
	ID    string `json:"id" validate:"required,jobid" minLength:"1" maxLength:"128" example:"order-1234"`
	Token *int64 `json:"token" format:"int64" validate:"required,token" minimum:"1" example:"42"`
	// Any JSON value, kept on the completed job.
	Result json.RawMessage `json:"result,omitempty" swaggertype:"object" extensions:"x-any-json"`
} // @name CompleteItem

// CompleteBatchRequest completes up to 1000 jobs, and may claim the next.
type CompleteBatchRequest struct {
	Jobs  []CompleteItem `json:"jobs" validate:"required,min=1,max=1000,dive"`
	Claim *ClaimNext     `json:"claim,omitempty"`
} // @name CompleteBatchRequest

// CompleteResult is one job's outcome in a batch complete: the job, or
// the refusal (told apart by its code). writeCompleteBatch writes it.
type CompleteResult struct {
	*Job
	*CompleteRefusal
} // @name CompleteResult

// MarshalJSON writes the one of r's two that is set: both have an id,
// which encoding/json would otherwise leave out of either.
func (r CompleteResult) MarshalJSON() ([]byte, error) {
	if r.CompleteRefusal != nil {
		return oneLineJSON(r.CompleteRefusal)
	}
	return oneLineJSON(r.Job)
}

// CompleteRefusal is the problem that refused one job of a batch
// complete, with the id of that job as the request named it.
type CompleteRefusal struct {
	// The job refused: the id of its item in the request.
	ID string `json:"id" binding:"required" example:"order-1234"`
	Problem
} // @name CompleteRefusal

// CompleteBatchResponse holds the outcomes in order, and the next jobs.
// For the spec each result is one of a Job and a CompleteRefusal: a
// refusal has a code, a job never does.
type CompleteBatchResponse struct {
	// One per job sent, in order: the job completed, or the problem that
	// refused it with the job's id (told apart by code, which only a
	// problem has).
	Results []CompleteResult `json:"results" binding:"required" oneOf:"Job,CompleteRefusal"`
	Next    []Job            `json:"next,omitzero"`
} // @name CompleteBatchResponse

// handleCompleteBatch godoc
//
//	@Summary		Complete many jobs
//	@Description	Completes up to 1000 jobs in one atomic step, each fenced by its own token, and optionally claims the next jobs. One job's refusal does not stop the others: each result is the job, or a problem with its code (EMQSTALE, EMQGONE) and the job's id. With Prefer: return=minimal (RFC 7240) each completed job is answered without payload and result, and Preference-Applied says so; the next jobs are answered whole.
//	@ID				completeJobs
//	@Tags			worker
//	@Security		BearerAuth
//	@Security		Signature
//	@Accept			json
//	@Param			queue		path	string					true	"queue name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Param			complete	body	CompleteBatchRequest	true	"jobs and claim-next"
//	@Param			Prefer		header	string					false	"RFC 7240 preferences: return=minimal answers the completed jobs without payload and result"
//	@Produce		application/problem+json
//	@Failure		400	{object}	Problem	"EMQINVALID"
//	@Failure		403	{object}	Problem	"EMQFORBIDDEN: the key's role may not do this"
//	@Produce		json
//	@Success		200	{object}	CompleteBatchResponse
//	@Header			200	{string}	Preference-Applied	"return=minimal when the answer is minimal"
//	@Router			/queues/{queue}/complete [post]
func (s *server) handleCompleteBatch(w http.ResponseWriter, r *http.Request) {
	queue, err := queueParam(r)
	var req CompleteBatchRequest
	if err == nil {
		err = s.decode(r, &req)
	}
	var batch []lease.Completion
	if err == nil {
		batch, err = s.completions(req.Jobs)
	}
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	outcomes, next, err := s.leases.CompleteBatch(r.Context(), queue, batch, req.Claim.params())
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	completedN := 0
	for _, o := range outcomes {
		if o.Err == nil {
			completedN++
		}
	}
	s.transition(queue, "completed", completedN)
	s.transition(queue, "claimed", len(next))
	writeCompleteBatch(w, r.URL.Path, batch, outcomes, finishedView(w, r), next, req.Claim != nil)
}

// completions are the completions a batch complete's items ask for, each
// result within the size limit.
func (s *server) completions(items []CompleteItem) ([]lease.Completion, error) {
	batch := make([]lease.Completion, len(items))
	for i, item := range items {
		batch[i] = lease.Completion{ID: item.ID, Token: *item.Token, Result: compactJSON(item.Result)}
		if err := s.checkSize(valueField{i, "result"}, batch[i].Result); err != nil {
			return nil, err
		}
	}
	return batch, nil
}

// FailRequest reports a failed attempt.
type FailRequest struct {
	Token *int64 `json:"token" format:"int64" validate:"required,token" minimum:"1" example:"42"`
	// What went wrong: kept as last_error, cut at 4 KiB.
	Error *string `json:"error" validate:"required" example:"SMTP timeout"`
	// Overrides the job's backoff for this retry.
	RetryInMs *int64 `json:"retry_in_ms,omitempty" format:"int64" validate:"omitnil,min=0,max=31536000000" example:"5000"`
	// Dead-letters the job at once, with no retry.
	Fatal bool `json:"fatal,omitempty"`
} // @name FailRequest

// handleFail godoc
//
//	@Summary		Fail a job
//	@Description	Reports that the attempt held under token failed. The job becomes cancelled when a cancel was requested; dead when fatal or out of attempts; otherwise delayed by retry_in_ms or its backoff (pending when the delay is 0). Repeating a fail that succeeded answers 200 with the job as it is. With Prefer: return=minimal (RFC 7240) the job is answered without payload and result, and Preference-Applied says so.
//	@ID				failJob
//	@Tags			worker
//	@Security		BearerAuth
//	@Security		Signature
//	@Accept			json
//	@Param			queue	path	string		true	"queue name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Param			id		path	string		true	"job id: 1 to 128 of A-Z a-z 0-9 . _ : -, not only dots"	minlength(1)	maxlength(128)
//	@Param			fail	body	FailRequest	true	"token and error"
//	@Param			Prefer	header	string		false	"RFC 7240 preferences: return=minimal answers the job without payload and result"
//	@Produce		application/problem+json
//	@Failure		400	{object}	Problem	"EMQINVALID"
//	@Failure		403	{object}	Problem	"EMQFORBIDDEN: the key's role may not do this"
//	@Failure		404	{object}	Problem	"EMQGONE"
//	@Failure		409	{object}	Problem	"EMQSTALE"
//	@Produce		json
//	@Success		200	{object}	Job
//	@Header			200	{string}	Preference-Applied	"return=minimal when the answer is minimal"
//	@Router			/queues/{queue}/jobs/{id}/fail [post]
func (s *server) handleFail(w http.ResponseWriter, r *http.Request) {
	queue, id, err := jobParams(r)
	var req FailRequest
	if err == nil {
		err = s.decode(r, &req)
	}
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	p := lease.FailParams{Token: *req.Token, Error: *req.Error, Fatal: req.Fatal}
	if req.RetryInMs != nil {
		retryIn := ms(*req.RetryInMs)
		p.RetryIn = &retryIn
	}
	j, err := s.leases.Fail(r.Context(), queue, id, p)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	if kind, ok := lease.FailTransition(j.State); ok {
		s.transition(queue, kind, 1)
	}
	writeJobAs(w, http.StatusOK, j, finishedView(w, r))
}

// SnoozeRequest puts a held job back for later, its attempt not spent.
type SnoozeRequest struct {
	Token *int64 `json:"token" format:"int64" validate:"required,token" minimum:"1" example:"42"`
	// How long the job waits, delayed, before it may be claimed again, in
	// ms; 0 makes it pending at once.
	DelayMs *int64 `json:"delay_ms" format:"int64" validate:"required,min=0,max=31536000000" example:"60000"`
} // @name SnoozeRequest

// handleSnooze godoc
//
//	@Summary		Snooze a job
//	@Description	Puts the job held under token back for later without spending the attempt: delayed until now + delay_ms (pending when 0), with attempts as before the claim and stalled unchanged, its flow control slot freed (a fifo group keeps its head). The token is dead afterwards. A job whose cancel was requested is cancelled instead. Repeating a snooze that succeeded answers 200 with the job as it is.
//	@ID				snoozeJob
//	@Tags			worker
//	@Security		BearerAuth
//	@Security		Signature
//	@Accept			json
//	@Param			queue	path	string			true	"queue name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Param			id		path	string			true	"job id: 1 to 128 of A-Z a-z 0-9 . _ : -, not only dots"	minlength(1)	maxlength(128)
//	@Param			snooze	body	SnoozeRequest	true	"token and delay"
//	@Produce		application/problem+json
//	@Failure		400	{object}	Problem	"EMQINVALID"
//	@Failure		403	{object}	Problem	"EMQFORBIDDEN: the key's role may not do this"
//	@Failure		404	{object}	Problem	"EMQGONE"
//	@Failure		409	{object}	Problem	"EMQSTALE"
//	@Produce		json
//	@Success		200	{object}	Job
//	@Router			/queues/{queue}/jobs/{id}/snooze [post]
func (s *server) handleSnooze(w http.ResponseWriter, r *http.Request) {
	queue, id, err := jobParams(r)
	var req SnoozeRequest
	if err == nil {
		err = s.decode(r, &req)
	}
	var j job.Job
	if err == nil {
		j, err = s.leases.Snooze(r.Context(), queue, id, *req.Token, ms(*req.DelayMs))
	}
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	kind := "snoozed"
	if j.State == job.StateCancelled {
		kind = "cancelled"
	}
	s.transition(queue, kind, 1)
	writeJob(w, http.StatusOK, j)
}

// CancellationResponse tells the holder whether to stop.
type CancellationResponse struct {
	CancelRequested bool   `json:"cancel_requested" binding:"required"`
	CancelReason    string `json:"cancel_reason" binding:"required"`
} // @name CancellationResponse

// handleCancellation godoc
//
//	@Summary		Check for a cancel request
//	@Description	The holder's O(1) check, fenced by its token: has a cancel been requested for this attempt?
//	@ID				checkCancellation
//	@Tags			worker
//	@Security		BearerAuth
//	@Security		Signature
//	@Param			queue	path	string	true	"queue name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Param			id		path	string	true	"job id: 1 to 128 of A-Z a-z 0-9 . _ : -, not only dots"	minlength(1)	maxlength(128)
//	@Param			token	query	int		true	"the holder's token"	minimum(1)
//	@Produce		application/problem+json
//	@Failure		400	{object}	Problem	"EMQINVALID"
//	@Failure		403	{object}	Problem	"EMQFORBIDDEN: the key's role may not do this"
//	@Failure		404	{object}	Problem	"EMQGONE"
//	@Failure		409	{object}	Problem	"EMQSTALE"
//	@Produce		json
//	@Success		200	{object}	CancellationResponse
//	@Router			/queues/{queue}/jobs/{id}/cancellation [get]
func (s *server) handleCancellation(w http.ResponseWriter, r *http.Request) {
	queue, id, err := jobParams(r)
	var token int64
	if err == nil {
		token, err = tokenQuery(r)
	}
	var c lease.Cancellation
	if err == nil {
		c, err = s.leases.Cancellation(r.Context(), queue, id, token)
	}
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, CancellationResponse{CancelRequested: c.Requested, CancelReason: c.Reason})
}

// CancelRequest asks a job to stop.
type CancelRequest struct {
	Reason string `json:"reason,omitempty" validate:"max=4096" example:"customer asked"`
	// Pins the cancel to one attempt: 409 EMQSTALE if the job is not
	// held under it any more.
	Token *int64 `json:"token,omitempty" format:"int64" validate:"omitnil,token" minimum:"1" example:"42"`
} // @name CancelRequest

// handleCancel godoc
//
//	@Summary		Cancel a job
//	@Description	A cancel is a message, never a kill. A pending or delayed job is cancelled at once (200). An active job is marked cancel_requested for its current attempt (202): the holder sees it at its next extend or cancellation check and reports fail (cancelled) or complete. If its lease lapses first, the sweep cancels it. Cancelling a cancelled job answers 200; a completed or dead one, 409 EMQSTATE.
//	@ID				cancelJob
//	@Tags			jobs
//	@Security		BearerAuth
//	@Security		Signature
//	@Accept			json
//	@Param			queue	path	string			true	"queue name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Param			id		path	string			true	"job id: 1 to 128 of A-Z a-z 0-9 . _ : -, not only dots"	minlength(1)	maxlength(128)
//	@Param			cancel	body	CancelRequest	false	"reason and token"
//	@Produce		application/problem+json
//	@Failure		400	{object}	Problem	"EMQINVALID"
//	@Failure		403	{object}	Problem	"EMQFORBIDDEN: the key's role may not do this"
//	@Failure		404	{object}	Problem	"EMQGONE"
//	@Failure		409	{object}	Problem	"EMQSTATE (completed or dead) or EMQSTALE (token given, job not held under it)"
//	@Produce		json
//	@Success		200	{object}	Job	"cancelled"
//	@Success		202	{object}	Job	"cancel requested"
//	@Router			/queues/{queue}/jobs/{id}/cancel [post]
func (s *server) handleCancel(w http.ResponseWriter, r *http.Request) {
	queue, id, err := jobParams(r)
	var req CancelRequest
	if err == nil {
		err = s.decode(r, &req)
	}
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	p := lease.CancelParams{Reason: req.Reason}
	if req.Token != nil {
		p.Token = *req.Token
	}
	j, requested, err := s.leases.Cancel(r.Context(), queue, id, p)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	status, kind := http.StatusOK, "cancelled"
	if requested {
		status, kind = http.StatusAccepted, "cancel_requested"
	}
	s.transition(queue, kind, 1)
	writeJob(w, status, j)
}
