package lease

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/lua"
)

// Defaults of the worker plane, as docs/design.md#the-contract-in-brief gives them.
const (
	DefaultLease         = 30 * time.Second
	DefaultMaxAttempts   = job.DefaultMaxAttempts
	DefaultKeepCompleted = 10_000
)

// Service runs the worker-plane scripts against one Redis (a node or a
// Cluster) for every queue under its key prefix.
type Service struct {
	rdb           redis.UniversalClient
	prefix        string
	keepCompleted int
	queues        *keyspace.Registry
	scripts       *lua.Runner
	observer      Observer // nil: none (Observe)
}

// Option configures a Service.
type Option func(*Service)

// KeepCompleted sets how many completed jobs each queue keeps: completing
// one more deletes the oldest (a few per call, so no call does unbounded
// work). 0 keeps every one. The default is DefaultKeepCompleted.
func KeepCompleted(n int) Option {
	return func(s *Service) { s.keepCompleted = n }
}

// ScriptsVia runs the scripts through p (an autopipeliner of the Service's
// client, whose concurrent calls share round trips), while the Service's
// client loads their library on every master.
func ScriptsVia(p lua.Processor) Option {
	return func(s *Service) { s.scripts = lua.NewRunner(p).LoadThrough(s.rdb) }
}

// Registry makes the Service admit new queues through reg (its limit, and
// what this process has seen of it, shared with the other services); the
// default is a registry of its own with no limit.
func Registry(reg *keyspace.Registry) Option {
	return func(s *Service) { s.queues = reg }
}

// NewService returns a Service for the keys under prefix.
func NewService(rdb redis.UniversalClient, prefix string, opts ...Option) *Service {
	s := &Service{rdb: rdb, prefix: prefix, keepCompleted: DefaultKeepCompleted,
		queues: keyspace.NewRegistry(rdb, prefix), scripts: lua.NewRunner(rdb)}
	for _, o := range opts {
		o(s)
	}
	return s
}

func (s *Service) keys(queue string) keyspace.Queue {
	return keyspace.NewQueue(s.prefix, queue)
}

// call is a script's call on queue, built by its typed arguments.
type call interface {
	Call(q keyspace.Queue) lua.Call
}

// run runs a script call on queue and turns its error replies into the job
// package's errors.
func (s *Service) run(ctx context.Context, queue string, c call) (any, error) {
	return s.scripts.Reply(ctx, c.Call(s.keys(queue)))
}

func millis(d time.Duration) int64 { return d.Milliseconds() }

// replyList reads a reply that must be a list of want items, or of at
// least -want items when want is negative.
func replyList(reply any, want int) ([]any, error) {
	items, ok := reply.([]any)
	if !ok || (want >= 0 && len(items) != want) || (want < 0 && len(items) < -want) {
		// Not the reply itself: it may hold tokens, which are never logged.
		return nil, fmt.Errorf("unexpected script reply: %T of %d items, want %d", reply, len(items), want)
	}
	return items, nil
}
