package client

import (
	"context"
	"errors"
	"time"
)

// The pauses of Work after a retryable error, when the answer gave no
// Retry-After: the first, doubled after each further error, up to the last.
const (
	firstBackoff = 500 * time.Millisecond
	maxBackoff   = 30 * time.Second
)

// backoff is the pause before retrying a call that failed in a retryable
// way. It is not safe for concurrent use: each loop keeps its own.
type backoff struct {
	next time.Duration
}

// delay returns how long to wait after err: the answer's Retry-After when
// it gave one, otherwise 0.5 s doubling per call; never more than 30 s (a
// proxy's Retry-After a day away must not stall a worker for a day).
func (b *backoff) delay(err error) time.Duration {
	var e *Error
	if errors.As(err, &e) && e.RetryAfter > 0 {
		return min(e.RetryAfter, maxBackoff)
	}
	d := max(b.next, firstBackoff)
	b.next = min(2*d, maxBackoff)
	return d
}

// reset starts the doubling again, after a call that succeeded.
func (b *backoff) reset() { b.next = 0 }

// sleep waits for d, and reports false instead if ctx ends first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
