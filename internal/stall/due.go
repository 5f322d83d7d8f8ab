package stall

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/rediserr"
	"github.com/echo-mq/echo_mq/lua"
)

// DefaultMaxAge is how long a queue's events are kept, and how long an
// empty queue is kept after its last event (Settle).
const DefaultMaxAge = 24 * time.Hour

// DueQueues answers up to limit queues whose time in the due index has
// come on the Redis server's clock, earliest first within each index
// (docs/design.md#the-sweep): one index on one node, one per slot on a
// Cluster, read in one pipeline.
func (s *Service) DueQueues(ctx context.Context, limit int) ([]string, error) {
	now, err := s.rdb.Time(ctx).Result()
	if err != nil {
		return nil, err
	}
	upTo := strconv.FormatInt(now.UnixMilli(), 10)
	keys := []string{keyspace.DueKey(s.prefix)}
	if s.cluster() {
		keys = keyspace.SlotDueKeys(s.prefix)
	}
	cmds := make([]*redis.StringSliceCmd, len(keys))
	if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, key := range keys {
			cmds[i] = p.ZRangeByScore(ctx, key, &redis.ZRangeBy{Min: "-inf", Max: upTo, Count: int64(limit)})
		}
		return nil
	}); err != nil {
		return nil, err
	}
	var queues []string
	for _, cmd := range cmds {
		for _, base := range cmd.Val() {
			if name, ok := keyspace.QueueOfBase(s.prefix, base); ok && len(queues) < limit {
				queues = append(queues, name)
			}
		}
	}
	return queues, nil
}

// cluster reports whether the service's store is a Redis Cluster, whose
// due index is one per slot.
func (s *Service) cluster() bool {
	_, ok := s.rdb.(*redis.ClusterClient)
	return ok
}

// Settled is what Settle did to a queue.
type Settled struct {
	Next      int64 // the time the due index holds for it now (ms), -1 for none
	Forgotten bool  // the queue was empty and its events aged out: it is gone
	Owes      bool  // a batch callback of the queue is owed now
	Work      bool  // a lapsed lease, a due delayed job, an expiry, a throttle's end or finished jobs to trim: the reaper's work now
}

// Settle writes queue's place in the due index once its due work is done:
// the time of its next work, or none; an empty queue whose last event is
// maxAge old is forgotten, every key of it deleted (lua/settle.lua). It
// trims the queue's events older than maxAge.
func (s *Service) Settle(ctx context.Context, queue string, maxAge time.Duration) (Settled, error) {
	q := keyspace.NewQueue(s.prefix, queue)
	reply, err := s.scripts.Run(ctx, lua.SettleArgs{MaxAgeMS: maxAge.Milliseconds(), Keep: s.keep}.Call(q)).Int64Slice()
	if err != nil {
		return Settled{}, rediserr.Script(err)
	}
	if len(reply) != 4 {
		return Settled{}, fmt.Errorf("settle: unexpected reply %v", reply)
	}
	return Settled{Next: reply[0], Forgotten: reply[1] == 1, Owes: reply[2] == 1, Work: reply[3] == 1}, nil
}

// owes makes sure the batch dispatchers look at queue, which owes a
// batch callback: a create whose process stopped before it listed the
// queue (internal/batch) left it out of their set.
func (s *Service) owes(ctx context.Context, queue string) error {
	return s.rdb.SAdd(ctx, keyspace.BatchesKey(s.prefix), queue).Err()
}

// forget takes a queue Settle forgot out of the registry; one that a
// write made anew meanwhile (an enqueue, a schedule, a push target: any
// key of it) stays known.
func (s *Service) forget(ctx context.Context, queue string) error {
	if err := s.queues.Forget(ctx, queue); err != nil {
		return err
	}
	q := keyspace.NewQueue(s.prefix, queue)
	if exists, err := s.rdb.Exists(ctx, q.Keys()...).Result(); err != nil || exists == 0 {
		return err
	}
	return s.queues.Remember(ctx, queue, true)
}
