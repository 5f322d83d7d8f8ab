package http

import (
	"net/http"

	"github.com/echo-mq/echo_mq/internal/admin"
)

// Bulk actions (docs/design.md#bulk-actions): an operator retries, cleans
// or promotes many of a queue's jobs, up to a limit per call, and calls
// again while the answer says more.

// RetryJobsRequest is a bulk retry: which jobs, and how many at most.
type RetryJobsRequest struct {
	// The state of the jobs to retry.
	State string `json:"state" validate:"required,oneof=dead cancelled" enums:"dead,cancelled" example:"dead"`
	// At most this many jobs in this call, oldest finished first; default
	// 1000.
	Limit *int `json:"limit,omitempty" validate:"omitnil,min=1,max=1000" example:"1000"`
} // @name RetryJobsRequest

// RetriedJobs is what a bulk retry did.
type RetriedJobs struct {
	// How many jobs went back to pending.
	Retried int `json:"retried" binding:"required" example:"1000"`
	// Whether jobs of the state are left: call again until false.
	More bool `json:"more" binding:"required" example:"false"`
} // @name RetriedJobs

// CleanJobsRequest is a bulk delete of finished jobs: which state, how old
// at least, and how many at most.
type CleanJobsRequest struct {
	// The state of the jobs to delete.
	State string `json:"state" validate:"required,oneof=completed dead cancelled" enums:"completed,dead,cancelled" example:"completed"`
	// Only jobs that finished more than this many ms ago, on Redis's clock;
	// 0 for all of them.
	OlderThanMs *int64 `json:"older_than_ms" format:"int64" validate:"required,min=0,max=315360000000" example:"86400000"`
	// At most this many jobs in this call, oldest finished first; default
	// 1000.
	Limit *int `json:"limit,omitempty" validate:"omitnil,min=1,max=1000" example:"1000"`
} // @name CleanJobsRequest

// CleanedJobs is what a bulk delete did.
type CleanedJobs struct {
	// How many jobs were deleted, rows, logs and all.
	Removed int `json:"removed" binding:"required" example:"1000"`
	// Whether jobs of the state and age are left: call again until false.
	More bool `json:"more" binding:"required" example:"false"`
} // @name CleanedJobs

// PromoteJobsRequest is a bulk promote: how many delayed jobs at most.
type PromoteJobsRequest struct {
	// At most this many jobs in this call, earliest run-at first; default
	// 1000.
	Limit *int `json:"limit,omitempty" validate:"omitnil,min=1,max=1000" example:"1000"`
} // @name PromoteJobsRequest

// PromotedJobs is what a bulk promote did.
type PromotedJobs struct {
	// How many delayed jobs were made pending.
	Promoted int `json:"promoted" binding:"required" example:"1000"`
	// Whether delayed jobs are left: call again until false.
	More bool `json:"more" binding:"required" example:"false"`
} // @name PromotedJobs

// bulkLimit is a request's limit, or the default.
func bulkLimit(limit *int) int {
	if limit == nil {
		return admin.DefaultBulkLimit
	}
	return *limit
}

// handleQueueRetry godoc
//
//	@Summary		Retry dead or cancelled jobs
//	@Description	Sends up to limit (default and at most 1000) of the queue's dead or cancelled jobs back to pending, oldest finished first, each as POST /queues/{queue}/jobs/{id}/retry does one: a fresh attempt budget, its stalled count reset, its group and batch rules kept, one retried event each. One atomic step; more says jobs of the state are left, so call again until it is false.
//	@ID				retryJobs
//	@Tags			operator
//	@Security		BearerAuth
//	@Security		Signature
//	@Accept			json
//	@Param			queue	path	string				true	"queue name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Param			retry	body	RetryJobsRequest	true	"state and limit"
//	@Produce		application/problem+json
//	@Failure		400	{object}	Problem	"EMQINVALID"
//	@Failure		403	{object}	Problem	"EMQFORBIDDEN: the key's role may not do this"
//	@Produce		json
//	@Success		200	{object}	RetriedJobs
//	@Router			/queues/{queue}/retry [post]
func (s *server) handleQueueRetry(w http.ResponseWriter, r *http.Request) {
	queue, err := queueParam(r)
	var req RetryJobsRequest
	if err == nil {
		err = s.decode(r, &req)
	}
	var done admin.Bulk
	if err == nil {
		done, err = s.admin.RetryAll(r.Context(), queue, req.State, bulkLimit(req.Limit), actorOf(r))
	}
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	s.audit(r, "retry_all", "queue", queue, "state", req.State, "retried", done.N, "more", done.More)
	s.transition(queue, "retried", done.N)
	writeJSON(w, http.StatusOK, RetriedJobs{Retried: done.N, More: done.More})
}

