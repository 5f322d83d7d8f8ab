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
// lost.
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
}

type heartbeatKey struct{}

// startHeartbeat starts extending job's lease; base is the context the
// extends derive from (detached from Work's stop).
func (w *worker) startHeartbeat(base context.Context, job Job, cancelJob context.CancelCauseFunc) *heartbeat {
	calls, stopCalls := context.WithCancel(base)
	h := &heartbeat{w: w, job: job, interval: w.cfg.lease / 3, cancelJob: cancelJob,
		calls: calls, stopCalls: stopCalls, poke: make(chan struct{}, 1), done: make(chan struct{})}
	go h.loop()
	return h
}

// stop ends the heartbeat, cutting short an extend in flight, and waits
// for its loop to return.
func (h *heartbeat) stop() {
	h.stopCalls()
	<-h.done
}

func (h *heartbeat) loop() {
	defer close(h.done)
	var b backoff
	wait := h.interval
	for h.pause(wait) {
		lease, err := h.extend()
		switch {
		case h.calls.Err() != nil:
			return // stopped while extending
		case err == nil:
			b.reset()
			wait = h.interval
			if lease.CancelRequested {
				h.cancelJob(&CancelRequestedError{Reason: lease.CancelReason})
			}
		case errors.Is(err, ErrStale) || errors.Is(err, ErrGone):
			h.cancelJob(fmt.Errorf("%w: %w", ErrLeaseLost, err))
			return
		case Retryable(err):
			wait = min(b.delay(err), h.interval)
			h.w.log.Warn("Backing off", "seconds", wait.Seconds(), "error", err, "job_id", h.job.ID)
		default: // such as progress too large: the next extend goes without it
			h.w.log.Warn("Extend refused", "error", err, "job_id", h.job.ID)
			wait = h.interval
		}
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

// extend renews the lease with the waiting progress. Progress that did not
// get through for a retryable reason waits for the next extend, unless the
// handler gave newer progress meanwhile.
func (h *heartbeat) extend() (Lease, error) {
	progress := h.takeProgress()
	ctx, cancel := context.WithTimeout(h.calls, callTimeout)
	defer cancel()
	lease, err := h.w.c.Extend(ctx, h.w.queue, h.job.ID,
		ExtendRequest{Token: h.job.Token, Lease: h.w.cfg.lease, Progress: progress})
	if err != nil && Retryable(err) {
		h.mu.Lock()
		if h.progress == nil {
			h.progress = progress
		}
		h.mu.Unlock()
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
		return errors.New("emq: Progress needs the context Work gives a handler")
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
