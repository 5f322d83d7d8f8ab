package main

import (
	"context"
	"sync"
	"time"
)

// stock counts each queue's jobs enqueued and not yet claimed: the only
// state the minimal handler keeps, in memory, so that claims hand out as
// many jobs as were enqueued and no more.
type stock struct {
	mu     sync.Mutex
	queues map[string]*shelf
}

// shelf is one queue's count, and the claims waiting for it to grow.
type shelf struct {
	n    int
	wake chan struct{} // closed by the next add; nil while no claim waits
}

func newStock() *stock {
	return &stock{queues: map[string]*shelf{}}
}

// shelf is queue's shelf, made on first use. The caller holds mu.
func (s *stock) shelf(queue string) *shelf {
	sh, ok := s.queues[queue]
	if !ok {
		sh = &shelf{}
		s.queues[queue] = sh
	}
	return sh
}

// add counts n jobs enqueued on queue and wakes the claims waiting for it.
func (s *stock) add(queue string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sh := s.shelf(queue)
	sh.n += n
	if sh.wake != nil {
		close(sh.wake)
		sh.wake = nil
	}
}

// take takes up to n jobs of queue and says how many it took. When there
// are none it waits up to wait for an enqueue, as echo_mq's long poll
// does (0: it does not wait).
func (s *stock) take(ctx context.Context, queue string, n int, wait time.Duration) int {
	var timeout <-chan time.Time
	for {
		got, wake := s.takeNow(queue, n, wait > 0)
		if got > 0 || wake == nil {
			return got
		}
		if timeout == nil {
			timer := time.NewTimer(wait)
			defer timer.Stop()
			timeout = timer.C
		}
		select {
		case <-wake:
		case <-timeout:
			return 0
		case <-ctx.Done():
			return 0
		}
	}
}

// takeNow takes up to n jobs of queue; when there are none and the caller
// will wait, it also returns the channel the next add closes.
func (s *stock) takeNow(queue string, n int, waiting bool) (int, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sh := s.shelf(queue)
	if got := min(n, sh.n); got > 0 {
		sh.n -= got
		return got, nil
	}
	if !waiting {
		return 0, nil
	}
	if sh.wake == nil {
		sh.wake = make(chan struct{})
	}
	return 0, sh.wake
}

// drop forgets queue, waking its waiting claims, and says how many jobs
// it held.
func (s *stock) drop(queue string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	sh, ok := s.queues[queue]
	if !ok {
		return 0
	}
	if sh.wake != nil {
		close(sh.wake)
	}
	delete(s.queues, queue)
	return sh.n
}
