package keyspace

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/redistest"
)

// newActivity is an Activity over a redis-server of the test's own.
func newActivity(tb testing.TB) (*Activity, redis.UniversalClient) {
	tb.Helper()
	srv := redistest.StartServer(tb)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	tb.Cleanup(func() { rdb.Close() })
	return NewActivity(rdb, "emqt"), rdb
}

// age makes every queue this process wrote look written d ago, and its
// memory last pruned then.
func (a *Activity) age(d time.Duration) {
	a.touched.Range(func(q, at any) bool {
		a.touched.Store(q, at.(int64)-d.Milliseconds())
		return true
	})
	a.pruned.Add(-d.Milliseconds())
}

func (a *Activity) remembered() int {
	n := 0
	a.touched.Range(func(any, any) bool { n++; return true })
	return n
}

// TestTouchIsThrottled: a queue touched again within TouchEvery is not
// written again (its entry, removed behind the Activity's back, stays
// gone); past it, it is; a name no queue could have is never written.
func TestTouchIsThrottled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, rdb := newActivity(t)
	for _, q := range []string{"q", "q", "bad{name}", ""} {
		if err := a.Touch(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if got := rdb.ZRange(ctx, ActiveKey("emqt"), 0, -1).Val(); !slices.Equal(got, []string{"q"}) {
		t.Fatalf("the index holds %q, want [q]", got)
	}
	rdb.ZRem(ctx, ActiveKey("emqt"), "q")
	if err := a.Touch(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	if n := rdb.ZCard(ctx, ActiveKey("emqt")).Val(); n != 0 {
		t.Fatalf("a touch within TouchEvery wrote the index again (%d entries)", n)
	}
	a.age(TouchEvery)
	if err := a.Touch(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	if n := rdb.ZCard(ctx, ActiveKey("emqt")).Val(); n != 1 {
		t.Fatalf("a touch past TouchEvery did not write the index (%d entries)", n)
	}
}

// TestTouchMemoryIsBounded: the queues a process remembers are those it
// wrote within TouchEvery, not every queue it ever saw.
func TestTouchMemoryIsBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, _ := newActivity(t)
	for i := range 200 {
		if err := a.Touch(ctx, fmt.Sprintf("q%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := a.remembered(); n != 200 {
		t.Fatalf("remembers %d queues, want 200", n)
	}
	a.age(TouchEvery)
	if err := a.Touch(ctx, "new"); err != nil {
		t.Fatal(err)
	}
	if n := a.remembered(); n != 1 {
		t.Fatalf("remembers %d queues after TouchEvery, want only the one touched since", n)
	}
}

// TestSinceAndDrop: Since answers the queues active since a time, the most
// recent first, at most limit and whether there were more; Drop takes a
// queue out at once, and its next touch writes it again.
func TestSinceAndDrop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, rdb := newActivity(t)
	now := a.Now(ctx)
	for i, q := range []string{"old", "a", "b", "c"} {
		score := now - 10_000 + int64(i)*1000 // old at now-10 s, c at now-7 s
		rdb.ZAdd(ctx, ActiveKey("emqt"), redis.Z{Score: float64(score), Member: q})
	}
	got, more, err := a.Since(ctx, now-9_500, 2)
	if err != nil || !slices.Equal(got, []string{"c", "b"}) || !more {
		t.Fatalf("Since = %q %v %v, want [c b] and more", got, more, err)
	}
	if got, more, _ = a.Since(ctx, now-9_500, 10); !slices.Equal(got, []string{"c", "b", "a"}) || more {
		t.Fatalf("Since = %q %v, want [c b a], no more", got, more)
	}
	if err := a.Touch(ctx, "d"); err != nil {
		t.Fatal(err)
	}
	if got, _, _ = a.Since(ctx, now-9_500, 1); !slices.Equal(got, []string{"d"}) {
		t.Fatalf("Since = %q after touching d, want [d] first", got)
	}
	if err := a.Drop(ctx, "d"); err != nil {
		t.Fatal(err)
	}
	if got, _, _ = a.Since(ctx, now-9_500, 10); slices.Contains(got, "d") {
		t.Fatalf("Since = %q after Drop(d)", got)
	}
	if err := a.Touch(ctx, "d"); err != nil { // at once: Drop forgot it
		t.Fatal(err)
	}
	if got, _, _ = a.Since(ctx, now-9_500, 1); !slices.Equal(got, []string{"d"}) {
		t.Fatalf("Since = %q after touching d again, want [d]", got)
	}
}

// TestIndexIsTrimmed: a read trims the entries older than ActiveWindow, at
// most once a minute per process, so that the index follows the active
// queues.
func TestIndexIsTrimmed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, rdb := newActivity(t)
	key := ActiveKey("emqt")
	now := a.Now(ctx)
	stale := now - ActiveWindow.Milliseconds() - 60_000
	rdb.ZAdd(ctx, key, redis.Z{Score: float64(stale), Member: "stale"},
		redis.Z{Score: float64(now - 1000), Member: "recent"})
	got, _, err := a.Recent(ctx, 10)
	if err != nil || !slices.Equal(got, []string{"recent"}) {
		t.Fatalf("Recent = %q %v, want [recent]", got, err)
	}
	if err := rdb.ZScore(ctx, key, "stale").Err(); err != redis.Nil {
		t.Fatalf("the stale entry is still in the index after a read (%v)", err)
	}
	rdb.ZAdd(ctx, key, redis.Z{Score: float64(stale), Member: "stale2"})
	if _, _, err := a.Since(ctx, 0, 10); err != nil {
		t.Fatal(err)
	}
	if n := rdb.ZCard(ctx, key).Val(); n != 2 {
		t.Errorf("the index has %d entries, want 2: one trim a minute", n)
	}
	a.trimmed.Add(-trimEvery.Milliseconds())
	if _, _, err := a.Since(ctx, 0, 10); err != nil {
		t.Fatal(err)
	}
	if got := rdb.ZRange(ctx, key, 0, -1).Val(); !slices.Equal(got, []string{"recent"}) {
		t.Errorf("the index holds %q a minute later, want [recent]", got)
	}
}

// TestScoresAreTheServersClock: a touch scores the queue with the Redis
// server's clock (within a round trip and a clock tick), however this
// process's clock is off.
func TestScoresAreTheServersClock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, rdb := newActivity(t)
	if err := a.Touch(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	server := rdb.Time(ctx).Val().UnixMilli()
	score := int64(rdb.ZScore(ctx, ActiveKey("emqt"), "q").Val())
	if score > server+5 || score < server-1000 {
		t.Errorf("score %d, server clock %d", score, server)
	}
	a.offset.Store(-3_600_000) // as if this process's clock were an hour ahead
	if now := a.Now(ctx); now > server-3_000_000 {
		t.Fatalf("Now = %d ignores the offset", now)
	}
	a.measured.Store(0) // stale: read again at the next use
	if now := a.Now(ctx); now < server || now > server+5000 {
		t.Errorf("Now = %d after reading the server's clock again, want about %d", now, server)
	}
}
