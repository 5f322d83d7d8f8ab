package http

import (
	"net/http"
	"strconv"

	"github.com/echo-mq/echo_mq/internal/admin"
	"github.com/echo-mq/echo_mq/internal/keyspace"
)

// Queue is a queue as the API shows it.
type Queue struct {
	Name   string `json:"name" binding:"required" example:"emails"`
	Paused bool   `json:"paused" binding:"required"`
	// Holds how many jobs are in each state: pending, active,
	// delayed, waiting, completed, dead, cancelled.
	Counts map[string]int64 `json:"counts" binding:"required"`
	// Whether the queue has a push target: the service delivers its jobs
	// to a URL (GET /queues/{queue}/push says where).
	Push bool `json:"push" binding:"required"`
} // @name Queue

// QueueList is a page of queues.
type QueueList struct {
	Queues []Queue `json:"queues" binding:"required"`
	// Fetches the next page; null on the last one.
	NextCursor *string `json:"next_cursor" binding:"required" extensions:"x-nullable"`
} // @name QueueList

func queueOf(info admin.QueueInfo) Queue {
	return Queue{Name: info.Name, Paused: info.Paused, Counts: info.Counts, Push: info.Push}
}

// nextCursor is a listing's next_cursor: null when there is no next page.
func nextCursor(cursor string) *string {
	if cursor == "" {
		return nil
	}
	return &cursor
}

// limitQuery reads an optional limit query parameter in [1, most].
func limitQuery(r *http.Request, def, most int) (int, error) {
	return intQuery(r, "limit", def, most)
}

// intQuery reads an optional integer query parameter in [1, most]; def
// when it is absent.
func intQuery(r *http.Request, name string, def, most int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > most {
		return 0, invalid("invalid query parameter",
			FieldError{Field: name, Message: "must be an integer from 1 to " + strconv.Itoa(most)})
	}
	return n, nil
}

// handleQueueList godoc
//
//	@Summary		List queues
//	@Description	A page of the known queues, in name order, with their paused flag and counts per state (each count O(1)); with prefix, only the queues whose names start with it. Pass next_cursor back as cursor (with the same prefix) until it is null. A page costs the same however many queues there are (up to EMQ_MAX_QUEUES), and no queue comes twice across the pages.
//	@ID				listQueues
//	@Tags			operator
//	@Security		BearerAuth
//	@Security		Signature
//	@Param			prefix	query	string	false	"only the queues whose names start with this: 0 to 100 of A-Z a-z 0-9 . _ -"	maxlength(100)
//	@Param			cursor	query	string	false	"next_cursor of the previous page"
//	@Param			limit	query	int		false	"queues per page"	minimum(1)	maximum(1000)	default(100)
//	@Produce		application/problem+json
//	@Failure		400	{object}	Problem	"EMQINVALID"
//	@Produce		json
//	@Success		200	{object}	QueueList
//	@Router			/queues [get]
func (s *server) handleQueueList(w http.ResponseWriter, r *http.Request) {
	limit, err := limitQuery(r, 100, 1000)
	prefix, cursor := r.URL.Query().Get("prefix"), r.URL.Query().Get("cursor")
	switch {
	case err != nil:
	case !keyspace.ValidQueuePrefix(prefix):
		err = invalid("invalid query parameter",
			FieldError{Field: "prefix", Message: "must be 0 to 100 of A-Z a-z 0-9 . _ -"})
	case cursor != "" && !keyspace.ValidQueueName(cursor):
		err = admin.ErrCursor
	}
	var infos []admin.QueueInfo
	var next string
	if err == nil {
		infos, next, err = s.admin.Queues(r.Context(), prefix, cursor, limit)
	}
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	list := QueueList{Queues: make([]Queue, len(infos)), NextCursor: nextCursor(next)}
	for i, info := range infos {
		list.Queues[i] = queueOf(info)
	}
	writeJSON(w, http.StatusOK, list)
}

// handleQueueGet godoc
//
//	@Summary		Get a queue
//	@Description	The queue's paused flag and counts per state, each O(1). Queues are made by use: a name nobody used answers all zeros.
//	@ID				getQueue
//	@Tags			operator
//	@Security		BearerAuth
//	@Security		Signature
//	@Param			queue	path	string	true	"queue name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Produce		application/problem+json
//	@Failure		400	{object}	Problem	"EMQINVALID"
//	@Produce		json
//	@Success		200	{object}	Queue
//	@Router			/queues/{queue} [get]
func (s *server) handleQueueGet(w http.ResponseWriter, r *http.Request) {
	queue, err := queueParam(r)
	var info admin.QueueInfo
	if err == nil {
		info, err = s.admin.Queue(r.Context(), queue)
	}
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, queueOf(info))
}

