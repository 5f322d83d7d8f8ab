package keyspace

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultMaxQueues is how many queues a Registry admits unless told
// otherwise (cmd/api's EMQ_MAX_QUEUES).
const DefaultMaxQueues = 100_000

// rememberEvery is how often a Registry checks a queue it has seen
// against the registry again, so that the registry heals if it is lost (a
// flush, a failover) without costing a round trip on every call.
const rememberEvery = 30 * time.Second

// scanStep is how many names one call of All or Migrate reads.
const scanStep = 1000

// ErrQuota is what a QuotaError is: a write would make one queue more
// than the registry admits.
var ErrQuota = errors.New("too many queues")

// QuotaError refuses a write that would make queue Queue, one more than
// the Max queues the registry admits.
type QuotaError struct {
	Queue string
	Max   int
}

func (e *QuotaError) Error() string {
	return fmt.Sprintf("queue %s would be one more than the limit of %d queues; obliterate a queue to free a place", e.Queue, e.Max)
}

// Is makes errors.Is(err, ErrQuota) hold.
func (e *QuotaError) Is(target error) bool { return target == ErrQuota }

//go:embed admit.lua
var admitSrc string

// admit is admit.lua: take a place for a queue within the limit.
var admit = redis.NewScript(admitSrc)

// ValidQueuePrefix reports whether p may start a queue's name: "", or up
// to 100 of [A-Za-z0-9._-].
func ValidQueuePrefix(p string) bool { return p == "" || validName(p, 100, false) }

// Registry keeps the names of the known queues, and is the one reader and
// writer of them. They live in a sorted set with every score 0
// (QueueNamesKey), so that GET /queues pages by name and by a name's
// prefix; the set of the previous release (QueuesKey), which its replicas
// read and write during a rolling upgrade, is written beside it. Neither
// is in a queue's slot: each is touched alone, outside the queues'
// scripts, so both work on a Redis Cluster.
//
// Its limit (RegistryMax) bounds how many queues there are: Admit refuses a
// queue past it before anything of the queue is written.
type Registry struct {
	rdb    redis.UniversalClient
	prefix string
	max    int      // 0: no limit
	seen   sync.Map // queue name -> when this process last found it in the registry
}

// RegistryOption configures a Registry.
type RegistryOption func(*Registry)

// RegistryMax makes the registry admit at most n queues; 0 (the default)
// is no limit.
func RegistryMax(n int) RegistryOption {
	return func(r *Registry) { r.max = max(n, 0) }
}

// NewRegistry returns the registry of the queues under prefix.
func NewRegistry(rdb redis.UniversalClient, prefix string, opts ...RegistryOption) *Registry {
	r := &Registry{rdb: rdb, prefix: prefix}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Admit takes queue's place in the registry before a write that may make
// the queue, or refuses it with a *QuotaError (ErrQuota) when the queue is
// not known and the registry is full: then the write must not happen. A
// queue this process found in the registry within rememberEvery costs no
// round trip; any other costs one atomic script on the registry (known: ok;
// full: refused; else added), then an SADD to the previous release's set.
// It answers whether it added queue, so that the caller gives the place
// back (Withdraw) if its write is then refused.
func (r *Registry) Admit(ctx context.Context, queue string) (bool, error) {
	if last, ok := r.seen.Load(queue); ok && time.Since(last.(time.Time)) < rememberEvery {
		return false, nil
	}
	n, err := admit.Run(ctx, r.rdb, []string{QueueNamesKey(r.prefix)}, queue, r.max).Int()
	if err != nil {
		return false, err
	}
	if n < 0 {
		return false, &QuotaError{Queue: queue, Max: r.max}
	}
	if err := r.rdb.SAdd(ctx, QueuesKey(r.prefix), queue).Err(); err != nil {
		return n == 1, err
	}
	r.seen.Store(queue, time.Now())
	return n == 1, nil
}

// Withdraw gives back the place Admit added queue for when the write it
// was for failed, so that a refused request leaves nothing behind: it
// takes queue out of the registry unless the queue has keys by now
// (another request made it meanwhile; its Remember adds it again should
// the two cross).
func (r *Registry) Withdraw(ctx context.Context, queue string) error {
	n, err := r.rdb.Exists(ctx, NewQueue(r.prefix, queue).Keys()...).Result()
	if err != nil || n > 0 {
		return err
	}
	return r.Forget(ctx, queue)
}

// Remember adds queue to the registry after a write that made it, without
// the limit (the queue exists now): at once when fresh (the queue is new
// to Redis: one obliterated by another replica may have been made again
// here while this process still took it for known), else at most once per
// rememberEvery. A write that may make a queue calls Admit before it; a
// write that needs a queue to exist (a schedule's tick) only Remember.
func (r *Registry) Remember(ctx context.Context, queue string, fresh bool) error {
	if last, ok := r.seen.Load(queue); ok && !fresh && time.Since(last.(time.Time)) < rememberEvery {
		return nil
	}
	_, err := r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.ZAdd(ctx, QueueNamesKey(r.prefix), redis.Z{Member: queue})
		p.SAdd(ctx, QueuesKey(r.prefix), queue)
		return nil
	})
	if err != nil {
		return err
	}
	r.seen.Store(queue, time.Now())
	return nil
}

