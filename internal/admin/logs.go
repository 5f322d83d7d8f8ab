package admin

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/lua"
)

// LogLine is one line of a job's log, stamped with the server's time of
// its append.
type LogLine struct {
	At   time.Time
	Line string
}

// LogPage is a page of a job's log, oldest line first, and the cursor
// that reads on after it: never empty, so that a reader at the end keeps
// it and reads again for the lines that come (a tail).
type LogPage struct {
	Lines []LogLine
	Next  string
}

// Logs reads up to limit lines of job id's log from cursor ("" for the
// oldest line kept). Lines have stable numbers (lua/log_append.lua): a
// cursor names the next line to read, so a page neither repeats nor skips
// lines while more are appended, and a cursor whose lines were dropped
// since reads from the oldest kept. Errors: job.ErrGone, ErrCursor.
func (s *Service) Logs(ctx context.Context, queue, id, cursor string, limit int) (LogPage, error) {
	from, err := decodeLogCursor(cursor)
	if err != nil {
		return LogPage{}, err
	}
	reply, err := s.run(ctx, queue, lua.LogReadArgs{ID: id, From: from, Limit: limit})
	if err != nil {
		return LogPage{}, err
	}
	items, _ := reply.([]any)
	if len(items) != 2 {
		return LogPage{}, fmt.Errorf("log read: unexpected reply of %d items", len(items))
	}
	first, _ := items[0].(int64)
	raw, _ := items[1].([]any)
	page := LogPage{Lines: make([]LogLine, 0, len(raw))}
	for _, item := range raw {
		line, err := parseLogLine(item)
		if err != nil {
			return LogPage{}, err
		}
		page.Lines = append(page.Lines, line)
	}
	page.Next = encodeLogCursor(first + int64(len(page.Lines)))
	return page, nil
}

// parseLogLine reads a stored line, "<ms>|<line>".
func parseLogLine(item any) (LogLine, error) {
	text, _ := item.(string)
	ms, line, ok := strings.Cut(text, "|")
	n, err := strconv.ParseInt(ms, 10, 64)
	if !ok || err != nil {
		return LogLine{}, fmt.Errorf("log read: a stored line without its time")
	}
	return LogLine{At: job.Millis(n), Line: line}, nil
}

// A log cursor is the number of the next line to read, opaque to clients.
func encodeLogCursor(n int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte("line:" + strconv.FormatInt(n, 10)))
}

// decodeLogCursor reads a cursor encodeLogCursor wrote; nil for "".
func decodeLogCursor(cursor string) (*int64, error) {
	if cursor == "" {
		return nil, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	digits, ok := strings.CutPrefix(string(raw), "line:")
	n, perr := strconv.ParseInt(digits, 10, 64)
	if err != nil || !ok || perr != nil || n < 0 {
		return nil, fmt.Errorf("%w: %q", ErrCursor, cursor)
	}
	return &n, nil
}
