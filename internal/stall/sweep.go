// Package stall recovers jobs whose leases lapsed: the count-thresholded
// sweep, and the Reaper that runs it for every known queue on an interval.
//
// One stall is a slow worker: the job goes back to the front of pending.
// Repeated stalls are a poison job: at max_stalled stalls it is dead-lettered
// with last_error "stalled". A job whose cancel was requested goes to
// cancelled instead. The sweep reads only the lapsed range of the active set,
// so it costs O(lapsed), never O(active); several replicas may run it at
// once, and their reapers take turns (TakeTurn) so that the work is not
// multiplied by the number of replicas.
package stall

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/rediserr"
	"github.com/echo-mq/echo_mq/lua"
)

// Defaults of the sweep.
const (
	DefaultMaxStalled = 2
	DefaultLimit      = 1000
)

// Service sweeps queues under one key prefix.
type Service struct {
	rdb     redis.UniversalClient
	prefix  string
	scripts *lua.Runner
	queues  *keyspace.Registry
	keep    int // completed jobs a queue keeps without a retention rule of its own (KeepCompleted)
}

// Option configures a Service.
type Option func(*Service)

// Registry makes the Service read and forget queues through reg, the
// registry the other services share; the default is one of its own.
func Registry(reg *keyspace.Registry) Option {
	return func(s *Service) { s.queues = reg }
}

// NewService returns a Service for the keys under prefix.
func NewService(rdb redis.UniversalClient, prefix string, opts ...Option) *Service {
	s := &Service{rdb: rdb, prefix: prefix, scripts: lua.NewRunner(rdb), queues: keyspace.NewRegistry(rdb, prefix)}
	for _, o := range opts {
		o(s)
	}
	return s
}

// SweepParams bound one sweep call.
type SweepParams struct {
	MaxStalled int // 0: DefaultMaxStalled
	Limit      int // 0: DefaultLimit lapsed jobs at most
}

// Swept lists the ids a sweep moved, by where they went.
type Swept struct {
	Recovered []string
	Dead      []string
	Cancelled []string
	Retried   []string // timed out (docs/design.md#admission-and-lifetimes), to run again
	Expired   []string // cancelled by expire.lua: not started before their expiry
}

// Len is how many jobs the sweep moved.
func (s Swept) Len() int {
	return len(s.Recovered) + len(s.Dead) + len(s.Cancelled) + len(s.Retried) + len(s.Expired)
}

// Sweep takes up to p.Limit active jobs of queue whose lease has lapsed on the
// server's clock and recovers, dead-letters or cancels each.
func (s *Service) Sweep(ctx context.Context, queue string, p SweepParams) (Swept, error) {
	q := keyspace.NewQueue(s.prefix, queue)
	args := lua.SweepArgs{MaxStalled: cmp.Or(p.MaxStalled, DefaultMaxStalled), Limit: cmp.Or(p.Limit, DefaultLimit)}
	reply, err := s.scripts.Run(ctx, args.Call(q)).Result()
	if err != nil {
		return Swept{}, rediserr.Script(err)
	}
	lists, ok := reply.([]any)
	if !ok || len(lists) != 4 {
		return Swept{}, fmt.Errorf("sweep: unexpected reply %v", reply)
	}
	return Swept{Recovered: ids(lists[0]), Dead: ids(lists[1]), Cancelled: ids(lists[2]), Retried: ids(lists[3])}, nil
}

// Expire cancels up to limit jobs of queue whose expiry came before they
// started, and lets go of up to limit dedupe keys whose throttle window
// ended (docs/design.md#admission-and-lifetimes). It returns the ids it
// cancelled and whether it may have left more.
func (s *Service) Expire(ctx context.Context, queue string, limit int) ([]string, bool, error) {
	q := keyspace.NewQueue(s.prefix, queue)
	reply, err := s.scripts.Run(ctx, lua.ExpireArgs{Limit: limit}.Call(q)).Result()
	if err != nil {
		return nil, false, rediserr.Script(err)
	}
	pair, ok := reply.([]any)
	if !ok || len(pair) != 2 {
		return nil, false, fmt.Errorf("expire: unexpected reply %v", reply)
	}
	looked, _ := pair[1].(int64)
	return ids(pair[0]), looked >= int64(limit), nil
}

// TakeTurn claims queue's sweep for ttl on behalf of one replica's reaper
// and reports whether it got it. It is one SET NX PX on a key in the
// queue's slot: however many replicas run a reaper, a queue is swept at
// most once per ttl by them, and a replica that stops mid-pass leaves the
// queue to the others when ttl ends. ttl must be at least 1 ms (less would
// set the key for good).
func (s *Service) TakeTurn(ctx context.Context, queue string, ttl time.Duration) (bool, error) {
	return s.rdb.SetNX(ctx, keyspace.NewQueue(s.prefix, queue).ReaperTurn(), 1, ttl).Result()
}

// PromoteDue moves up to limit due delayed jobs of queue to pending and
// returns how many it moved.
func (s *Service) PromoteDue(ctx context.Context, queue string, limit int) (int, error) {
	q := keyspace.NewQueue(s.prefix, queue)
	n, err := s.scripts.Run(ctx, lua.PromoteDueArgs{Limit: limit}.Call(q)).Int()
	return n, rediserr.Script(err)
}

// ids reads a list of ids; always a non-nil slice, so JSON shows [].
func ids(reply any) []string {
	items, _ := reply.([]any)
	out := make([]string, 0, len(items))
	for _, item := range items {
		if id, ok := item.(string); ok {
			out = append(out, id)
		}
	}
	return out
}
