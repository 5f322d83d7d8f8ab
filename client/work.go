package client

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// DefaultWait is how long Work's claims wait for a job when WithWait is
// not given.
const DefaultWait = 10 * time.Second

const (
	// claimMargin is how long past its wait Work waits for a claim's
	// answer before it gives up on it as a connection error.
	claimMargin = 10 * time.Second
	// callTimeout bounds each extend, complete and fail that Work sends.
	callTimeout = 30 * time.Second
	// idlePause is the pause between empty claims when the wait is 0, so
	// that a poll without a wait does not spin.
	idlePause = time.Second
)

// Handler does the work of one claimed job and returns its result (any
// value that encodes as JSON, or nil for none) or an error.
//
// Its ctx is cancelled when the job must stop: context.Cause(ctx) is then
// a *CancelRequestedError (errors.Is(cause, ErrCancelRequested)) when
// someone cancelled the job, or wraps ErrLeaseLost when the job is no
// longer this worker's. It is not cancelled when Work is told to stop:
// the jobs in hand are finished. Call Progress(ctx, v) to store progress.
type Handler func(ctx context.Context, job Job) (result any, err error)

// WorkOption configures Work.
type WorkOption func(*workConfig)

type workConfig struct {
	lease       time.Duration
	wait        time.Duration
	concurrency int
	worker      string
	log         *slog.Logger
}

// WithLease sets the lease each claim and extend asks for (default
// DefaultLease, 30 s; at least 100 ms). Work extends it every third of it
// while a handler runs.
func WithLease(d time.Duration) WorkOption {
	return func(c *workConfig) {
		if d > 0 {
			c.lease = d
		}
	}
}

// WithWait sets how long each claim waits for a job (default DefaultWait,
// 10 s; at most 30 s). It also bounds how long a stop waits for a claim
// already sent.
func WithWait(d time.Duration) WorkOption { return func(c *workConfig) { c.wait = max(0, d) } }

// WithConcurrency sets how many jobs Work runs at once (default 1), each
// with a claim loop of its own.
func WithConcurrency(n int) WorkOption { return func(c *workConfig) { c.concurrency = max(1, n) } }

// WithWorker sets the worker's name shown on the jobs it claims (default
// "go-<host>-<pid>").
func WithWorker(name string) WorkOption { return func(c *workConfig) { c.worker = name } }

// WithLogger makes Work log one line per event (claimed, completed,
// failed, cancelled, lost, backing off, stopping, stopped) to l. Work logs
// nothing without it.
func WithLogger(l *slog.Logger) WorkOption { return func(c *workConfig) { c.log = l } }

func newWorkConfig(opts []WorkOption) workConfig {
	host, _ := os.Hostname()
	cfg := workConfig{lease: DefaultLease, wait: DefaultWait, concurrency: 1,
		worker: fmt.Sprintf("go-%s-%d", host, os.Getpid()), log: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		opt(&cfg)
	}
	return cfg
}

// Work claims jobs of queue and runs handle on each, until ctx is done.
//
// It long-polls for jobs (WithWait), holding each for WithLease and
// extending the lease every third of it while handle runs, with the
// latest Progress. When handle returns, Work completes the job with the
// result, or fails it with the error's text (the service retries it with
// backoff; Fatal and RetryIn change that). A panic in handle is recovered
// and fails the job with "panic: <value>".
//
// When an extend says a cancel was requested, Work cancels handle's ctx
// with a *CancelRequestedError cause; if handle then returns an error, the
// job is failed with "cancelled: <reason>" and becomes cancelled (if it
// returns a result, it finished anyway and is completed). When an extend
// answers ErrStale or ErrGone, the job is no longer this worker's: Work
// cancels handle's ctx with an ErrLeaseLost cause and reports nothing.
//
// On a 502, 503 or 504 answer or a connection error, Work waits the
// answer's Retry-After, or else 0.5 s doubling up to 30 s, and sends the
// same call again; repeating a complete or a fail is safe.
//
// When ctx is done Work stops claiming, lets the jobs in hand finish and
// be reported, and returns nil. A claim already sent is not cut short (a
// claim cut short after the service leased a job would leave that job
// stranded until its lease lapsed): it is answered within the wait, and a
// job it brings is worked too. Work returns an error only when a claim is
// refused for good (a wrong API key, an invalid queue name or option),
// after the jobs in hand are finished.
func (c *Client) Work(ctx context.Context, queue string, handle Handler, opts ...WorkOption) error {
	w := &worker{c: c, queue: queue, handle: handle, cfg: newWorkConfig(opts)}
	w.log = w.cfg.log.With("queue", queue)
	return w.run(ctx)
}

// worker is one call of Work.
type worker struct {
	c      *Client
	queue  string
	handle Handler
	cfg    workConfig
	log    *slog.Logger

	errOnce sync.Once
	err     error // the first claim refused for good
}

// run starts the claim loops and waits for them all to end.
func (w *worker) run(ctx context.Context) error {
	claiming, stop := context.WithCancel(ctx)
	defer stop()
	stopping := context.AfterFunc(ctx, func() { w.log.Info("Stopping") })
	defer stopping()
	var wg sync.WaitGroup
	for range w.cfg.concurrency {
		wg.Go(func() {
			if err := w.loop(claiming); err != nil {
				w.errOnce.Do(func() { w.err = err })
				stop() // the other loops stop claiming too
			}
		})
	}
	wg.Wait()
	w.log.Info("Stopped")
	return w.err
}

// loop claims one job at a time and works it, until ctx is done or a claim
// is refused for good.
func (w *worker) loop(ctx context.Context) error {
	var b backoff
	for ctx.Err() == nil {
		jobs, err := w.claim(ctx)
		if err != nil && Retryable(err) {
			d := b.delay(err)
			w.log.Warn("Backing off", "seconds", d.Seconds(), "error", err)
			sleep(ctx, d)
			continue
		}
		if err != nil {
			w.log.Error("Claim refused", "error", err)
			return fmt.Errorf("claim from %s: %w", w.queue, err)
		}
		b.reset()
		for _, job := range jobs {
			w.work(ctx, job)
		}
		if len(jobs) == 0 && w.cfg.wait == 0 {
			sleep(ctx, idlePause)
		}
	}
	return nil
}

// claim asks for one job. The call is detached from ctx, the stop signal,
// and bounded by the wait plus a margin instead: see Work.
func (w *worker) claim(ctx context.Context) ([]Job, error) {
	callCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.cfg.wait+claimMargin)
	defer cancel()
	return w.c.Claim(callCtx, w.queue, ClaimRequest{Count: 1, Lease: w.cfg.lease, Wait: w.cfg.wait, Worker: w.cfg.worker})
}
