// Package memstore is the embedded in-memory store the service runs on
// when no EMQ_REDIS_URL is set: a Redis-compatible server (miniredis) in
// the service's own process, on a loopback port, and the options a client
// of it needs.
//
// The store runs one command at a time, under one lock, and runs each
// script in a Lua interpreter of its own, so a command's answer can come
// late: after every command queued before it, and later still when the
// machine is busy. Its answer always comes (nothing is between the client
// and the store but the process itself), so a client of it sets no read or
// write deadline (Configure): a deadline there would not detect a store
// that is gone, it would only turn a command that ran into an error (a
// claim that leased jobs answered 503, its jobs stranded until their lease
// lapsed).
package memstore

import (
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// DefaultPoolTimeout is how long a client of the store waits for a free
// connection when every one is busy: the store's queue, not a network, is
// what it waits for, so it waits long, though within the service's 60 s
// write timeout.
const DefaultPoolTimeout = 30 * time.Second

// Store is a running embedded store.
type Store struct {
	mr   *miniredis.Miniredis
	done chan struct{}
}

// Start starts a store on a free loopback port whose key expiry follows
// the clock, every tick: miniredis expires keys only when told to, and the
// reaper's turn on a queue (SET PX) must end for the queue to be swept
// again. It ticks rather than using miniredis's ClockTTL, which walks every
// key on every command.
func Start(tick time.Duration) (*Store, error) {
	mr, err := miniredis.Run()
	if err != nil {
		return nil, err
	}
	s := &Store{mr: mr, done: make(chan struct{})}
	go s.runClock(tick)
	return s, nil
}

func (s *Store) runClock(tick time.Duration) {
	t := time.NewTicker(tick)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-s.done:
			return
		case now := <-t.C:
			s.mr.FastForward(now.Sub(last))
			last = now
		}
	}
}

// Addr returns the store's host:port.
func (s *Store) Addr() string { return s.mr.Addr() }

// Close stops the store's clock and the store; everything in it is lost.
func (s *Store) Close() {
	close(s.done)
	s.mr.Close()
}

// Configure sets on opts what a client of the store needs: no read or write
// deadline, and DefaultPoolTimeout unless opts sets a pool timeout.
func Configure(opts *redis.Options) {
	opts.ReadTimeout, opts.WriteTimeout = -1, -1 // go-redis: -1 is no deadline
	if opts.PoolTimeout == 0 {
		opts.PoolTimeout = DefaultPoolTimeout
	}
}
