package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
)

// Queue is a queue as ListQueues answers it: its name, whether it is
// paused, whether it has a push target, and how many jobs it holds in each
// state ("pending", "active", "delayed", "waiting", "completed", "dead",
// "cancelled").
type Queue struct {
	Name   string           `json:"name"`
	Paused bool             `json:"paused"`
	Push   bool             `json:"push"`
	Counts map[string]int64 `json:"counts"`
}

// QueueList says which page of the queues ListQueues reads.
type QueueList struct {
	// Prefix keeps the queues whose names start with it; "" keeps all.
	Prefix string
	// Cursor is the next cursor of the page before; "" for the first.
	// Pass it with the same Prefix.
	Cursor string
	// Limit is the most queues in the page, 1 to 1000; 0: the service's
	// default, 100.
	Limit int
}

// ListQueues returns one page of the known queues, by name, and next, the
// cursor of the page after; next is "" on the last page. Each queue comes
// once across the pages, and a page costs the service the same however
// many queues there are. Listing queues takes a reader key.
func (c *Client) ListQueues(ctx context.Context, list QueueList) (page []Queue, next string, err error) {
	query := url.Values{}
	if list.Prefix != "" {
		query.Set("prefix", list.Prefix)
	}
	if list.Cursor != "" {
		query.Set("cursor", list.Cursor)
	}
	if list.Limit != 0 {
		query.Set("limit", strconv.Itoa(list.Limit))
	}
	path := "/queues"
	if len(query) > 0 {
		path += "?" + query.Encode()
	}
	var out struct {
		Queues     []Queue `json:"queues"`
		NextCursor string  `json:"next_cursor"` // null on the last page: ""
	}
	_, err = c.do(ctx, http.MethodGet, path, nil, &out)
	return out.Queues, out.NextCursor, err
}
