package lease

import (
	"time"

	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/lua"
)

// Observer is told how long the jobs a Service starts waited and how long
// the attempts it ends ran, as the rows the scripts answer tell it: on the
// Redis server's clock, in whole milliseconds. Its methods are called on
// the caller's goroutine, once the script has answered: they must be quick
// and safe for concurrent use.
type Observer interface {
	// JobWait is told that a job of queue started after being claimable
	// for wait.
	JobWait(queue string, wait time.Duration)
	// JobRun is told that an attempt of a job of queue, ended by its
	// holder's complete or fail, ran for run.
	JobRun(queue string, run time.Duration)
}

// Observe has the Service tell o the wait of each job it claims (by Claim,
// and as the next jobs of Complete and CompleteBatch) and the run of each
// attempt its holder ends (Complete, CompleteBatch, Fail). A repeat of a
// complete or fail that succeeded may be told again. nil, the default,
// tells nothing and costs nothing.
func Observe(o Observer) Option {
	return func(s *Service) { s.observer = o }
}

// observe tells the observer what the call c on queue, which answered
// reply, started and ended. A reply it cannot read tells nothing: the
// caller's own parse reports it.
func (s *Service) observe(queue string, c call, reply any) {
	switch c := c.(type) {
	case lua.ClaimArgs:
		if items, err := replyList(reply, -2); err == nil {
			s.observeStarts(queue, items[1])
		}
	case lua.CompleteArgs:
		if items, err := replyList(reply, 2); err == nil {
			s.observeEnd(queue, items[0], -1)
			s.observeStarts(queue, items[1])
		}
	case lua.CompleteBatchArgs:
		if items, err := replyList(reply, 2); err == nil {
			s.observeBatch(queue, items[0])
			s.observeStarts(queue, items[1])
		}
	case lua.FailArgs:
		s.observeEnd(queue, reply, c.RetryInMS)
	}
}

// observeStarts tells the waits of the jobs of a list of job replies, just
// claimed.
func (s *Service) observeStarts(queue string, reply any) {
	jobs, err := job.ParseList(queue, reply)
	if err != nil {
		return
	}
	for _, j := range jobs {
		if wait, ok := waitOf(j); ok {
			s.observer.JobWait(queue, wait)
		}
	}
}

// observeBatch tells the runs of the jobs a batch complete completed
// (complete_batch.lua's results: {1, job} or {0, code, id}).
func (s *Service) observeBatch(queue string, reply any) {
	results, _ := reply.([]any)
	for _, r := range results {
		if fields, err := replyList(r, 2); err == nil && fields[0] == int64(1) {
			s.observeEnd(queue, fields[1], -1)
		}
	}
}

// observeEnd tells the run of the attempt that a complete or fail, which
// answered the job reply, ended; retryInMS is the fail's retry delay (-1:
// the job's backoff, or a complete).
func (s *Service) observeEnd(queue string, reply any, retryInMS int64) {
	j, err := job.Parse(queue, reply)
	if err != nil {
		return
	}
	if run, ok := runOf(j, retryInMS); ok {
		s.observer.JobRun(queue, run)
	}
}

// waitOf is how long j, just started, had been claimable: since its
// ReadyAt, or, for a row written before ready_at was kept, its RunAt or
// CreatedAt.
func waitOf(j job.Job) (time.Duration, bool) {
	since := j.ReadyAt
	if since.IsZero() {
		since = j.RunAt
	}
	if since.IsZero() {
		since = j.CreatedAt
	}
	if since.IsZero() || j.StartedAt.IsZero() {
		return 0, false
	}
	return max(j.StartedAt.Sub(since), 0), true
}

// runOf is how long j's attempt ran, from its StartedAt to the report that
// ended it, when j's row tells when that was: its FinishedAt once
// finished (completed, dead, cancelled), its ReadyAt when retried at once
// (pending), its RunAt less the delay when retried after retryInMS
// (delayed). A job retried after its own backoff does not tell: its row
// keeps no end of the attempt, and its delay is the script's. Nor does a
// repeated fail that finds the job claimed again.
func runOf(j job.Job, retryInMS int64) (time.Duration, bool) {
	var end time.Time
	switch j.State {
	case job.StateCompleted, job.StateDead, job.StateCancelled:
		end = j.FinishedAt
	case job.StatePending:
		end = j.ReadyAt
	case job.StateDelayed:
		if retryInMS >= 0 && !j.RunAt.IsZero() {
			end = j.RunAt.Add(-time.Duration(retryInMS) * time.Millisecond)
		}
	}
	if end.IsZero() || j.StartedAt.IsZero() {
		return 0, false
	}
	return max(end.Sub(j.StartedAt), 0), true
}