// Forget takes queue out of the registry (and the previous release's
// set), which frees its place.
func (r *Registry) Forget(ctx context.Context, queue string) error {
	r.seen.Delete(queue)
	_, err := r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.ZRem(ctx, QueueNamesKey(r.prefix), queue)
		p.SRem(ctx, QueuesKey(r.prefix), queue)
		return nil
	})
	return err
}

// Page reads up to count names of the registry that start with prefix
// ("" for all), in name order, after the name after ("" for the first
// page), and whether more follow. One ZRANGEBYLEX: O(log N + count).
func (r *Registry) Page(ctx context.Context, prefix, after string, count int) ([]string, bool, error) {
	lo, hi := "-", "+"
	if prefix != "" {
		// Names are ASCII: every name that starts with prefix sorts
		// before prefix followed by byte 0xff, and every other after it.
		lo, hi = "["+prefix, "("+prefix+"\xff"
	}
	if after != "" && after >= prefix {
		lo = "(" + after
	}
	names, err := r.rdb.ZRangeByLex(ctx, QueueNamesKey(r.prefix), &redis.ZRangeBy{
		Min: lo, Max: hi, Count: int64(count) + 1}).Result()
	if err != nil {
		return nil, false, err
	}
	if len(names) > count {
		return names[:count], true, nil
	}
	return names, false, nil
}

// All reads every name in the registry and in the previous release's set
// (whose replicas, during a rolling upgrade, make queues only there),
// sorted and each once, scanStep names a call, so that no one call holds
// Redis for long; a name no queue could have is skipped. On an error it
// answers the names read before it too, so that the reaper still sweeps
// those.
func (r *Registry) All(ctx context.Context) ([]string, error) {
	var names []string
	keep := func(name string) {
		if ValidQueueName(name) {
			names = append(names, name)
		}
	}
	lo := "-"
	for {
		page, err := r.rdb.ZRangeByLex(ctx, QueueNamesKey(r.prefix), &redis.ZRangeBy{Min: lo, Max: "+", Count: scanStep}).Result()
		if err != nil {
			return names, err
		}
		for _, name := range page {
			keep(name)
		}
		if len(page) < scanStep {
			break
		}
		lo = "(" + page[len(page)-1]
	}
	iter := r.rdb.SScan(ctx, QueuesKey(r.prefix), 0, "", scanStep).Iterator()
	for iter.Next(ctx) {
		keep(iter.Val())
	}
	slices.Sort(names)
	return slices.Compact(names), iter.Err() // SSCAN may return a name twice
}

// Migrate copies into the registry the names of the previous release's
// set that it lacks, scanStep at a time, and answers how many it added.
// The service runs it at start-up; its replicas keep both written after,
// and a queue the previous release makes later is added when a replica of
// this one enqueues to it (Admit, Remember) or starts. Names it copies
// count towards the limit without being checked against it: they are
// queues already.
func (r *Registry) Migrate(ctx context.Context) (int, error) {
	added := 0
	var cursor uint64
	for {
		names, next, err := r.rdb.SScan(ctx, QueuesKey(r.prefix), cursor, "", scanStep).Result()
		if err != nil {
			return added, err
		}
		members := make([]redis.Z, 0, len(names))
		for _, name := range names {
			if ValidQueueName(name) {
				members = append(members, redis.Z{Member: name})
			}
		}
		if len(members) > 0 {
			n, err := r.rdb.ZAddNX(ctx, QueueNamesKey(r.prefix), members...).Result()
			if err != nil {
				return added, err
			}
			added += int(n)
		}
		if cursor = next; cursor == 0 {
			return added, nil
		}
	}
}
