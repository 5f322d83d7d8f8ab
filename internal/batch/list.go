package batch

import (
	"context"
	"errors"
	"fmt"

	"github.com/echo-mq/echo_mq/internal/cursor"
	"github.com/echo-mq/echo_mq/lua"
)

// ErrCursor means a listing's cursor is not one the service gave out.
var ErrCursor = errors.New("invalid cursor")

// List reads a page of up to limit batches of queue, newest first (by
// creation; ties by id, highest first), after the cursor from ("" for the first
// page), each as Get answers it, and the cursor of the next page ("" on
// the last). Cursors are stable: across pages no batch is given twice or
// skipped while others are made (a new one comes before the first page).
// Each batch that is not done has its live counts read, as Get does.
// Errors: ErrCursor.
func (s *Service) List(ctx context.Context, queue, from string, limit int) ([]Batch, string, error) {
	score, after, ok := cursor.Decode(from)
	if !ok {
		return nil, "", fmt.Errorf("%w: %q", ErrCursor, from)
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
	return page, cursor.Encode(nextScore, nextID), nil
}
