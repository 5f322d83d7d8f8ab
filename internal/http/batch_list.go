package http

import (
	"net/http"

	"github.com/echo-mq/echo_mq/internal/batch"
)

// BatchPage is a page of a queue's batches, newest first.
type BatchPage struct {
	// Each batch as GET /queues/{queue}/batches/{id} answers it.
	Batches []Batch `json:"batches" binding:"required"`
	// Fetches the next page; null on the last one.
	NextCursor *string `json:"next_cursor" binding:"required" extensions:"x-nullable"`
} // @name BatchPage

// Bounds of a batch listing's page: each batch not done has its live
// counts read (O(its jobs)), so a page is kept smaller than a job
// listing's.
const (
	batchPageDefault = 20
	batchPageMost    = 100
)

// handleBatchList godoc
//
//	@Summary		List a queue's batches
//	@Description	A page of the queue's batches, newest first (by created_at; ties by id), each as GET /queues/{queue}/batches/{id} answers it: open, running and done ones (a done batch is kept 7 days). Pass next_cursor back as cursor until it is null; a cursor the service did not give out is 400 EMQINVALID (field cursor). Cursors are stable: no batch is given twice or skipped across pages while others are made (a new batch comes before the first page). Each batch not done has its jobs' states read for its counts, as GET does.
//	@ID				listBatches
//	@Tags			batches
//	@Security		BearerAuth
//	@Security		Signature
//	@Param			queue	path	string	true	"queue name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Param			limit	query	int		false	"batches per page"	minimum(1)	maximum(100)	default(20)
//	@Param			cursor	query	string	false	"next_cursor of the previous page"
//	@Produce		application/problem+json
//	@Failure		400	{object}	Problem	"EMQINVALID: a bad limit or cursor"
//	@Failure		403	{object}	Problem	"EMQFORBIDDEN: the key's role may not do this"
//	@Produce		json
//	@Success		200	{object}	BatchPage
//	@Router			/queues/{queue}/batches [get]
func (s *server) handleBatchList(w http.ResponseWriter, r *http.Request) {
	queue, err := queueParam(r)
	limit := 0
	if err == nil {
		limit, err = limitQuery(r, batchPageDefault, batchPageMost)
	}
	var list []batch.Batch
	var next string
	if err == nil {
		list, next, err = s.cfg.Batches.List(r.Context(), queue, r.URL.Query().Get("cursor"), limit)
	}
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	page := BatchPage{Batches: make([]Batch, len(list)), NextCursor: nextCursor(next)}
	for i, b := range list {
		page.Batches[i] = batchOf(b)
	}
	writeJSON(w, http.StatusOK, page)
}
