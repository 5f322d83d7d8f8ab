package replication

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/rediserr"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

// TestAWriteThatAnswersNilIsWaitedFor: a write whose reply is nil (a
// script that writes and returns nil, SET ... GET of a new key) has
// redis.Nil for its error, which is no refusal: without replicas it is
// not acknowledged.
func TestAWriteThatAnswersNilIsWaitedFor(t *testing.T) {
	t.Parallel()
	rdb, master, replica := pair(t, 100*time.Millisecond)
	ctx := context.Background()
	replica.Stop()
	onMaster := redis.NewClient(&redis.Options{Addr: master.Addr})
	defer onMaster.Close()

	err := rdb.Eval(ctx, "redis.call('SET', KEYS[1], 'x') return nil", []string{"nil1"}).Err()
	written, _ := onMaster.Exists(ctx, "nil1").Result()
	if !errors.Is(err, rediserr.ErrNotAcknowledged) {
		t.Errorf("a script that wrote (on the master: %d) and returned nil: %v; want ErrNotAcknowledged", written, err)
	}
	err = rdb.Do(ctx, "set", "nil2", "v", "get").Err()
	written, _ = onMaster.Exists(ctx, "nil2").Result()
	if !errors.Is(err, rediserr.ErrNotAcknowledged) {
		t.Errorf("SET ... GET that wrote (on the master: %d): %v; want ErrNotAcknowledged", written, err)
	}
}

// TestWatchStaysOnTheTransactionsConnection: a transaction (Watch)
// inherits the client's hooks; WATCH is the connection's own state, so
// the hook leaves it on the transaction's connection, and EXEC fails when
// the watched key changed.
func TestWatchStaysOnTheTransactionsConnection(t *testing.T) {
	t.Parallel()
	rdb, master, _ := pair(t, 5*time.Second)
	ctx := context.Background()
	other := redis.NewClient(&redis.Options{Addr: master.Addr})
	defer other.Close()
	err := rdb.Watch(ctx, func(tx *redis.Tx) error {
		if err := other.Set(ctx, "watched", "changed", 0).Err(); err != nil {
			return err
		}
		_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, "watched", "mine", 0)
			return nil
		})
		return err
	}, "watched")
	got, _ := other.Get(ctx, "watched").Result()
	if !errors.Is(err, redis.TxFailedErr) {
		t.Errorf("WATCH, another client changes the key, EXEC: %v (the key is now %q); want redis.TxFailedErr", err, got)
	}
}

// TestAnUnacknowledgedChunkLeavesTheNextChunksSent: the auto-pipeliner
// cuts a batch into chunks of MaxBatchBytes (128 KiB by default) and, once
// a chunk fails with an error that is not a Redis reply, fails every later
// chunk with it unsent. The hook's error is marked a Redis reply, so each
// chunk is sent, and each write that answers "not acknowledged" did reach
// the master.
func TestAnUnacknowledgedChunkLeavesTheNextChunksSent(t *testing.T) {
	t.Parallel()
	server := redistest.StartServer(t) // no replica: every WAIT 1 times out
	rdb := redis.NewClient(&redis.Options{Addr: server.Addr, MaxRetries: -1})
	defer rdb.Close()
	Install(rdb, Config{Replicas: 1, Timeout: 300 * time.Millisecond})
	pipe, err := rdb.AutoPipeline()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	big := strings.Repeat("v", 150*1024)

	// One lone write holds the pipeliner for the WAIT; the others pile up
	// meanwhile and go as one batch, one 150 KiB chunk each.
	first := make(chan struct{})
	go func() { close(first); _ = pipe.Set(ctx, "lone", "x", 0).Err() }()
	<-first
	time.Sleep(50 * time.Millisecond)
	const writers = 6
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = pipe.Set(ctx, fmt.Sprint("big", i), big, 0).Err()
		}()
	}
	wg.Wait()
	check := redis.NewClient(&redis.Options{Addr: server.Addr})
	defer check.Close()
	unsent := 0
	for i, err := range errs {
		n, _ := check.Exists(ctx, fmt.Sprint("big", i)).Result()
		if !errors.Is(err, rediserr.ErrNotAcknowledged) {
			t.Fatalf("big%d: %v, want ErrNotAcknowledged (no replica)", i, err)
		}
		if n == 0 {
			unsent++
		}
	}
	if unsent > 0 {
		t.Errorf("%d of %d writes answered ErrNotAcknowledged (\"reached the master\") were never sent to it", unsent, writers)
	}
}
