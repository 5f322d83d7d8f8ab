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

// TestMergedReadsInOrder: the merged reading starts after each queue's
// last entry, gives the entries of every queue in id order, takes in a
// queue that joins from the opening on, and lets one that leaves go.
func TestMergedReadsInOrder(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Client(t)
	prefix := "emqev-" + redistest.Queue(t)
	reg := keyspace.NewRegistry(rdb, prefix)
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
		if err := reg.Remember(ctx, q, true); err != nil {
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
	add("c", "c1") // before c joins the registry, after the opening: read once it joins
	if err := reg.Remember(ctx, "c", true); err != nil {
		t.Fatal(err)
	}
	if err := reg.Forget(ctx, "a"); err != nil {
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
