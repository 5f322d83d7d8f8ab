package admin

import (
	"context"
	"fmt"

	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/lua"
)

// DefaultBulkLimit is the jobs one bulk call (docs/design.md#bulk-actions)
// acts on when it names no limit. Each call is one atomic script, which
// holds Redis while it runs: the HTTP layer caps a call's limit.
const DefaultBulkLimit = 1000

// Bulk is what one bulk call did: how many jobs it acted on, and whether
// jobs it would act on are left (call again).
type Bulk struct {
	N    int
	More bool
}

// RetryAll sends up to limit of queue's jobs in state ("dead" or
// "cancelled") back to pending, oldest finished first, each as Retry does.
func (s *Service) RetryAll(ctx context.Context, queue, state string, limit int, by Actor) (Bulk, error) {
	return s.bulk(ctx, queue, lua.RetryAllArgs{State: state, Limit: limit, By: by})
}

// PromoteAll makes up to limit of queue's delayed jobs pending now,
// earliest run-at first, each as Promote does.
func (s *Service) PromoteAll(ctx context.Context, queue string, limit int, by Actor) (Bulk, error) {
	return s.bulk(ctx, queue, lua.PromoteAllArgs{Limit: limit, By: by})
}

// Clean deletes up to limit of queue's jobs in state ("completed", "dead"
// or "cancelled") that finished more than olderThanMS ago on Redis's
// clock (0: all of them), oldest first, each as Remove does.
func (s *Service) Clean(ctx context.Context, queue, state string, olderThanMS int64, limit int, by Actor) (Bulk, error) {
	return s.bulk(ctx, queue, lua.CleanArgs{State: state, OlderThanMS: olderThanMS, Limit: limit, By: by})
}

// bulk runs one bulk script, whose reply is {n, more}.
func (s *Service) bulk(ctx context.Context, queue string, c interface{ Call(keyspace.Queue) lua.Call }) (Bulk, error) {
	got, err := s.run(ctx, queue, c)
	if err != nil {
		return Bulk{}, err
	}
	reply, _ := got.([]any)
	if len(reply) != 2 {
		return Bulk{}, fmt.Errorf("bulk: unexpected reply %v", got)
	}
	n, _ := reply[0].(int64)
	more, _ := reply[1].(int64)
	return Bulk{N: int(n), More: more == 1}, nil
}
