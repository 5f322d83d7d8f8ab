package http

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/echo-mq/echo_mq/internal/admin"
	"github.com/echo-mq/echo_mq/internal/lease"
)

// LogAppendRequest appends lines to the log of a job its worker holds.
type LogAppendRequest struct {
	Token *int64 `json:"token" format:"int64" validate:"required,token" minimum:"1" example:"42"`
	// The lines, oldest first: 1 to 1000, each at most 2048 bytes of
	// UTF-8. Any text: a line may be empty or hold a newline.
	Lines []string `json:"lines" validate:"required,min=1,max=1000" example:"fetched 120 rows"`
} // @name LogAppendRequest

// LogAppendResponse says what an append did.
type LogAppendResponse struct {
	// The lines this call appended.
	Appended int `json:"appended" binding:"required" example:"1"`
	// How many lines the job's log holds now: at most 1000, the oldest
	// dropped first.
	Total int `json:"total" binding:"required" example:"120"`
} // @name LogAppendResponse

// LogLine is one line of a job's log.
type LogLine struct {
	// When it was appended, on the server's clock.
	At   string `json:"at" format:"date-time" binding:"required" example:"2026-11-29T19:07:07.123Z"`
	Line string `json:"line" binding:"required" example:"fetched 120 rows"`
} // @name LogLine

// LogPage is a page of a job's log, oldest line first.
type LogPage struct {
	Lines []LogLine `json:"lines" binding:"required"`
	// Reads on after this page: pass it back as cursor. Never null: at
	// the end of the log it is the cursor that was sent, and reading with
	// it again answers the lines appended since (a tail).
	NextCursor string `json:"next_cursor" binding:"required" example:"bGluZToxMjA"`
} // @name LogPage

// checkLogLines refuses a line over lease.MaxLogLineBytes bytes, naming
// it; the validator has checked how many lines there are.
func checkLogLines(lines []string) error {
	for i, line := range lines {
		if len(line) > lease.MaxLogLineBytes {
			return invalid(fmt.Sprintf("a log line is at most %d bytes", lease.MaxLogLineBytes),
				FieldError{Field: "lines[" + strconv.Itoa(i) + "]",
					Message: fmt.Sprintf("is %d bytes, over %d", len(line), lease.MaxLogLineBytes)})
		}
	}
	return nil
}

// handleLogAppend godoc
//
//	@Summary		Append to a job's log
//	@Description	Appends lines to the log of the job held under token (BullMQ's job.log), each stamped with the server's time: 1 to 1000 lines a call, each at most 2048 bytes. A job keeps its last 1000 lines, the oldest dropped first, across its attempts, and its log is deleted with it. Fenced by the token as a lease extension is: a token that does not hold the job, or a job that is no longer active under it, is 409 EMQSTALE. Appending writes no event.
//	@ID				appendJobLog
//	@Tags			worker
//	@Security		BearerAuth
//	@Security		Signature
//	@Accept			json
//	@Param			queue	path	string				true	"queue name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Param			id		path	string				true	"job id: 1 to 128 of A-Z a-z 0-9 . _ : -, not only dots"	minlength(1)	maxlength(128)
//	@Param			log		body	LogAppendRequest	true	"token and lines"
//	@Produce		application/problem+json
//	@Failure		400	{object}	Problem	"EMQINVALID: no token, no lines, more than 1000, or a line over 2048 bytes (errors name lines[i])"
//	@Failure		403	{object}	Problem	"EMQFORBIDDEN: the key's role may not do this"
//	@Failure		404	{object}	Problem	"EMQGONE"
//	@Failure		409	{object}	Problem	"EMQSTALE"
//	@Produce		json
//	@Success		200	{object}	LogAppendResponse
//	@Router			/queues/{queue}/jobs/{id}/logs [post]
func (s *server) handleLogAppend(w http.ResponseWriter, r *http.Request) {
	queue, id, err := jobParams(r)
	var req LogAppendRequest
	if err == nil {
		err = s.decode(r, &req)
	}
	if err == nil {
		err = checkLogLines(req.Lines)
	}
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	logged, err := s.leases.AppendLog(r.Context(), queue, id, *req.Token, req.Lines)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, LogAppendResponse{Appended: logged.Appended, Total: logged.Kept})
}

// handleLogList godoc
//
//	@Summary		Read a job's log
//	@Description	A page of the job's log, oldest line first, each line with the server's time of its append. Pass next_cursor back as cursor to read on. next_cursor is never null: at the end of the log it is the cursor sent, and the same request later answers the lines appended since, so polling with it tails the log. Lines keep their place when older ones are dropped (a job keeps its last 1000): a cursor whose lines were dropped reads from the oldest kept.
//	@ID				listJobLogs
//	@Tags			operator
//	@Security		BearerAuth
//	@Security		Signature
//	@Param			queue	path	string	true	"queue name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Param			id		path	string	true	"job id: 1 to 128 of A-Z a-z 0-9 . _ : -, not only dots"	minlength(1)	maxlength(128)
//	@Param			limit	query	int		false	"lines per page"	minimum(1)	maximum(1000)	default(100)
//	@Param			cursor	query	string	false	"next_cursor of the previous page; none: from the oldest line kept"
//	@Produce		application/problem+json
//	@Failure		400	{object}	Problem	"EMQINVALID"
//	@Failure		404	{object}	Problem	"EMQGONE"
//	@Produce		json
//	@Success		200	{object}	LogPage
//	@Router			/queues/{queue}/jobs/{id}/logs [get]
func (s *server) handleLogList(w http.ResponseWriter, r *http.Request) {
	queue, id, err := jobParams(r)
	limit := 0
	if err == nil {
		limit, err = limitQuery(r, 100, lease.MaxLogLines)
	}
	var page admin.LogPage
	if err == nil {
		page, err = s.admin.Logs(r.Context(), queue, id, r.URL.Query().Get("cursor"), limit)
	}
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	out := LogPage{Lines: make([]LogLine, len(page.Lines)), NextCursor: page.Next}
	for i, l := range page.Lines {
		out.Lines[i] = LogLine{At: stamp(l.At), Line: l.Line}
	}
	writeJSON(w, http.StatusOK, out)
}
