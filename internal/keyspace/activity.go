package keyspace

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Timing of the activity index.
const (
	// TouchEvery is how often one process writes a queue's activity at
	// most: a queue's score may be this much older than its last change.
	TouchEvery = 5 * time.Second
	// ActiveWindow is how long a queue stays in the index after its last
	// activity; older entries are trimmed.
	ActiveWindow = time.Hour
	// trimEvery is how often one process trims the index at most.
	trimEvery = time.Minute
	// clockEvery is how often one process reads the Redis server's clock
	// to correct its own.
	clockEvery = time.Minute
)

// ActiveKey is the key of the activity index: a ZSET of queue names,
// scored by the time of each one's last activity (ms, the Redis server's
// clock as the services estimate it). It is in no queue's slot, so it is
// written outside the scripts.
func ActiveKey(prefix string) string { return prefix + ":active" }

// Activity is the index of the queues with recent traffic, so that what
// serves every queue at once (the merged event stream, the metrics' depth)
// costs what the active queues cost, not what every known queue does.
//
// A score is the service's clock corrected by the Redis server's (TIME,
// read at most once a clockEvery): the readers compare scores with the
// stream ids, which are the server's time, and services on several hosts
// would otherwise each score with a clock of their own.
type Activity struct {
	rdb     redis.UniversalClient
	key     string
	touched sync.Map // queue -> local ms of this process's last write of it

	pruned    atomic.Int64 // local ms of the last pruning of touched
	trimmed   atomic.Int64 // local ms of the last trim of the index
	offset    atomic.Int64 // the server's clock minus this process's, ms
	measured  atomic.Int64 // local ms the offset was read; 0: never
	measuring sync.Mutex
}

// NewActivity returns the activity index of the queues under prefix.
func NewActivity(rdb redis.UniversalClient, prefix string) *Activity {
	return &Activity{rdb: rdb, key: ActiveKey(prefix)}
}

// Touch records that queue has traffic now. One process writes a queue at
// most once a TouchEvery: otherwise Touch is an in-memory lookup. A name no
// queue could have is ignored.
func (a *Activity) Touch(ctx context.Context, queue string) error {
	local := time.Now().UnixMilli()
	if last, ok := a.touched.Load(queue); ok && local-last.(int64) < TouchEvery.Milliseconds() {
		return nil
	}
	if !ValidQueueName(queue) {
		return nil
	}
	a.prune(local)
	// GT: a replica whose clock is a little behind never moves a score back.
	err := a.rdb.ZAddGT(ctx, a.key, redis.Z{Score: float64(a.now(ctx, local)), Member: queue}).Err()
	if err == nil {
		a.touched.Store(queue, local)
	}
	return err
}

// Drop takes queue out of the index (its queue is obliterated or
// forgotten), and out of this process's memory of it, so that its next
// traffic is written at once.
func (a *Activity) Drop(ctx context.Context, queue string) error {
	a.touched.Delete(queue)
	return a.rdb.ZRem(ctx, a.key, queue).Err()
}

// Since returns the queues active since ms (the server's clock), most
// recently active first, at most limit of them, and whether more were.
// It trims the entries older than ActiveWindow first, at most once a
// trimEvery per process.
func (a *Activity) Since(ctx context.Context, ms int64, limit int) ([]string, bool, error) {
	local := time.Now().UnixMilli()
	p := a.rdb.Pipeline()
	if last := a.trimmed.Load(); local-last >= trimEvery.Milliseconds() && a.trimmed.CompareAndSwap(last, local) {
		old := a.now(ctx, local) - ActiveWindow.Milliseconds()
		p.ZRemRangeByScore(ctx, a.key, "-inf", "("+strconv.FormatInt(old, 10))
	}
	read := p.ZRevRangeByScore(ctx, a.key, &redis.ZRangeBy{Min: strconv.FormatInt(ms, 10), Max: "+inf", Count: int64(limit) + 1})
	if _, err := p.Exec(ctx); err != nil {
		return nil, false, err
	}
	names := read.Val()
	valid := names[:0]
	for _, q := range names {
		if ValidQueueName(q) {
			valid = append(valid, q)
		}
	}
	if len(valid) > limit {
		return valid[:limit], true, nil
	}
	return valid, false, nil
}

// Recent returns the queues active within ActiveWindow, most recently
// active first, at most limit of them, and whether more were.
func (a *Activity) Recent(ctx context.Context, limit int) ([]string, bool, error) {
	return a.Since(ctx, a.Now(ctx)-ActiveWindow.Milliseconds(), limit)
}

// Now is the Redis server's clock as this process estimates it, in ms.
func (a *Activity) Now(ctx context.Context) int64 {
	return a.now(ctx, time.Now().UnixMilli())
}

// now is local corrected by the offset to the server's clock, read again
// when it is older than clockEvery. A failed read keeps the last offset
// (none at first: the local clock).
func (a *Activity) now(ctx context.Context, local int64) int64 {
	if local-a.measured.Load() >= clockEvery.Milliseconds() {
		a.measure(ctx)
	}
	return local + a.offset.Load()
}

// measure reads the server's clock, one caller at a time, and keeps its
// offset from this process's, taken at the middle of the round trip.
func (a *Activity) measure(ctx context.Context) {
	a.measuring.Lock()
	defer a.measuring.Unlock()
	if time.Now().UnixMilli()-a.measured.Load() < clockEvery.Milliseconds() {
		return // another caller just did
	}
	sent := time.Now()
	server, err := a.rdb.Time(ctx).Result()
	if err != nil {
		return
	}
	took := time.Since(sent)
	a.offset.Store(server.UnixMilli() - sent.Add(took/2).UnixMilli())
	a.measured.Store(time.Now().UnixMilli())
}

// prune forgets the queues this process wrote longer than TouchEvery ago,
// at most once a TouchEvery, so that its memory follows the queues it
// serves now, not every queue it ever saw.
func (a *Activity) prune(local int64) {
	last := a.pruned.Load()
	if local-last < TouchEvery.Milliseconds() || !a.pruned.CompareAndSwap(last, local) {
		return
	}
	a.touched.Range(func(q, at any) bool {
		if local-at.(int64) >= TouchEvery.Milliseconds() {
			a.touched.CompareAndDelete(q, at)
		}
		return true
	})
}