// handleQueuePause godoc
//
//	@Summary		Pause a queue
//	@Description	Claims answer an empty list while the queue is paused; active jobs go on and can still extend, complete and fail. Pausing a paused queue changes nothing.
//	@ID				pauseQueue
//	@Tags			operator
//	@Security		BearerAuth
//	@Security		Signature
//	@Param			queue	path	string	true	"queue name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Produce		application/problem+json
//	@Failure		400	{object}	Problem	"EMQINVALID"
//	@Failure		403	{object}	Problem	"EMQFORBIDDEN: the key's role may not do this"
//	@Failure		409	{object}	Problem	"EMQQUOTA: the queue is new and there are EMQ_MAX_QUEUES queues already"
//	@Produce		json
//	@Success		200	{object}	Queue
//	@Router			/queues/{queue}/pause [post]
func (s *server) handleQueuePause(w http.ResponseWriter, r *http.Request) {
	s.setPaused(w, r, true)
}

// handleQueueResume godoc
//
//	@Summary		Resume a queue
//	@Description	Claims take jobs again; waiting long polls are woken.
//	@ID				resumeQueue
//	@Tags			operator
//	@Security		BearerAuth
//	@Security		Signature
//	@Param			queue	path	string	true	"queue name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Produce		application/problem+json
//	@Failure		400	{object}	Problem	"EMQINVALID"
//	@Failure		403	{object}	Problem	"EMQFORBIDDEN: the key's role may not do this"
//	@Failure		409	{object}	Problem	"EMQQUOTA: the queue is new and there are EMQ_MAX_QUEUES queues already"
//	@Produce		json
//	@Success		200	{object}	Queue
//	@Router			/queues/{queue}/resume [post]
func (s *server) handleQueueResume(w http.ResponseWriter, r *http.Request) {
	s.setPaused(w, r, false)
}

func (s *server) setPaused(w http.ResponseWriter, r *http.Request, paused bool) {
	queue, err := queueParam(r)
	var info admin.QueueInfo
	if err == nil {
		info, err = s.admin.SetPaused(r.Context(), queue, paused, actorOf(r))
	}
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	action := map[bool]string{true: "pause", false: "resume"}[paused]
	s.audit(r, action, "queue", queue)
	writeJSON(w, http.StatusOK, queueOf(info))
}

// handleQueueDrain godoc
//
//	@Summary		Drain a queue
//	@Description	Removes the queue's pending and delayed jobs, in bounded steps; active jobs are left to finish.
//	@ID				drainQueue
//	@Tags			operator
//	@Security		BearerAuth
//	@Security		Signature
//	@Param			queue	path	string	true	"queue name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Produce		application/problem+json
//	@Failure		400	{object}	Problem	"EMQINVALID"
//	@Failure		403	{object}	Problem	"EMQFORBIDDEN: the key's role may not do this"
//	@Produce		json
//	@Success		200	{object}	Removed
//	@Router			/queues/{queue}/drain [post]
func (s *server) handleQueueDrain(w http.ResponseWriter, r *http.Request) {
	queue, err := queueParam(r)
	var n int
	if err == nil {
		n, err = s.admin.Drain(r.Context(), queue, actorOf(r))
	}
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	s.audit(r, "drain", "queue", queue, "removed", n)
	s.transition(queue, "drained", n)
	writeJSON(w, http.StatusOK, Removed{Removed: n})
}

// handleQueueObliterate godoc
//
//	@Summary		Obliterate a queue
//	@Description	Deletes the queue and every key of it, in bounded steps (no single Redis call blocks for long). Refused with 409 EMQSTATE while jobs are active, unless force=true; forced, their holders' next calls are answered 404 EMQGONE.
//	@ID				obliterateQueue
//	@Tags			operator
//	@Security		BearerAuth
//	@Security		Signature
//	@Param			queue	path	string	true	"queue name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Param			force	query	bool	false	"delete active jobs too"
//	@Produce		application/problem+json
//	@Failure		400	{object}	Problem	"EMQINVALID"
//	@Failure		403	{object}	Problem	"EMQFORBIDDEN: the key's role may not do this"
//	@Failure		409	{object}	Problem	"EMQSTATE: jobs are active"
//	@Produce		json
//	@Success		200	{object}	Removed
//	@Router			/queues/{queue} [delete]
func (s *server) handleQueueObliterate(w http.ResponseWriter, r *http.Request) {
	queue, err := queueParam(r)
	var force bool
	if err == nil {
		force, err = boolQuery(r, "force")
	}
	var n int
	if err == nil {
		n, err = s.admin.Obliterate(r.Context(), queue, force)
	}
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	s.audit(r, "obliterate", "queue", queue, "removed", n, "force", force)
	s.forgetQueue(r, queue)
	writeJSON(w, http.StatusOK, Removed{Removed: n})
}