// handleQueueClean godoc
//
//	@Summary		Delete finished jobs
//	@Description	Deletes up to limit (default and at most 1000) of the queue's completed, dead or cancelled jobs that finished more than older_than_ms ago (0: all of them), oldest first, each as DELETE /queues/{queue}/jobs/{id} does one: row, log and all, one removed event each. One atomic step; more says such jobs are left, so call again until it is false.
//	@ID				cleanJobs
//	@Tags			operator
//	@Security		BearerAuth
//	@Security		Signature
//	@Accept			json
//	@Param			queue	path	string				true	"queue name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Param			clean	body	CleanJobsRequest	true	"state, age and limit"
//	@Produce		application/problem+json
//	@Failure		400	{object}	Problem	"EMQINVALID"
//	@Failure		403	{object}	Problem	"EMQFORBIDDEN: the key's role may not do this"
//	@Produce		json
//	@Success		200	{object}	CleanedJobs
//	@Router			/queues/{queue}/clean [post]
func (s *server) handleQueueClean(w http.ResponseWriter, r *http.Request) {
	queue, err := queueParam(r)
	var req CleanJobsRequest
	if err == nil {
		err = s.decode(r, &req)
	}
	var done admin.Bulk
	if err == nil {
		done, err = s.admin.Clean(r.Context(), queue, req.State, *req.OlderThanMs, bulkLimit(req.Limit), actorOf(r))
	}
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	s.audit(r, "clean", "queue", queue, "state", req.State, "older_than_ms", *req.OlderThanMs,
		"removed", done.N, "more", done.More)
	s.transition(queue, "removed", done.N)
	writeJSON(w, http.StatusOK, CleanedJobs{Removed: done.N, More: done.More})
}

// handleQueuePromote godoc
//
//	@Summary		Promote delayed jobs
//	@Description	Makes up to limit (default and at most 1000) of the queue's delayed jobs pending now, earliest run-at first, each as POST /queues/{queue}/jobs/{id}/promote does one: one promoted event each, claimers woken. One atomic step; more says delayed jobs are left, so call again until it is false.
//	@ID				promoteJobs
//	@Tags			operator
//	@Security		BearerAuth
//	@Security		Signature
//	@Accept			json
//	@Param			queue	path	string				true	"queue name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Param			promote	body	PromoteJobsRequest	false	"limit"
//	@Produce		application/problem+json
//	@Failure		400	{object}	Problem	"EMQINVALID"
//	@Failure		403	{object}	Problem	"EMQFORBIDDEN: the key's role may not do this"
//	@Produce		json
//	@Success		200	{object}	PromotedJobs
//	@Router			/queues/{queue}/promote [post]
func (s *server) handleQueuePromote(w http.ResponseWriter, r *http.Request) {
	queue, err := queueParam(r)
	var req PromoteJobsRequest
	if err == nil {
		err = s.decode(r, &req)
	}
	var done admin.Bulk
	if err == nil {
		done, err = s.admin.PromoteAll(r.Context(), queue, bulkLimit(req.Limit), actorOf(r))
	}
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	s.audit(r, "promote_all", "queue", queue, "promoted", done.N, "more", done.More)
	s.transition(queue, "promoted", done.N)
	writeJSON(w, http.StatusOK, PromotedJobs{Promoted: done.N, More: done.More})
}
