package client

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"
)

// errLeaseLapsed is why a report was given up: its job's lease may have
// lapsed, so the service's sweep takes the job back (or has already).
var errLeaseLapsed = errors.New("client: gave up reporting: the job's lease has lapsed, the service's sweep will take the job back")

// work runs one claimed job, whose claim was answered at claimedAt, to its
// end: the handler with a heartbeat beside it, then the report of its
// outcome. Neither is cut short by ctx, Work's stop signal: a job in hand
// is finished.
func (w *worker) work(ctx context.Context, job Job, claimedAt time.Time) {
	w.log.Info("Claimed job", "job_id", job.ID)
	base := context.WithoutCancel(ctx)
	jobCtx, cancelJob := context.WithCancelCause(base)
	defer cancelJob(nil)
	h := w.startHeartbeat(base, job, claimedAt, cancelJob)
	result, err := w.call(context.WithValue(jobCtx, heartbeatKey{}, h), job)
	h.stop()
	r := report{w: w, job: job, leaseEnd: h.lastLeaseEnd()}
	cause := context.Cause(jobCtx)
	var cancel *CancelRequestedError
	switch {
	case errors.Is(cause, ErrLeaseLost):
		w.log.Warn("Lost job", "job_id", job.ID, "error", cause)
	case err == nil:
		r.complete(base, result)
	case errors.As(cause, &cancel):
		r.fail(base, FailRequest{Token: job.Token, Error: cancelledText(cancel.Reason)})
	case errors.As(err, new(*snoozeError)):
		r.snooze(base, err) // in work.go
	default:
		r.fail(base, failRequest(job, err))
	}
}

// cancelledText is the error a cancelled job is failed with.
func cancelledText(reason string) string {
	if reason == "" {
		return "cancelled"
	}
	return "cancelled: " + reason
}

// call runs the handler, turning a panic into an error.
func (w *worker) call(ctx context.Context, job Job) (result any, err error) {
	defer func() {
		if p := recover(); p != nil {
			w.log.Error("Handler panicked", "job_id", job.ID, "panic", p, "stack", string(debug.Stack()))
			result, err = nil, fmt.Errorf("panic: %v", p)
		}
	}()
	return w.handle(ctx, job)
}

// report sends the outcome of a job to the service.
type report struct {
	w        *worker
	job      Job
	leaseEnd time.Time // the latest the job's lease may end
}

// complete reports the result. A result the service refuses (too large,
// not JSON) fails the job instead, so that it does not sit active until
// its lease lapses. The answer is minimal: the payload and the result are
// not sent back.
func (r report) complete(ctx context.Context, result any) {
	_, err := r.retry(ctx, func(ctx context.Context) (Job, error) {
		return r.w.c.Complete(ctx, r.w.queue, r.job.ID, CompleteRequest{Token: r.job.Token, Result: result, Minimal: true})
	})
	switch {
	case err == nil:
		r.w.log.Info("Completed job", "job_id", r.job.ID)
	case errors.Is(err, ErrStale) || errors.Is(err, ErrGone):
		r.w.log.Warn("Lost job", "job_id", r.job.ID, "error", err)
	case errors.Is(err, errLeaseLapsed):
		r.w.log.Error("Gave up reporting job", "job_id", r.job.ID, "outcome", "completed", "error", err)
	default:
		r.fail(ctx, FailRequest{Token: r.job.Token, Error: "the result was refused: " + err.Error()})
	}
}

// fail reports a failed attempt, asking for a minimal answer.
func (r report) fail(ctx context.Context, req FailRequest) {
	req.Minimal = true
	failed, err := r.retry(ctx, func(ctx context.Context) (Job, error) {
		return r.w.c.Fail(ctx, r.w.queue, r.job.ID, req)
	})
	switch {
	case errors.Is(err, ErrStale) || errors.Is(err, ErrGone):
		r.w.log.Warn("Lost job", "job_id", r.job.ID, "error", err)
	case errors.Is(err, errLeaseLapsed):
		r.w.log.Error("Gave up reporting job", "job_id", r.job.ID, "outcome", "failed", "error", err)
	case err != nil:
		r.w.log.Error("Fail refused", "job_id", r.job.ID, "error", err)
	case failed.State == StateCancelled:
		r.w.log.Info("Cancelled job", "job_id", r.job.ID, "reason", failed.CancelReason)
	default:
		r.w.log.Info("Failed job", "job_id", r.job.ID, "error", req.Error, "state", failed.State)
	}
}

// retry calls f until it succeeds or fails in a way not worth retrying,
// pausing after each retryable error as a backoff says, for as long as
// the job's lease may hold. A report sent later would be refused once the
// service's sweep took the job back (which it does, counting a stall, so
// that the job runs again), so retry then gives up with errLeaseLapsed,
// after one last call at the lease's end.
//
// Each call has callTimeout. ctx is not cancelled by Work's stop, and the
// pauses do not end on it either: a stop promises that the jobs in hand
// are reported, and a service restarted with its workers (a deploy) is
// often back within the lease. The lease bounds how long a stop waits.
func (r report) retry(ctx context.Context, f func(context.Context) (Job, error)) (Job, error) {
	pauses, cancel := context.WithDeadline(ctx, r.leaseEnd)
	defer cancel()
	var b backoff
	for {
		callCtx, cancel := context.WithTimeout(ctx, callTimeout)
		out, err := f(callCtx)
		cancel()
		if err == nil || !Retryable(err) {
			return out, err
		}
		if pauses.Err() != nil {
			return out, fmt.Errorf("%w: %w", errLeaseLapsed, err)
		}
		d := min(b.delay(err), time.Until(r.leaseEnd))
		r.w.log.Warn("Backing off", "seconds", d.Seconds(), "error", err, "job_id", r.job.ID)
		sleep(pauses, d)
	}
}
