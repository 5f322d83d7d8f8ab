package main

import (
	"context"
	"strconv"
	"sync/atomic"
	"time"
)

// ticket is a claimed job as a worker holds it: enough to complete it.
type ticket struct {
	ID    string `json:"id"`
	Token int64  `json:"token"`
}

// driver is one way of reaching the queue: the service's HTTP API, or the
// same scripts called through go-redis with no HTTP in between. The shapes
// in shapes.go are written once against it, so both paths do the same work.
type driver interface {
	// enqueue adds n jobs with the bench payload in one call (n > 1 is a
	// batch request).
	enqueue(ctx context.Context, queue string, n int) error
	// claim leases up to count jobs, waiting up to wait for one to come
	// when the driver can wait (the HTTP long poll).
	claim(ctx context.Context, queue string, count int, wait time.Duration) ([]ticket, error)
	// complete completes one job; with next > 0 it also claims up to next
	// jobs in the same call and returns them.
	complete(ctx context.Context, queue string, t ticket, next int) ([]ticket, error)
	// completeBatch completes every job of ts in one call and claims up to
	// next jobs in the same call.
	completeBatch(ctx context.Context, queue string, ts []ticket, next int) ([]ticket, error)
	// extend renews one lease.
	extend(ctx context.Context, queue string, t ticket, lease time.Duration) error
	// cleanup deletes the queue and every key it made.
	cleanup(ctx context.Context, queue string) error
}

// groupNames hands out the groups of the bench's jobs in turn, g0 to
// g<n-1>, from every producer at once; with n 0, none.
type groupNames struct {
	n    int
	turn atomic.Uint64
}

// next is the next job's group, "" when the jobs have none.
func (g *groupNames) next() string {
	if g.n == 0 {
		return ""
	}
	return "g" + strconv.FormatUint(g.turn.Add(1)%uint64(g.n), 10)
}

// appendTo appends the next job's "group" member to an enqueue body's
// open object, nothing when the jobs have none.
func (g *groupNames) appendTo(body []byte) []byte {
	if group := g.next(); group != "" {
		body = append(append(append(body, `,"group":"`...), group...), '"')
	}
	return body
}

// payload is the bench job's payload: 100 bytes of JSON, the size the
// issue's figures are given for.
var payload = []byte(`{"to":"user@example.com","template":"welcome","locale":"en-GB","pad":"abcdefghijklmnopqrstuvwxyz01"}`)
