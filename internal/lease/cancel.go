package lease

import (
	"context"

	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/lua"
)

// CancelParams pins a cancel to one attempt (Token, 0 for whichever holds
// the job) and gives its reason.
type CancelParams struct {
	Token  int64
	Reason string
}

// Cancel cancels job id: a pending or delayed job at once (requested is
// false), an active one by asking its holder to stop at its next safe point
// (requested is true). Cancelling a cancelled job changes nothing.
// Errors: job.ErrGone; job.ErrState for a completed or dead job; job.ErrStale
// when p.Token is set and the job is not active under it.
func (s *Service) Cancel(ctx context.Context, queue, id string, p CancelParams) (j job.Job, requested bool, err error) {
	reply, err := s.run(ctx, queue, lua.CancelArgs{ID: id, Token: p.Token, Reason: truncate(p.Reason, MaxErrorText)})
	if err != nil {
		return job.Job{}, false, err
	}
	items, err := replyList(reply, 2)
	if err != nil {
		return job.Job{}, false, err
	}
	j, err = job.Parse(queue, items[1])
	return j, items[0] == "requested", err
}
