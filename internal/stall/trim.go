package stall

import (
	"context"
	"fmt"

	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/rediserr"
	"github.com/echo-mq/echo_mq/lua"
)

// KeepCompleted tells the Service how many completed jobs a queue keeps
// when its settings name no completed retention (EMQ_KEEP_COMPLETED, as
// the worker plane's lease.KeepCompleted): Settle and Trim hold a queue to
// it. The default, 0, holds a queue only to its own settings' rules.
func KeepCompleted(n int) Option {
	return func(s *Service) { s.keep = n }
}

// Trim deletes up to limit of queue's finished jobs that its retention
// lets go (docs/design.md#retention), oldest first: those beyond a count,
// and those that finished longer ago than an age. A finish trims a few
// itself; the reaper trims the rest, and an idle queue's jobs as they age
// out. It returns how many it deleted and whether it may have left more.
func (s *Service) Trim(ctx context.Context, queue string, limit int) (int, bool, error) {
	q := keyspace.NewQueue(s.prefix, queue)
	reply, err := s.scripts.Run(ctx, lua.TrimArgs{Keep: s.keep, Limit: limit}.Call(q)).Int64Slice()
	if err != nil {
		return 0, false, rediserr.Script(err)
	}
	if len(reply) != 2 {
		return 0, false, fmt.Errorf("trim: unexpected reply %v", reply)
	}
	return int(reply[0]), reply[1] == 1, nil
}
