package lease

import (
	"context"
	"encoding/json"
	"time"

	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/lua"
)

// MaxErrorText is how much of a failure's error text is kept.
const MaxErrorText = 4 << 10

// Complete finishes job id, held under token, storing result (nil: none).
// With next set it also claims the holder's next jobs in the same step
// (none when the queue is paused or empty). A repeat of a complete that
// succeeded answers the job again. Errors: job.ErrStale, job.ErrGone.
func (s *Service) Complete(ctx context.Context, queue, id string, token int64, result json.RawMessage, next *ClaimParams) (job.Job, []job.Job, error) {
	reply, err := s.run(ctx, queue, lua.CompleteArgs{ID: id, Token: token, Result: result,
		Next: nextArgs(next), Keep: s.keepCompleted})
	if err != nil {
		s.giveBack(ctx, queue, reply, err)
		return job.Job{}, nil, err
	}
	items, err := replyList(reply, 2)
	if err != nil {
		return job.Job{}, nil, err
	}
	done, err := job.Parse(queue, items[0])
	if err != nil {
		return job.Job{}, nil, err
	}
	claimed, err := job.ParseList(queue, items[1])
	if err != nil {
		return job.Job{}, nil, err
	}
	s.observeEnd(queue, done)
	s.observeStarts(queue, claimed)
	return done, claimed, nil
}

// nextArgs are the claim-next arguments of the complete scripts.
func nextArgs(next *ClaimParams) lua.ClaimArgs {
	if next == nil {
		return lua.ClaimArgs{}
	}
	return next.args()
}

// Completion is one job of a batch complete: its id, the holder's token
// and the result (nil: none).
type Completion struct {
	ID     string
	Token  int64
	Result json.RawMessage
}

// Completed is the outcome of one job of a batch complete: the job, or the
// error that refused it (job.ErrStale, job.ErrGone).
type Completed struct {
	Job job.Job
	Err error
}

// CompleteBatch completes many jobs in one atomic step, each as Complete
// would, and optionally claims next jobs. One job's refusal does not stop the
// others; outcomes come back in order.
func (s *Service) CompleteBatch(ctx context.Context, queue string, batch []Completion, next *ClaimParams) ([]Completed, []job.Job, error) {
	jobs := make([]lua.Completion, len(batch))
	for i, c := range batch {
		jobs[i] = lua.Completion{ID: c.ID, Token: c.Token, Result: c.Result}
	}
	reply, err := s.run(ctx, queue, lua.CompleteBatchArgs{Jobs: jobs, Next: nextArgs(next), Keep: s.keepCompleted})
	if err != nil {
		s.giveBack(ctx, queue, reply, err)
		return nil, nil, err
	}
	items, err := replyList(reply, 2)
	if err != nil {
		return nil, nil, err
	}
	outcomes, err := parseCompleted(queue, items[0], len(batch))
	if err != nil {
		return nil, nil, err
	}
	claimed, err := job.ParseList(queue, items[1])
	if err != nil {
		return nil, nil, err
	}
	for _, o := range outcomes {
		if o.Err == nil {
			s.observeEnd(queue, o.Job)
		}
	}
	s.observeStarts(queue, claimed)
	return outcomes, claimed, nil
}

// parseCompleted reads complete_batch.lua's results: {1, job} or {0, code, id}.
func parseCompleted(queue string, reply any, want int) ([]Completed, error) {
	items, err := replyList(reply, want)
	if err != nil {
		return nil, err
	}
	out := make([]Completed, len(items))
	for i, item := range items {
		fields, err := replyList(item, -2)
		if err != nil {
			return nil, err
		}
		if fields[0] != int64(1) && len(fields) == 3 {
			code, _ := fields[1].(string)
			id, _ := fields[2].(string)
			out[i].Err = job.CodeError(code, id)
			continue
		}
		if out[i].Job, err = job.Parse(queue, fields[1]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// FailTransition names the transition a fail made by the state the job
// went to: "failed" (to be retried: delayed or pending), "dead" or
// "cancelled"; false for any other (a repeated fail may find the job held
// again).
func FailTransition(state string) (string, bool) {
	switch state {
	case "delayed", "pending":
		return "failed", true
	case "dead", "cancelled":
		return state, true
	}
	return "", false
}

// FailParams is a failed attempt's report.
type FailParams struct {
	Token   int64
	Error   string         // truncated to MaxErrorText
	RetryIn *time.Duration // nil: the job's backoff
	Fatal   bool           // no retry: dead at once
}

// Fail reports that the attempt of job id under p.Token failed. The job is
// cancelled when a cancel was requested, dead when p.Fatal or out of
// attempts, else delayed (or pending) for a retry. A repeat of a fail that
// succeeded answers the job as it is. Errors: job.ErrStale, job.ErrGone.
func (s *Service) Fail(ctx context.Context, queue, id string, p FailParams) (job.Job, error) {
	retryIn := int64(-1)
	if p.RetryIn != nil {
		retryIn = millis(*p.RetryIn)
	}
	reply, err := s.run(ctx, queue, lua.FailArgs{ID: id, Token: p.Token, Error: truncate(p.Error, MaxErrorText),
		RetryInMS: retryIn, Fatal: p.Fatal})
	if err != nil {
		return job.Job{}, err
	}
	failed, err := job.Parse(queue, reply)
	if err == nil {
		s.observeEnd(queue, failed)
	}
	return failed, err
}

// Snooze puts the job the token holds back for later without spending its
// attempt: delayed for delay (pending at once for 0), its attempts as
// before the claim and its stalls as they were, its flow control slot
// freed; the token is dead afterwards (docs/design.md#snooze). A job whose
// cancel was requested is cancelled instead. Repeating it answers as the
// first time. Errors: job.ErrGone, job.ErrStale.
func (s *Service) Snooze(ctx context.Context, queue, id string, token int64, delay time.Duration) (job.Job, error) {
	reply, err := s.run(ctx, queue, lua.SnoozeArgs{ID: id, Token: token, DelayMS: millis(delay)})
	if err != nil {
		return job.Job{}, err
	}
	return job.Parse(queue, reply)
}

// truncate cuts s to at most n bytes without splitting a UTF-8 sequence.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
