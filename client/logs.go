package client

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// The bounds of a job's log: one append takes 1 to MaxLogLines lines of at
// most MaxLogLineBytes bytes each (else ErrInvalid), and a job keeps its
// last MaxLogLines lines, the oldest dropped first.
const (
	MaxLogLines     = 1000
	MaxLogLineBytes = 2048
)

// Logged is the answer to an append to a job's log.
type Logged struct {
	// Appended is how many lines the call appended.
	Appended int `json:"appended"`
	// Total is how many lines the job's log holds now (at most
	// MaxLogLines).
	Total int `json:"total"`
}

// LogLine is one line of a job's log.
type LogLine struct {
	// At is when it was appended, on the service's clock.
	At   time.Time `json:"at"`
	Line string    `json:"line"`
}

// LogPage is a page of a job's log, oldest line first.
type LogPage struct {
	Lines []LogLine `json:"lines"`
	// NextCursor reads on after this page (LogsRequest.Cursor). It is never
	// empty: at the end of the log it is the cursor that was sent, and
	// reading with it later answers the lines appended since.
	NextCursor string `json:"next_cursor"`
}

// LogsRequest says which page of a job's log to read.
type LogsRequest struct {
	// Cursor is a LogPage's NextCursor; "" reads from the oldest line
	// kept. A cursor whose lines were dropped since reads from the oldest
	// kept.
	Cursor string
	// Limit is how many lines at most, 1 to 1000; 0 means the service's
	// default, 100.
	Limit int
}

type logBody struct {
	Token int64    `json:"token"`
	Lines []string `json:"lines"`
}

// AppendLog appends lines to the log of job id of queue, held under
// token, each stamped with the service's time (BullMQ's job.log). It is
// fenced as Extend is: ErrStale when the token does not hold the job (or
// the job is no longer active), ErrGone when there is none. A handler of
// Work logs with Log instead.
func (c *Client) AppendLog(ctx context.Context, queue, id string, token int64, lines ...string) (Logged, error) {
	var out Logged
	_, err := c.do(ctx, http.MethodPost, jobPath(queue, id, "/logs"), logBody{Token: token, Lines: lines}, &out)
	return out, err
}

// Logs reads a page of the log of job id of queue, oldest line first;
// ErrGone when there is no such job. To follow a running job's log, read
// again with the last page's NextCursor every few seconds: each read
// answers the lines appended since.
func (c *Client) Logs(ctx context.Context, queue, id string, req LogsRequest) (LogPage, error) {
	query := url.Values{}
	if req.Cursor != "" {
		query.Set("cursor", req.Cursor)
	}
	if req.Limit != 0 {
		query.Set("limit", strconv.Itoa(req.Limit))
	}
	path := jobPath(queue, id, "/logs")
	if len(query) > 0 {
		path += "?" + query.Encode()
	}
	var page LogPage
	_, err := c.do(ctx, http.MethodGet, path, nil, &page)
	return page, err
}

// Log appends lines to the log of the job whose handler ctx is: ctx must
// be (or derive from) the context Work gave the handler. The lines are
// sent at once, and Log returns when the service has them, or its error
// (ErrStale or ErrGone when the job is no longer the handler's); a line
// that did not get through is not sent again. It still sends after the
// handler's ctx was cancelled, so that a handler can log why it stops.
func Log(ctx context.Context, lines ...string) error {
	h, ok := ctx.Value(heartbeatKey{}).(*heartbeat)
	if !ok {
		return errors.New("client: Log needs the context Work gives a handler")
	}
	call, cancel := context.WithTimeout(context.WithoutCancel(ctx), callTimeout)
	defer cancel()
	_, err := h.w.c.AppendLog(call, h.w.queue, h.job.ID, h.job.Token, lines...)
	return err
}
