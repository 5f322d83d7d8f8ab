package lua

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

// gcLibrary is a test's own Functions library, which Redis runs in the
// same Lua state as echo_mq's: emqtest_heap collects the garbage and
// answers the bytes the state holds.
const gcLibrary = `#!lua name=emqtest_gc
redis.register_function{function_name = 'emqtest_heap', flags = { 'no-writes' }, callback = function()
  for _ = 1, 8 do -- each collection halves the table of strings at most
    collectgarbage('collect')
  end
  return math.floor(collectgarbage('count') * 1024)
end}`

// functionsHeap is the Lua heap of rdb's Functions, its garbage collected.
func functionsHeap(t *testing.T, rdb *redis.Client) int64 {
	t.Helper()
	n, err := rdb.FCall(context.Background(), "emqtest_heap", nil).Int64()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// The library's memory of a queue's history is bounded: what it keeps of
// the queues written lately goes within seconds, and what it holds of a
// queue (its counts not written yet) goes when the queue is obliterated,
// with the counts, which a read no longer answers. (Within 32 KiB: the
// heap keeps some 9 KiB more after the first thousands of queues, as
// much after 6,000 as after 2,000; and Lua's table of strings, which a
// collection halves only while it is a quarter full, may stay one size
// larger than before them, 16 KiB more, as one more name anywhere in the
// library tips it. A leak of the 2,000 queues' names or times would be
// well over 100 KiB.)
func TestTheHistoryFreesTheLibrarysMemory(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	if err := rdb.FunctionLoad(ctx, gcLibrary).Err(); err != nil {
		t.Fatal(err)
	}
	run := NewRunner(rdb)
	run.Load(ctx)
	const queues = 2000
	queue := func(round string, i int) keyspace.Queue {
		return keyspace.NewQueue("emq", fmt.Sprintf("%s%04d", round, i))
	}
	enqueue := func(q keyspace.Queue, id string) {
		t.Helper()
		if err := run.Run(ctx, EnqueueArgs{Jobs: []NewJob{{ID: id, Payload: "1"}}}.Call(q)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// turn lets the library's memory of recent writes turn twice: it turns
	// at a write, every 2 s at most.
	turns := 0
	turn := func() {
		for range 2 {
			time.Sleep(2100 * time.Millisecond)
			enqueue(queue("turn", 0), fmt.Sprint(turns))
			turns++
		}
	}
	enqueue(queue("turn", 0), "first")
	base := functionsHeap(t, rdb)

	// One write each: the library remembers when and where, for seconds.
	for i := range queues {
		enqueue(queue("once", i), "a")
	}
	written := functionsHeap(t, rdb)
	turn()
	aged := functionsHeap(t, rdb)
	t.Logf("the Lua heap of the Functions: %d bytes; %d after %d queues' first writes; %d seconds later", base, written, queues, aged)
	if written-base < queues*50 || aged-base > 32<<10 {
		t.Errorf("%d queues written once: the Lua heap grew by %d bytes, and by %d seconds later; want it back within 32 KiB",
			queues, written-base, aged-base)
	}

	// A count held unwritten each: the library keeps it until obliterated.
	for i := range queues {
		q := queue("held", i)
		enqueue(q, "a")
		enqueue(q, "b") // within the second: held
	}
	held := functionsHeap(t, rdb)
	reply, err := run.Run(ctx, StatsArgs{Minutes: 1}.Call(queue("held", 0))).Slice()
	if err != nil || fmt.Sprint(reply[3]) == "[]" {
		t.Fatalf("a read of a queue with a count held: %v (%v), want the count", reply, err)
	}
	for i := range queues {
		if err := run.Run(ctx, ObliterateArgs{Limit: 100}.Call(queue("held", i))).Err(); err != nil {
			t.Fatal(err)
		}
	}
	reply, err = run.Run(ctx, StatsArgs{Minutes: 1}.Call(queue("held", 0))).Slice()
	if err != nil || fmt.Sprint(reply[3]) != "[]" {
		t.Errorf("a read of an obliterated queue: %v (%v), want no counts", reply, err)
	}
	obliterated := functionsHeap(t, rdb)
	turn()
	freed := functionsHeap(t, rdb)
	t.Logf("the Lua heap of the Functions: %d bytes with a count held for %d queues; %d once they are obliterated; %d seconds later",
		held, queues, obliterated, freed)
	if held-base < queues*100 || freed-base > 32<<10 {
		t.Errorf("%d queues with counts held: the Lua heap grew by %d bytes, and by %d once they were obliterated; want it back within 32 KiB",
			queues, held-base, freed-base)
	}
}
