package events

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

func TestMain(m *testing.M) { os.Exit(redistest.Run(m)) }

func TestIDs(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, before string }{
		{"5-3", "5-2"}, {"5-0", "4-18446744073709551615"}, {"0-0", "0-0"},
	} {
		id, ok := ParseID(c.in)
		if !ok || id.String() != c.in || id.Before().String() != c.before {
			t.Errorf("%s: parsed %v %v, before %s, want %s", c.in, id, ok, id.Before(), c.before)
		}
		if c.in != "0-0" && id.Before().Compare(id) != -1 {
			t.Errorf("%s comes before what is before it", c.in)
		}
	}
	for _, bad := range []string{"", "5", "5-", "-3", "a-1", "1-b", "1-2-3"} {
		if _, ok := ParseID(bad); ok {
			t.Errorf("ParseID(%q) took it", bad)
		}
	}
	if at, ok := (Entry{ID: "1733000000123-4"}).At(); !ok || at.UnixMilli() != 1733000000123 {
		t.Errorf("At = %v %v", at, ok)
	}
	if _, ok := (Entry{ID: "18446744073709551615-0"}).At(); ok {
		t.Error("an id past int64 ms has no time")
	}
}

// TestMergedReadsInOrder: the merged reading starts after each active
// queue's last entry, gives the entries of every queue in id order, takes
// in a queue that joins from the opening on, and lets one that leaves go.
func TestMergedReadsInOrder(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Client(t)
	prefix := "emqev-" + redistest.Queue(t)
	reg := keyspace.NewActivity(rdb, prefix)
	// Entries of two streams made in one ms have the same id, and come
	// ordered by queue: a ms apart, they come in the order made.
	add := func(queue, kind string) {
		t.Helper()
		time.Sleep(2 * time.Millisecond)
		if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: keyspace.NewQueue(prefix, queue).Events(), Values: []string{"kind", kind}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []string{"b", "a"} {
		if err := reg.Touch(ctx, q); err != nil {
			t.Fatal(err)
		}
		add(q, "before") // older than the opening: never read
	}
	log := NewLog(rdb, prefix)
	m, err := OpenMerged(ctx, log, 10)
	if err != nil {
		t.Fatal(err)
	}
	add("b", "b1")
	add("a", "a1")
	add("b", "b2")
	got := read(t, m)
	if want := []string{"b:b1", "a:a1", "b:b2"}; !slices.Equal(got, want) {
		t.Fatalf("read %v, want %v", got, want)
	}
	add("c", "c1") // before c is active, after the opening: read once it joins
	if err := reg.Touch(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if err := reg.Drop(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	add("a", "a2")
	if err := m.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := read(t, m), []string{"c:c1"}; !slices.Equal(got, want) {
		t.Fatalf("after the refresh read %v, want %v", got, want)
	}
}

func read(t *testing.T, m *Merged) []string {
	t.Helper()
	entries, _, err := m.Read(context.Background(), 100)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Queue+":"+e.Field("kind"))
	}
	return out
}

// xadd adds an entry with the given id ms to queue's stream.
func xadd(tb testing.TB, rdb redis.UniversalClient, prefix, queue string, ms int64, kind string) {
	tb.Helper()
	err := rdb.XAdd(context.Background(), &redis.XAddArgs{Stream: keyspace.NewQueue(prefix, queue).Events(),
		ID: ID{MS: uint64(ms)}.String(), Values: []string{"kind", kind}}).Err()
	if err != nil {
		tb.Fatal(err)
	}
}

// TestMergedJoinFrom: a queue that joins is read from the opening when the
// index was not read since, else from Slack before its last read: the
// entries it made before its activity was written are not missed, and
// what came before it could be active is not read.
func TestMergedJoinFrom(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Client(t)
	prefix := "emqev-" + redistest.Queue(t)
	act := keyspace.NewActivity(rdb, prefix)
	m, err := OpenMerged(ctx, NewLog(rdb, prefix), 10)
	if err != nil {
		t.Fatal(err)
	}
	// As if the reading had opened 5 minutes ago.
	const back = 5 * time.Minute
	m.openMS -= back.Milliseconds()
	m.openedAt = m.openedAt.Add(-back)
	m.opened = ID{MS: uint64(m.openMS)}.Before()
	m.checked = m.openMS
	now := m.serverNow()
	xadd(t, rdb, prefix, "early", m.openMS-1000, "before-open")
	xadd(t, rdb, prefix, "early", m.openMS+1000, "after-open") // long before its touch
	if err := act.Touch(ctx, "early"); err != nil {
		t.Fatal(err)
	}
	if err := m.Refresh(ctx); err != nil { // the first read since the opening
		t.Fatal(err)
	}
	if got, want := read(t, m), []string{"early:after-open"}; !slices.Equal(got, want) {
		t.Fatalf("read %v, want %v", got, want)
	}
	xadd(t, rdb, prefix, "late", now-Slack.Milliseconds()-60_000, "inactive") // it was not active then
	xadd(t, rdb, prefix, "late", now-Slack.Milliseconds()/2, "first")         // its touch lands later
	if err := act.Touch(ctx, "late"); err != nil {
		t.Fatal(err)
	}
	if err := m.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := read(t, m), []string{"late:first"}; !slices.Equal(got, want) {
		t.Fatalf("read %v, want %v", got, want)
	}
}

// TestMergedCapsTheQueues: with more queues active than the limit, the
// most recently active are merged, and Cut says so.
func TestMergedCapsTheQueues(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Client(t)
	prefix := "emqev-" + redistest.Queue(t)
	act := keyspace.NewActivity(rdb, prefix)
	now := act.Now(ctx)
	for i, q := range []string{"a", "b", "c", "d"} {
		rdb.ZAdd(ctx, keyspace.ActiveKey(prefix), redis.Z{Score: float64(now - 4000 + int64(i)*1000), Member: q})
	}
	m, err := OpenMerged(ctx, NewLog(rdb, prefix), 2)
	if err != nil {
		t.Fatal(err)
	}
	if !m.Cut() || !slices.Equal(m.names, []string{"c", "d"}) {
		t.Fatalf("merged %q (cut %v), want [c d], cut", m.names, m.Cut())
	}
	if err := act.Touch(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := m.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if !m.Cut() || !slices.Equal(m.names, []string{"a", "d"}) {
		t.Fatalf("merged %q (cut %v) after a's traffic, want [a d], cut", m.names, m.Cut())
	}
}
