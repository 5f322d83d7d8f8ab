package replication

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/rediserr"
	"github.com/echo-mq/echo_mq/internal/redistest"
	"github.com/echo-mq/echo_mq/lua"
)

func TestMain(m *testing.M) { os.Exit(redistest.Run(m)) }

// readScript is a script the tests' Config calls read-only, besides
// echo_mq's own (lua.ReadOnly).
const readScript = "return redis.call('GET', KEYS[1])"

// pair starts a master and one replica of it, and returns a client of the
// master with the hook installed (waiting for one replica for timeout).
func pair(t *testing.T, timeout time.Duration) (rdb *redis.Client, master, replica *redistest.Server) {
	t.Helper()
	master = redistest.StartServer(t)
	host, port, _ := strings.Cut(master.Addr, ":")
	replica = redistest.StartServer(t, "--replicaof", host, port)
	ctx := context.Background()
	check := redis.NewClient(&redis.Options{Addr: master.Addr})
	t.Cleanup(func() { _ = check.Close() })
	deadline := time.Now().Add(30 * time.Second)
	for {
		info, err := check.Info(ctx, "replication").Result()
		if err == nil && strings.Contains(info, "connected_slaves:1") && strings.Contains(info, "state=online") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replica did not come online: %q, %v", info, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	rdb = redis.NewClient(&redis.Options{Addr: master.Addr, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	Install(rdb, Config{Replicas: 1, Timeout: timeout, ReadOnlyScript: func(s string) bool { return s == readScript || lua.ReadOnly(s) }})
	return rdb, master, replica
}

func TestAnAnsweredWriteIsOnTheReplica(t *testing.T) {
	t.Parallel()
	rdb, _, replica := pair(t, 5*time.Second)
	ctx := context.Background()
	onReplica := redis.NewClient(&redis.Options{Addr: replica.Addr})
	defer onReplica.Close()
	for i := range 50 {
		key := "k" + strconv.Itoa(i)
		if err := rdb.Set(ctx, key, i, 0).Err(); err != nil {
			t.Fatalf("SET %s: %v", key, err)
		}
		// Answered: the replica has it now, not eventually.
		if got, err := onReplica.Get(ctx, key).Int(); err != nil || got != i {
			t.Fatalf("replica's %s = %d, %v right after the write was answered; want %d", key, got, err, i)
		}
	}
	cmds, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "p1", "a", 0)
		p.Get(ctx, "k1")
		p.Eval(ctx, "return redis.call('SET', KEYS[1], 'b')", []string{"p2"})
		return nil
	})
	if err != nil || len(cmds) != 3 {
		t.Fatalf("pipeline: %d commands, %v; want its 3, no error", len(cmds), err)
	}
	if got, _ := onReplica.MGet(ctx, "p1", "p2").Result(); fmt.Sprint(got) != "[a b]" {
		t.Fatalf("replica's p1, p2 = %v right after the pipeline was answered, want [a b]", got)
	}
}

func TestWritesTooFewReplicasHoldAreRefusedAndReadsAreNot(t *testing.T) {
	t.Parallel()
	rdb, master, replica := pair(t, 100*time.Millisecond)
	ctx := context.Background()
	plain := redis.NewClient(&redis.Options{Addr: master.Addr}) // no hook: 100 ms may be short on a busy machine
	defer plain.Close()
	if err := plain.Set(ctx, "before", "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	replica.Stop()

	err := rdb.Set(ctx, "k", "v", 0).Err()
	if !errors.Is(err, rediserr.ErrNotAcknowledged) || !rediserr.Unavailable(err) || rediserr.NeverRan(err) {
		t.Fatalf("SET with no replica: %v; want ErrNotAcknowledged, Unavailable and not NeverRan (it ran)", err)
	}
	if !strings.Contains(err.Error(), "0 of the 1 replicas") {
		t.Errorf("error %q does not say how many replicas had it", err)
	}
	if got, err := rdb.Get(ctx, "before").Result(); err != nil || got != "x" {
		t.Errorf("GET: %q, %v; a read is not waited for", got, err)
	}
	if got, err := rdb.Eval(ctx, readScript, []string{"before"}).Result(); err != nil || got != "x" {
		t.Errorf("a read-only script: %v, %v; want x, not waited for", got, err)
	}
	if err := rdb.Eval(ctx, "return redis.error_reply('EMQGONE no such job')", nil).Err(); err == nil || !strings.HasPrefix(err.Error(), "EMQGONE") {
		t.Errorf("a script's refusal became %v; it must stay the script's own error", err)
	}

	var get *redis.StringCmd
	var set *redis.StatusCmd
	_, _ = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		set = p.Set(ctx, "k2", "v", 0)
		get = p.Get(ctx, "before")
		return nil
	})
	if !errors.Is(set.Err(), rediserr.ErrNotAcknowledged) {
		t.Errorf("a pipeline's write: %v, want ErrNotAcknowledged", set.Err())
	}
	if get.Val() != "x" || get.Err() != nil {
		t.Errorf("a pipeline's read: %q, %v; want x", get.Val(), get.Err())
	}

	// A transaction answers no request of the service's: not waited for.
	if _, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.LPush(ctx, "log", "e")
		return nil
	}); err != nil {
		t.Errorf("MULTI/EXEC: %v, want it run as it is", err)
	}
}

