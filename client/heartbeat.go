package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
)

// heartbeat extends the lease of one job while its handler runs: every
// third of the lease, and at once when the handler reports progress. It
// cancels the handler's context when a cancel is requested or the job is
// lost, and keeps when the lease may end, for the report after it.
type heartbeat struct {
	w         *worker
	job       Job
	interval  time.Duration
	cancelJob context.CancelCauseFunc

	calls     context.Context // the extends' context, ended by stop
	stopCalls context.CancelFunc
	poke      chan struct{} // progress is waiting: extend now
	done      chan struct{} // closed when the loop has returned

	mu       sync.Mutex
	progress json.RawMessage // the latest progress not sent yet
	leaseEnd time.Time       // the latest the lease may end: see leaseEndAfter
}

type heartbeatKey struct{}

// startHeartbeat starts extending job's lease, which the claim answered
// at claimedAt; base is the context the extends derive from (detached
// from Work's stop).
func (w *worker) startHeartbeat(base context.Context, job Job, claimedAt time.Time, cancelJob context.CancelCauseFunc) *heartbeat {
	calls, stopCalls := context.WithCancel(base)
	h := &heartbeat{w: w, job: job, interval: w.cfg.lease / 3, cancelJob: cancelJob,
		calls: calls, stopCalls: stopCalls, poke: make(chan struct{}, 1), done: make(chan struct{}),
		leaseEnd: w.leaseEndAfter(claimedAt)}
	go h.loop()
	return h
}

// leaseEndAfter is the latest a lease granted by a call answered at t may
// end: the service starts the lease before it answers, so it ends at
// t+lease or sooner. Both ends are read on this machine's clock, so an
// offset between it and the service's clock does not matter.
func (w *worker) leaseEndAfter(t time.Time) time.Time { return t.Add(w.cfg.lease) }

// lastLeaseEnd returns the latest the job's lease may end, after the
// extends so far.
func (h *heartbeat) lastLeaseEnd() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.leaseEnd
}

// stop ends the heartbeat, cutting short an extend in flight, and waits
// for its loop to return.
func (h *heartbeat) stop() {
	h.stopCalls()
	<-h.done
}

// loop extends the lease until stopped. Extends start an interval apart
// (start to start), sooner after a retryable error: so an extend that
// hung until its timeout (an interval) is retried at once, and the lease
// still gets its renewal before it lapses.
func (h *heartbeat) loop() {
	defer close(h.done)
	var b backoff
	next := h.interval
	for h.pause(next) {
		started := time.Now()
		lease, err := h.extend()
		switch {
		case h.calls.Err() != nil:
			return // stopped while extending
		case err == nil:
			b.reset()
			next = h.interval
			if lease.CancelRequested {
				h.cancelJob(&CancelRequestedError{Reason: lease.CancelReason})
			}
		case errors.Is(err, ErrStale) || errors.Is(err, ErrGone):
			h.cancelJob(fmt.Errorf("%w: %w", ErrLeaseLost, err))
			return
		case Retryable(err):
			next = min(b.delay(err), h.interval)
			h.w.log.Warn("Backing off", "seconds", max(0, next-time.Since(started)).Seconds(),
				"error", err, "job_id", h.job.ID)
		default: // such as progress too large: the next extend goes without it
			h.w.log.Warn("Extend refused", "error", err, "job_id", h.job.ID)
			next = h.interval
		}
		next -= time.Since(started)
	}
}

// pause waits for d or a poke, and reports false when stopped.
func (h *heartbeat) pause(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-h.poke:
		return true
	case <-h.calls.Done():
		return false
	}
}

// extend renews the lease with the waiting progress. It gives up after an
// interval (or callTimeout, when shorter), so that an extend that hangs is
// retried while the lease still holds rather than outlive it. Progress
// that did not get through for a retryable reason waits for the next
// extend, unless the handler gave newer progress meanwhile.
func (h *heartbeat) extend() (Lease, error) {
	progress := h.takeProgress()
	ctx, cancel := context.WithTimeout(h.calls, min(callTimeout, h.interval))
	defer cancel()
	lease, err := h.w.c.Extend(ctx, h.w.queue, h.job.ID,
		ExtendRequest{Token: h.job.Token, Lease: h.w.cfg.lease, Progress: progress})
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case err == nil:
		h.leaseEnd = h.w.leaseEndAfter(time.Now())
	case Retryable(err) && h.progress == nil:
		h.progress = progress
	}
	return lease, err
}

func (h *heartbeat) takeProgress() json.RawMessage {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.progress
	h.progress = nil
	return p
}

// Progress stores v (encoded as JSON) as the progress of the job whose
// handler ctx is: it is sent with an extend in the background, at once,
// and the latest value wins when several come faster than extends. ctx
// must be (or derive from) the context Work gave the handler. A nil v
// only extends the lease now. Progress a handler gives just before it
// returns may not be sent.
func Progress(ctx context.Context, v any) error {
	h, ok := ctx.Value(heartbeatKey{}).(*heartbeat)
	if !ok {
		return errors.New("client: Progress needs the context Work gives a handler")
	}
	raw, err := marshal(v)
	if err != nil {
		return err
	}
	if raw != nil {
		h.mu.Lock()
		h.progress = raw
		h.mu.Unlock()
	}
	select {
	case h.poke <- struct{}{}:
	default: // an extend is due already
	}
	return nil
}
