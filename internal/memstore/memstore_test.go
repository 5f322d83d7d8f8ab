package memstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/memstore"
)

func start(tb testing.TB, tick time.Duration) *memstore.Store {
	tb.Helper()
	s, err := memstore.Start(tick)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Close)
	return s
}

func client(tb testing.TB, opts *redis.Options) *redis.Client {
	tb.Helper()
	c := redis.NewClient(opts)
	tb.Cleanup(func() { c.Close() })
	return c
}

// TestClientWaitsForABusyStore: a command that waits behind others (here,
// behind the store's lock, held longer than go-redis's default read
// timeout) is answered, not timed out, on a client Configure set up; a
// client with go-redis's defaults times out on the same store, which is
// what made a busy machine's service answer 503 for commands that ran.
func TestClientWaitsForABusyStore(t *testing.T) {
	t.Parallel()
	s := start(t, time.Second)
	configured := &redis.Options{Addr: s.Addr(), MaxRetries: -1}
	memstore.Configure(configured)
	plain := &redis.Options{Addr: s.Addr(), MaxRetries: -1}
	clients := map[string]*redis.Client{"configured": client(t, configured), "default": client(t, plain)}
	ctx := context.Background()
	for name, c := range clients {
		if err := c.Ping(ctx).Err(); err != nil { // connected before the store is busy
			t.Fatalf("%s: %v", name, err)
		}
	}
	hold := clients["default"].Options().ReadTimeout + time.Second
	errs := map[string]chan error{}
	s.Lock() // as a long script does
	for name, c := range clients {
		answered := make(chan error, 1)
		errs[name] = answered
		go func() { answered <- c.Ping(ctx).Err() }()
	}
	time.Sleep(hold)
	s.Unlock()
	if err := <-errs["configured"]; err != nil {
		t.Errorf("a configured client's PING behind a store busy for %v: %v, want PONG", hold, err)
	}
	if err := <-errs["default"]; err == nil {
		t.Errorf("a default client's PING behind a store busy for %v answered; want it timed out (the test measures nothing)", hold)
	}
}

// TestConfigureKeepsAPoolTimeout: a pool timeout the caller chose stays.
func TestConfigureKeepsAPoolTimeout(t *testing.T) {
	opts := &redis.Options{PoolTimeout: time.Minute}
	memstore.Configure(opts)
	if opts.PoolTimeout != time.Minute {
		t.Errorf("PoolTimeout = %v, want the caller's 1m", opts.PoolTimeout)
	}
	opts = &redis.Options{}
	memstore.Configure(opts)
	if opts.PoolTimeout != memstore.DefaultPoolTimeout || opts.ReadTimeout != -1 || opts.WriteTimeout != -1 {
		t.Errorf("Configure set pool %v, read %v, write %v; want %v, -1, -1",
			opts.PoolTimeout, opts.ReadTimeout, opts.WriteTimeout, memstore.DefaultPoolTimeout)
	}
}

// TestStoreExpiresKeysAsTheClockRuns: a key set with a TTL is gone after
// its TTL and a tick, with no command telling the store the time.
func TestStoreExpiresKeysAsTheClockRuns(t *testing.T) {
	t.Parallel()
	s := start(t, 20*time.Millisecond)
	c := client(t, &redis.Options{Addr: s.Addr()})
	ctx := context.Background()
	if err := c.Set(ctx, "turn", 1, 100*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for c.Exists(ctx, "turn").Val() == 1 {
		if time.Now().After(deadline) {
			t.Fatal("a key with a 100 ms TTL still exists after 10 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
