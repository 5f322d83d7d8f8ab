package batch

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/lua"
)

// ErrCursor means a listing's cursor is not one the service gave out.
var ErrCursor = errors.New("invalid cursor")

// List reads a page of up to limit batches of queue, newest first (by
// creation; ties by id, highest first), after cursor ("" for the first
// page), each as Get answers it, and the cursor of the next page ("" on
// the last). Cursors are stable: across pages no batch is given twice or
// skipped while others are made (a new one comes before the first page).
// Each batch that is not done has its live counts read, as Get does.
// Errors: ErrCursor.
func (s *Service) List(ctx context.Context, queue, cursor string, limit int) ([]Batch, string, error) {
	score, after, err := decodeCursor(cursor)
	if err != nil {
		return nil, "", err
	}
	reply, err := s.scripts.Reply(ctx, lua.BatchListArgs{Score: score, ID: after, Limit: limit}.Call(s.queue(queue)))
	if err != nil {
		return nil, "", err
	}
	items, _ := reply.([]any)
	if len(items) != 3 {
		return nil, "", fmt.Errorf("batch_list: unexpected reply %v", reply)
	}
	replies, _ := items[2].([]any)
	page := make([]Batch, len(replies))
	for i, r := range replies {
		fields, _ := r.([]any)
		if page[i], err = parse(queue, fields); err != nil {
			return nil, "", err
		}
		if page[i], err = s.withLive(ctx, page[i]); err != nil {
			return nil, "", err
		}
	}
	nextScore, _ := items[0].(string)
	nextID, _ := items[1].(string)
	return page, encodeCursor(nextScore, nextID), nil
}

// A cursor is the last (created_at, id) of a page, opaque to clients.
func encodeCursor(score, id string) string {
	if score == "" {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString([]byte(score + "/" + id))
}

func decodeCursor(cursor string) (score, id string, err error) {
	if cursor == "" {
		return "", "", nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	score, id, ok := strings.Cut(string(raw), "/")
	if _, perr := strconv.ParseInt(score, 10, 64); err != nil || perr != nil || !ok || !keyspace.ValidJobID(id) {
		return "", "", fmt.Errorf("%w: %q", ErrCursor, cursor)
	}
	return score, id, nil
}
