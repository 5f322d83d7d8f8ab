package keyspace

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// rememberEvery is how often a Registry adds a queue it has seen to the
// queues set again, so that the set heals if it is lost (a flush, a
// failover) without costing a round trip on every call.
const rememberEvery = 30 * time.Second

// scanStep is how many names one SSCAN of All asks for.
const scanStep = 1000

// Registry keeps the set of known queue names (QueuesKey), and is the one
// reader of it: the reaper, GET /queues and the merged event stream read it
// through Page and All. The set is in no queue's slot, so it is written
// outside the scripts.
type Registry struct {
	rdb    redis.UniversalClient
	prefix string
	seen   sync.Map // queue name -> when this process last added it
}

// NewRegistry returns the registry of the queues under prefix.
func NewRegistry(rdb redis.UniversalClient, prefix string) *Registry {
	return &Registry{rdb: rdb, prefix: prefix}
}

// Remember adds queue to the set: at once when fresh (the queue is new to
// Redis), else at most once per rememberEvery.
func (r *Registry) Remember(ctx context.Context, queue string, fresh bool) error {
	if last, ok := r.seen.Load(queue); ok && !fresh && time.Since(last.(time.Time)) < rememberEvery {
		return nil
	}
	if err := r.rdb.SAdd(ctx, QueuesKey(r.prefix), queue).Err(); err != nil {
		return err
	}
	r.seen.Store(queue, time.Now())
	return nil
}

// Forget takes queue out of the set.
func (r *Registry) Forget(ctx context.Context, queue string) error {
	r.seen.Delete(queue)
	return r.rdb.SRem(ctx, QueuesKey(r.prefix), queue).Err()
}

// Page reads one page of the set from cursor (0 for the first), about
// count names in the set's own order (SSCAN), and the cursor of the next
// page: 0 when there is none. A name may come on two pages when the set
// grows meanwhile, as with SSCAN.
func (r *Registry) Page(ctx context.Context, cursor uint64, count int64) ([]string, uint64, error) {
	return r.rdb.SScan(ctx, QueuesKey(r.prefix), cursor, "", count).Result()
}

// All reads every name in the set, sorted and each once, a page at a time
// (scanStep names a call), so that no one call holds Redis for long; a name
// no queue could have is skipped. On an error it answers the names read
// before it too, so that the reaper still sweeps those.
func (r *Registry) All(ctx context.Context) ([]string, error) {
	var names []string
	iter := r.rdb.SScan(ctx, QueuesKey(r.prefix), 0, "", scanStep).Iterator()
	for iter.Next(ctx) {
		if name := iter.Val(); ValidQueueName(name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names), iter.Err() // SSCAN may return a name twice
}
