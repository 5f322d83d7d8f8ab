package lease

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/internal/keyspace"
)

// Defaults of the worker plane, as DESIGN.md gives them.
const (
	DefaultLease       = 30 * time.Second
	DefaultMaxAttempts = 3
)

// Service runs the worker-plane scripts against one Redis (a node or a
// Cluster) for every queue under its key prefix.
type Service struct {
	rdb    redis.UniversalClient
	prefix string
	known  sync.Map // queue name -> when this process last added it to the queues set
}

// rememberEvery is how often an enqueue adds its queue to the queues set
// again, so that the set heals if it is lost (a flush, a failover).
const rememberEvery = 30 * time.Second

// NewService returns a Service for the keys under prefix.
func NewService(rdb redis.UniversalClient, prefix string) *Service {
	return &Service{rdb: rdb, prefix: prefix}
}

func (s *Service) keys(queue string) keyspace.Queue {
	return keyspace.NewQueue(s.prefix, queue)
}

// remember adds queue to the set of known queues, which the reaper sweeps.
// The set lives outside the queue's slot, so it is written here rather than
// in a script, once per queue and process every rememberEvery.
func (s *Service) remember(ctx context.Context, queue string) error {
	if last, ok := s.known.Load(queue); ok && time.Since(last.(time.Time)) < rememberEvery {
		return nil
	}
	if err := s.rdb.SAdd(ctx, keyspace.QueuesKey(s.prefix), queue).Err(); err != nil {
		return err
	}
	s.known.Store(queue, time.Now())
	return nil
}

// run runs script on queue's keys (and job id's row, when id is not empty)
// and turns its error replies into the job package's errors.
func (s *Service) run(ctx context.Context, script *redis.Script, queue, id string, args ...any) (any, error) {
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
