package http

import (
	"context"
	"net/http"
	"slices"

	"github.com/echo-mq/echo_mq/internal/admin"
	"github.com/echo-mq/echo_mq/internal/job"
)

// JobPage is a page of a listing of jobs.
type JobPage struct {
	Jobs []Job `json:"jobs" binding:"required"`
	// Fetches the next page; null on the last one.
	NextCursor *string `json:"next_cursor" binding:"required" extensions:"x-nullable"`
} // @name JobPage

// handleJobList godoc
//
//	@Summary		List jobs
//	@Description	A page of the queue's jobs in one state: newest first for completed, dead and cancelled; claim order for pending; lease expiry for active; run-at for delayed; enqueue order for waiting. Pass next_cursor back as cursor until it is null. Cursors are stable: no job is given twice or skipped across pages while other jobs come and go.
//	@ID				listJobs
//	@Tags			operator
//	@Security		BearerAuth
//	@Security		Signature
//	@Param			queue	path	string	true	"queue name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Param			state	query	string	true	"the state to list"	Enums(pending, active, delayed, waiting, completed, dead, cancelled)
//	@Param			limit	query	int		false	"jobs per page"	minimum(1)	maximum(500)	default(50)
//	@Param			cursor	query	string	false	"next_cursor of the previous page"
//	@Produce		application/problem+json
//	@Failure		400	{object}	Problem	"EMQINVALID"
//	@Produce		json
//	@Success		200	{object}	JobPage
//	@Router			/queues/{queue}/jobs [get]
func (s *server) handleJobList(w http.ResponseWriter, r *http.Request) {
	queue, err := queueParam(r)
	state := r.URL.Query().Get("state")
	if err == nil && !slices.Contains(admin.States, state) {
		err = invalid("invalid query parameter", FieldError{Field: "state",
			Message: "must be one of: pending active delayed waiting completed dead cancelled"})
	}
	limit := 0
	if err == nil {
		limit, err = limitQuery(r, 50, 500)
	}
	var page admin.Page
	if err == nil {
		page, err = s.admin.List(r.Context(), queue, state, r.URL.Query().Get("cursor"), limit)
	}
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJobPage(w, page.Jobs, page.Next)
}

// handleJobRetry godoc
//
//	@Summary		Retry a job
//	@Description	Sends a dead or cancelled job back to pending, with its stalled count reset and a fresh attempt budget (attempts 0). Its next claim draws a new token, as every claim does.
//	@ID				retryJob
//	@Tags			operator
//	@Security		BearerAuth
//	@Security		Signature
//	@Param			queue	path	string	true	"queue name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Param			id		path	string	true	"job id: 1 to 128 of A-Z a-z 0-9 . _ : -, not only dots"	minlength(1)	maxlength(128)
//	@Produce		application/problem+json
//	@Failure		400	{object}	Problem	"EMQINVALID"
//	@Failure		403	{object}	Problem	"EMQFORBIDDEN: the key's role may not do this"
//	@Failure		404	{object}	Problem	"EMQGONE"
//	@Failure		409	{object}	Problem	"EMQSTATE: the job is not dead or cancelled"
//	@Produce		json
//	@Success		200	{object}	Job
//	@Router			/queues/{queue}/jobs/{id}/retry [post]
func (s *server) handleJobRetry(w http.ResponseWriter, r *http.Request) {
	s.jobVerb(w, r, "retry", "retried", s.admin.Retry)
}

// handleJobPromote godoc
//
//	@Summary		Promote a job
//	@Description	Makes a delayed job pending now.
//	@ID				promoteJob
//	@Tags			operator
//	@Security		BearerAuth
//	@Security		Signature
//	@Param			queue	path	string	true	"queue name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Param			id		path	string	true	"job id: 1 to 128 of A-Z a-z 0-9 . _ : -, not only dots"	minlength(1)	maxlength(128)
//	@Produce		application/problem+json
//	@Failure		400	{object}	Problem	"EMQINVALID"
//	@Failure		403	{object}	Problem	"EMQFORBIDDEN: the key's role may not do this"
//	@Failure		404	{object}	Problem	"EMQGONE"
//	@Failure		409	{object}	Problem	"EMQSTATE: the job is not delayed"
//	@Produce		json
//	@Success		200	{object}	Job
//	@Router			/queues/{queue}/jobs/{id}/promote [post]
func (s *server) handleJobPromote(w http.ResponseWriter, r *http.Request) {
	s.jobVerb(w, r, "promote", "promoted", s.admin.Promote)
}

// jobVerb runs an operator verb on one job and answers the job.
func (s *server) jobVerb(w http.ResponseWriter, r *http.Request, action, kind string,
	verb func(ctx context.Context, queue, id string, by admin.Actor) (job.Job, error)) {
	queue, id, err := jobParams(r)
	var j job.Job
	if err == nil {
		j, err = verb(r.Context(), queue, id, actorOf(r))
	}
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	s.audit(r, action, "queue", queue, "job", id)
	s.transition(queue, kind, 1)
	writeJob(w, http.StatusOK, j)
}
