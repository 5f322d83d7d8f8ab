package lease

import (
	"time"

	"github.com/echo-mq/echo_mq/internal/job"
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

// observeStarts tells the observer the waits of jobs, just claimed.
func (s *Service) observeStarts(queue string, jobs []job.Job) {
	if s.observer == nil {
		return
	}
	for _, j := range jobs {
		if wait, ok := waitOf(j); ok {
			s.observer.JobWait(queue, wait)
		}
	}
}

// observeEnd tells the observer the run of the attempt that a complete or
// fail, which answered j, ended.
func (s *Service) observeEnd(queue string, j job.Job) {
	if s.observer == nil {
		return
	}
	if run, ok := runOf(j); ok {
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
// ended it, as j's row tells it just after: its FinishedAt once finished
// (completed, dead, cancelled), its FailedAt when retried (pending or
// delayed). A repeated complete or fail that finds the job claimed again
// tells nothing.
func runOf(j job.Job) (time.Duration, bool) {
	var end time.Time
	switch j.State {
	case job.StateCompleted, job.StateDead, job.StateCancelled:
		end = j.FinishedAt
	case job.StatePending, job.StateDelayed:
		end = j.FailedAt
	}
	if end.IsZero() || j.StartedAt.IsZero() {
		return 0, false
	}
	return max(end.Sub(j.StartedAt), 0), true
}
