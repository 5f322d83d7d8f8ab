package client

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"
)

// work runs one claimed job to its end: the handler with a heartbeat
// beside it, then the report of its outcome. Neither is cut short by ctx,
// Work's stop signal: a job in hand is finished.
func (w *worker) work(ctx context.Context, job Job) {
	w.log.Info("Claimed job", "job_id", job.ID)
	base := context.WithoutCancel(ctx)
	jobCtx, cancelJob := context.WithCancelCause(base)
	defer cancelJob(nil)
	h := w.startHeartbeat(base, job, cancelJob)
	result, err := w.call(context.WithValue(jobCtx, heartbeatKey{}, h), job)
	h.stop()
	cause := context.Cause(jobCtx)
	var cancel *CancelRequestedError
	switch {
	case errors.Is(cause, ErrLeaseLost):
		w.log.Warn("Lost job", "job_id", job.ID, "error", cause)
	case err == nil:
		w.complete(base, job, result)
	case errors.As(cause, &cancel):
		w.fail(base, job, FailRequest{Token: job.Token, Error: cancelledText(cancel.Reason)})
	default:
		w.fail(base, job, failRequest(job, err))
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

// complete reports the result. A result the service refuses (too large,
// not JSON) fails the job instead, so that it does not sit active until
// its lease lapses.
func (w *worker) complete(ctx context.Context, job Job, result any) {
	_, err := retry(ctx, w, job, func(ctx context.Context) (Job, error) {
		return w.c.Complete(ctx, w.queue, job.ID, CompleteRequest{Token: job.Token, Result: result})
	})
	switch {
	case err == nil:
		w.log.Info("Completed job", "job_id", job.ID)
	case errors.Is(err, ErrStale) || errors.Is(err, ErrGone):
		w.log.Warn("Lost job", "job_id", job.ID, "error", err)
	default:
		w.fail(ctx, job, FailRequest{Token: job.Token, Error: "the result was refused: " + err.Error()})
	}
}

// fail reports a failed attempt.
func (w *worker) fail(ctx context.Context, job Job, req FailRequest) {
	failed, err := retry(ctx, w, job, func(ctx context.Context) (Job, error) {
		return w.c.Fail(ctx, w.queue, job.ID, req)
	})
	switch {
	case errors.Is(err, ErrStale) || errors.Is(err, ErrGone):
		w.log.Warn("Lost job", "job_id", job.ID, "error", err)
	case err != nil:
		w.log.Error("Fail refused", "job_id", job.ID, "error", err)
	case failed.State == StateCancelled:
		w.log.Info("Cancelled job", "job_id", job.ID, "reason", failed.CancelReason)
	default:
		w.log.Info("Failed job", "job_id", job.ID, "error", req.Error, "state", failed.State)
	}
}

// retry calls f until it succeeds or fails in a way not worth retrying,
// pausing after each retryable error as a backoff says. Each call has
// callTimeout; ctx is not cancelled by Work's stop, so a report goes on
// until it is answered.
func retry(ctx context.Context, w *worker, job Job, f func(context.Context) (Job, error)) (Job, error) {
	var b backoff
	for {
		callCtx, cancel := context.WithTimeout(ctx, callTimeout)
		out, err := f(callCtx)
		cancel()
		if err == nil || !Retryable(err) {
			return out, err
		}
		d := b.delay(err)
		w.log.Warn("Backing off", "seconds", d.Seconds(), "error", err, "job_id", job.ID)
		time.Sleep(d)
	}
}
