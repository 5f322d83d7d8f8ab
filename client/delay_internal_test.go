package client

import (
	"testing"
	"time"
)

// A Retry-After longer than the longest pause is cut to it; a short one,
// or none (0.5 s doubling), is kept.
func TestBackoffDelayIsCapped(t *testing.T) {
	var b backoff
	for _, c := range []struct {
		retryAfter, want time.Duration
	}{
		{24 * time.Hour, maxBackoff},
		{2 * time.Second, 2 * time.Second},
		{0, firstBackoff},
		{0, 2 * firstBackoff},
	} {
		if got := b.delay(&Error{Status: 503, RetryAfter: c.retryAfter}); got != c.want {
			t.Errorf("delay after Retry-After %v: %v, want %v", c.retryAfter, got, c.want)
		}
	}
}
