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

// A write whose reply is nil (a script that writes and returns nil, SET ...
// GET of a new key) has Err() == redis.Nil, which fail takes for a refusal:
// answered as a success although WAIT saw no replica.
func TestReviewNilReplyWriteEscapesWait(t *testing.T) {
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

// Tx (Watch) and Conn inherit the client's hooks, but the hook sends a
// single write through Install's client: on another connection. WATCH is
// taken for a write, so it watches on a connection the transaction never
// uses, and EXEC succeeds although the key changed.
func TestReviewWatchIsSentOnAnotherConnection(t *testing.T) {
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

// A write on a Conn after SELECT runs on a pooled connection of database 0.
func TestReviewConnWriteLeavesItsConnection(t *testing.T) {
	rdb, master, _ := pair(t, 5*time.Second)
	ctx := context.Background()
	conn := rdb.Conn()
	defer conn.Close()
	if err := conn.Select(ctx, 3).Err(); err != nil {
		t.Fatal(err)
	}
	if err := conn.Set(ctx, "where", "db3", 0).Err(); err != nil {
		t.Fatal(err)
	}
	db3 := redis.NewClient(&redis.Options{Addr: master.Addr, DB: 3})
	defer db3.Close()
	db0 := redis.NewClient(&redis.Options{Addr: master.Addr})
	defer db0.Close()
	in3, _ := db3.Exists(ctx, "where").Result()
	in0, _ := db0.Exists(ctx, "where").Result()
	if in3 != 1 || in0 != 0 {
		t.Errorf("SELECT 3 then SET on a Conn: in db3 %d, in db0 %d; want 1, 0", in3, in0)
	}
}

// The auto-pipeliner cuts a batch into chunks of MaxBatchBytes (128 KiB by
// default) and, once a chunk fails with an error that is not a Redis reply,
// fails every later chunk with it unsent (dispatchSequential).
// ErrNotAcknowledged is such an error, so writes that never ran are
// answered "reached the master but not enough replicas".
func TestReviewUnsentChunksAnsweredNotAcknowledged(t *testing.T) {
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
