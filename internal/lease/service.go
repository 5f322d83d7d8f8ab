package lease

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/lua"
)

// Defaults of the worker plane, as DESIGN.md gives them.
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
}

// Option configures a Service.
type Option func(*Service)

// KeepCompleted sets how many completed jobs each queue keeps: completing
// one more deletes the oldest (a few per call, so no call does unbounded
// work). 0 keeps every one. The default is DefaultKeepCompleted.
func KeepCompleted(n int) Option {
	return func(s *Service) { s.keepCompleted = n }
}

// NewService returns a Service for the keys under prefix.
func NewService(rdb redis.UniversalClient, prefix string, opts ...Option) *Service {
	s := &Service{rdb: rdb, prefix: prefix, keepCompleted: DefaultKeepCompleted,
		queues: keyspace.NewRegistry(rdb, prefix)}
	for _, o := range opts {
		o(s)
	}
	return s
}

func (s *Service) keys(queue string) keyspace.Queue {
	return keyspace.NewQueue(s.prefix, queue)
}

// run runs script on queue's keys (and job id's row, when id is not empty)
// and turns its error replies into the job package's errors.
func (s *Service) run(ctx context.Context, script *lua.Script, queue, id string, args ...any) (any, error) {
	q := s.keys(queue)
	keys := q.ScriptKeys()
	if id != "" {
		keys = q.ScriptKeysWithJob(id)
	}
	reply, err := script.Run(ctx, s.rdb, keys, q.ScriptArgs(args...)...).Result()
	return reply, job.ScriptError(err)
}

// bool01 renders a flag the way the scripts read it.
func bool01(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// optionalJSON is a script's (flag, text) pair for a JSON value that may be
// absent.
func optionalJSON(v json.RawMessage) (string, string) {
	if v == nil {
		return "0", ""
	}
	return "1", string(v)
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
