package client

import (
	"errors"
	"time"
)

// The causes (context.Cause) of a handler's context cancelled by Work.
var (
	// ErrCancelRequested matches a *CancelRequestedError: someone
	// cancelled the job while it ran.
	ErrCancelRequested = errors.New("client: cancel requested")
	// ErrLeaseLost: an extend was answered ErrStale or ErrGone (which the
	// cause also wraps): the job is no longer this worker's, its result
	// will not be reported.
	ErrLeaseLost = errors.New("client: lease lost")
)

// CancelRequestedError is the cause of a handler's context cancelled
// because someone cancelled its job, with the reason they gave. Stop at
// the next safe point and return an error: the job becomes cancelled.
//
//	var c *client.CancelRequestedError
//	if errors.As(context.Cause(ctx), &c) {
//		log.Printf("cancelled: %s", c.Reason)
//	}
type CancelRequestedError struct {
	Reason string
}

// Error returns "client: cancel requested: <reason>".
func (e *CancelRequestedError) Error() string {
	return "client: cancel requested: " + e.Reason
}

// Is makes errors.Is(err, ErrCancelRequested) true.
func (e *CancelRequestedError) Is(target error) bool { return target == ErrCancelRequested }

// Fatal marks a handler's error as final: Work fails the job with no
// retry, and it becomes dead. Fatal(nil) is nil.
func Fatal(err error) error {
	if err == nil {
		return nil
	}
	return &failError{err: err, fatal: true}
}

// RetryIn asks Work to retry the job after d (at once when d <= 0)
// instead of after its backoff, attempts allowing. RetryIn(nil, d) is nil.
func RetryIn(err error, d time.Duration) error {
	if err == nil {
		return nil
	}
	return &failError{err: err, retry: true, retryIn: d}
}

// failError is a handler's error with how to fail its job.
type failError struct {
	err     error
	fatal   bool
	retry   bool
	retryIn time.Duration
}

func (e *failError) Error() string { return e.err.Error() }
func (e *failError) Unwrap() error { return e.err }

// failRequest is how to fail job after the handler's err.
func failRequest(job Job, err error) FailRequest {
	req := FailRequest{Token: job.Token, Error: err.Error()}
	var fe *failError
	if errors.As(err, &fe) {
		req.Fatal = fe.fatal
		if fe.retry {
			req.RetryIn = fe.retryIn
			if req.RetryIn <= 0 {
				req.RetryIn = -1 // at once
			}
		}
	}
	return req
}