// TestOneWaitCoversAnAutoPipelinedBatch writes from many goroutines
// through go-redis's auto-pipeliner: every write is answered, each is on
// the replica when answered, and Redis ran at most one WAIT per write
// (one per batch).
func TestOneWaitCoversAnAutoPipelinedBatch(t *testing.T) {
	t.Parallel()
	rdb, master, replica := pair(t, 5*time.Second)
	ctx := context.Background()
	pipe, err := rdb.AutoPipeline()
	if err != nil {
		t.Fatal(err)
	}
	onMaster := redis.NewClient(&redis.Options{Addr: master.Addr})
	defer onMaster.Close()
	onReplica := redis.NewClient(&redis.Options{Addr: replica.Addr})
	defer onReplica.Close()
	if err := onMaster.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	const writers, each = 16, 50
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				key := fmt.Sprintf("w%d:%d", w, i)
				if err := pipe.Set(ctx, key, i, 0).Err(); err != nil {
					errs <- fmt.Errorf("SET %s: %w", key, err)
					return
				}
				if got, err := onReplica.Get(ctx, key).Int(); err != nil || got != i {
					errs <- fmt.Errorf("replica's %s = %d, %v once answered", key, got, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	stats, err := onMaster.Info(ctx, "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	waits := callsOf(stats, "wait")
	if waits < 1 || waits > writers*each {
		t.Errorf("Redis ran %d WAITs for %d writes, want 1 to %d", waits, writers*each, writers*each)
	}
	t.Logf("%d writes from %d goroutines: %d WAITs", writers*each, writers, waits)
}

// callsOf reads cmdstat_<name>'s calls from INFO commandstats.
func callsOf(stats, name string) int {
	for _, line := range strings.Split(stats, "\n") {
		if rest, ok := strings.CutPrefix(line, "cmdstat_"+name+":calls="); ok {
			n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
			return n
		}
	}
	return 0
}

// TestReadOnlyCommandsDoNotWrite checks the hook's list of reads against
// what Redis says of each command and subcommand: none is flagged write.
func TestReadOnlyCommandsDoNotWrite(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	ctx := context.Background()
	names := make([]any, 0, len(readOnlyCommands))
	for name := range readOnlyCommands {
		names = append(names, name)
	}
	reply, err := rdb.Do(ctx, append([]any{"command", "info"}, names...)...).Slice()
	if err != nil {
		t.Fatal(err)
	}
	for i, entry := range reply {
		doc, ok := entry.([]any)
		if !ok {
			t.Errorf("%s: Redis has no such command", names[i])
			continue
		}
		for _, bad := range writeFlagged(doc) {
			t.Errorf("%s is on the list of reads, but Redis flags %s write", names[i], bad)
		}
	}
}

// writeFlagged are the names of the command doc (a COMMAND INFO entry)
// and of its subcommands that Redis flags write.
func writeFlagged(doc []any) []string {
	var out []string
	flags, _ := doc[2].([]any)
	if slices.ContainsFunc(flags, func(f any) bool { return f == "write" }) {
		out = append(out, fmt.Sprint(doc[0]))
	}
	if len(doc) > 9 {
		subs, _ := doc[9].([]any)
		for _, sub := range subs {
			if s, ok := sub.([]any); ok {
				out = append(out, writeFlagged(s)...)
			}
		}
	}
	return out
}

// BenchmarkWrite is one client's SETs, one at a time, to a master with a
// replica: what waiting for the replica adds to a write's round trip (on
// loopback, where the replica is a few µs away; across a network, add its
// round trip).
//
//	go test -run '^$' -bench Write -count 5 ./internal/replication
func BenchmarkWrite(b *testing.B) {
	master := redistest.StartServer(b)
	host, port, _ := strings.Cut(master.Addr, ":")
	redistest.StartServer(b, "--replicaof", host, port)
	ctx := context.Background()
	for _, acked := range []bool{false, true} {
		b.Run(fmt.Sprintf("acked=%v", acked), func(b *testing.B) {
			rdb := redis.NewClient(&redis.Options{Addr: master.Addr, MaxRetries: -1})
			defer rdb.Close()
			if acked {
				Install(rdb, Config{Replicas: 1, Timeout: 5 * time.Second})
			}
			for b.Loop() {
				if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
