package lease

import (
	"context"
	"encoding/json"
	"time"

	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/lua"
)

// ExtendParams is a checkpoint: the holder's token, the new lease (0:
// leave the lease as it is, a checkpoint of progress alone), and progress
// to store (nil: leave it).
type ExtendParams struct {
	Token    int64
	Lease    time.Duration
	Progress json.RawMessage
}

// Extended is the answer to a checkpoint: the lease deadline (the new
// one, or the one the job has when the checkpoint left it), and whether a
// cancel was requested for this attempt.
type Extended struct {
	LeaseExpiresAt  time.Time
	CancelRequested bool
	CancelReason    string
}

// Extend re-scores the lease of job id, held under p.Token, to server now +
// p.Lease, or with p.Lease 0 leaves it as it is (BullMQ's updateProgress
// leaves its lock so), and stores p.Progress when it is not nil. It fails
// with job.ErrStale when the token does not hold the job (also when a
// sweep has recovered it, or its timeout has come) and job.ErrGone when
// there is none.
func (s *Service) Extend(ctx context.Context, queue, id string, p ExtendParams) (Extended, error) {
	reply, err := s.run(ctx, queue, lua.ExtendArgs{ID: id, Token: p.Token, LeaseMS: millis(p.Lease), Progress: p.Progress})
	if err != nil {
		return Extended{}, err
	}
	items, err := replyList(reply, 3)
	if err != nil {
		return Extended{}, err
	}
	deadline, _ := items[0].(int64)
	reason, _ := items[2].(string)
	return Extended{
		LeaseExpiresAt:  job.Millis(deadline),
		CancelRequested: items[1] == int64(1),
		CancelReason:    reason,
	}, nil
}

// Cancellation is a holder's view of a cancel request for its attempt.
type Cancellation struct {
	Requested bool
	Reason    string
}

// Cancellation tells the holder of job id under token whether a cancel was
// requested, in O(1). Errors as for Extend.
func (s *Service) Cancellation(ctx context.Context, queue, id string, token int64) (Cancellation, error) {
	reply, err := s.run(ctx, queue, lua.CancellationArgs{ID: id, Token: token})
	if err != nil {
		return Cancellation{}, err
	}
	items, err := replyList(reply, 2)
	if err != nil {
		return Cancellation{}, err
	}
	reason, _ := items[1].(string)
	return Cancellation{Requested: items[0] == int64(1), Reason: reason}, nil
}
