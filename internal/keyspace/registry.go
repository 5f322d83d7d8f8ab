package keyspace

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// rememberEvery is how often a Registry adds a queue it has seen to the
// queues set again, so that the set heals if it is lost (a flush, a
// failover) without costing a round trip on every call.
const rememberEvery = 30 * time.Second

// Registry keeps the set of known queue names (QueuesKey), which the reaper
// and GET /queues read. The set is in no queue's slot, so it is written
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
