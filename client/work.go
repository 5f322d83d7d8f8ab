package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// DefaultWait is how long Work's claims wait for a job when WithWait is
// not given.
const DefaultWait = 10 * time.Second

// MaxWait is the longest wait a claim may ask for: the service refuses a
// longer one.
const MaxWait = 30 * time.Second

const (
	// claimMargin is how long past its wait Work waits for a claim's
	// answer before it gives up on it as a connection error.
	claimMargin = 10 * time.Second
	// callTimeout bounds each complete and fail that Work sends, and each
	// extend unless a third of the lease is shorter.
	callTimeout = 30 * time.Second
	// idlePause is the pause between empty claims when the wait is 0, so
	// that a poll without a wait does not spin.
	idlePause = time.Second
)

// Handler does the work of one claimed job and returns its result (any
// value that encodes as JSON, or nil for none) or an error. An error
// fails the job, unless it is SnoozeFor's: then the job is put back for
// later without spending its attempt.
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
// 10 s). It also bounds how long a stop waits for a claim already sent.
// A d over MaxWait (30 s), which the service would refuse, is taken as
// MaxWait: Work asks again when a wait ends empty, so a longer wait would
// change nothing else.
func WithWait(d time.Duration) WorkOption {
	return func(c *workConfig) { c.wait = min(max(0, d), MaxWait) }
}

// WithConcurrency sets how many jobs Work runs at once (default 1), each
// with a claim loop of its own.
func WithConcurrency(n int) WorkOption { return func(c *workConfig) { c.concurrency = max(1, n) } }

// WithWorker sets the worker's name shown on the jobs it claims (default
// "go-<host>-<pid>").
func WithWorker(name string) WorkOption { return func(c *workConfig) { c.worker = name } }

// WithLogger makes Work log one line per event to l: claimed, completed,
// failed, snoozed, cancelled, stopping and stopped at Info; backing off,
// lost and an extend refused at Warn; a claim refused, a report refused
// or given up and a handler's panic at Error. l's handler decides which levels it keeps.
//
// Without WithLogger, Work logs to slog.Default() at Warn and Error only:
// a worker that is backing off, losing jobs or giving up is never silent,
// and a busy worker does not write a line per job into a program's log
// unasked. To silence Work, pass slog.New(slog.DiscardHandler).
func WithLogger(l *slog.Logger) WorkOption { return func(c *workConfig) { c.log = l } }

func newWorkConfig(opts []WorkOption) workConfig {
	host, _ := os.Hostname()
	cfg := workConfig{lease: DefaultLease, wait: DefaultWait, concurrency: 1,
		worker: fmt.Sprintf("go-%s-%d", host, os.Getpid())}
	for _, opt := range opts {
		opt(&cfg)
	}
	if cfg.log == nil {
		cfg.log = slog.New(warnAndAbove{slog.Default().Handler()})
	}
	return cfg
}

// warnAndAbove passes on the records of Warn level and above only: what
// Work logs when no logger is given.
type warnAndAbove struct{ slog.Handler }

func (h warnAndAbove) Enabled(ctx context.Context, level slog.Level) bool {
	return level >= slog.LevelWarn && h.Handler.Enabled(ctx, level)
}

func (h warnAndAbove) WithAttrs(attrs []slog.Attr) slog.Handler {
	return warnAndAbove{h.Handler.WithAttrs(attrs)}
}

func (h warnAndAbove) WithGroup(name string) slog.Handler {
	return warnAndAbove{h.Handler.WithGroup(name)}
}

// Work claims jobs of queue and runs handle on each, until ctx is done.
//
// It long-polls for jobs (WithWait), holding each for WithLease and
// extending the lease every third of it while handle runs, with the
// latest Progress. When handle returns, Work completes the job with the
// result, or fails it with the error's text (the service retries it with
// backoff; Fatal and RetryIn change that). When the error is SnoozeFor's,
// Work snoozes the job instead: it is claimable again after the delay,
// and the attempt is not spent. A panic in handle is recovered and fails
// the job with "panic: <value>".
//
// When an extend says a cancel was requested, Work cancels handle's ctx
// with a *CancelRequestedError cause; if handle then returns an error, the
// job is failed with "cancelled: <reason>" and becomes cancelled (if it
// returns a result, it finished anyway and is completed). When an extend
// answers ErrStale or ErrGone, the job is no longer this worker's: Work
// cancels handle's ctx with an ErrLeaseLost cause and reports nothing.
//
// On an error Retryable accepts (a 502, 503, 504 or 429 answer, a refused or
// reset connection, a timeout), Work waits the answer's Retry-After, or
// else 0.5 s doubling up to 30 s, and sends the same call again;
// repeating a complete, a fail or a snooze is safe. An extend gives up
// after a third of the lease, so that a hung one is retried before the
// lease lapses. A complete, a fail or a snooze is retried until the job's
// lease would have lapsed (counted from the last claim or extend
// answered): then the service's sweep takes the job back and runs it
// again, so Work logs that it gave up the report and goes on.
//
// When ctx is done Work stops claiming, lets the jobs in hand finish and
// be reported, and returns nil. A claim already sent is not cut short (a
// claim cut short after the service leased a job would leave that job
// stranded until its lease lapsed): it is answered within the wait, and a
// job it brings is worked too. With the service unreachable, a stop thus
// waits up to a lease (and a report's last call) for the reports.
//
// Work returns an error when a claim fails in a way that asking again
// cannot mend: refused for good (a wrong API key, an invalid queue name
// or option) or not sent (a TLS certificate that is not trusted, a host
// name that does not resolve); it returns after the jobs in hand are
// finished.
//
// Without WithLogger, Work logs its warnings and errors (backing off, a
// claim refused, a report given up) to slog.Default(): see WithLogger.
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
		claimedAt := time.Now()
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
			w.work(ctx, job, claimedAt)
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

// SnoozeFor returns the error a Handler returns when its job cannot go
// ahead yet (a rate limit upstream, a file not there yet, a lock someone
// else holds), which is not a failure: Work snoozes the job instead of
// failing it (Client.Snooze). The job becomes delayed for d (pending at
// once when d <= 0) and is claimed again then, with its attempts as
// before this claim: a job snoozed many times keeps its whole budget. A
// job whose cancel was requested is cancelled instead. Work recognises
// the error with errors.As, so it may be wrapped (fmt.Errorf("...: %w",
// SnoozeFor(d))). A d over a year is refused by the service: Work then
// fails the job with the refusal.
func SnoozeFor(d time.Duration) error { return &snoozeError{delay: max(0, d)} }

// snoozeError is SnoozeFor's error: how long to snooze the job.
type snoozeError struct{ delay time.Duration }

func (e *snoozeError) Error() string { return "client: snooze for " + e.delay.String() }

// snooze reports that the handler snoozed the job with err, a SnoozeFor
// error. A snooze the service refuses (a delay over a year) fails the job
// instead, so that it does not sit active until its lease lapses.
func (r report) snooze(ctx context.Context, err error) {
	var se *snoozeError
	errors.As(err, &se)
	snoozed, err := r.retry(ctx, func(ctx context.Context) (Job, error) {
		return r.w.c.Snooze(ctx, r.w.queue, r.job.ID, r.job.Token, se.delay)
	})
	switch {
	case errors.Is(err, ErrStale) || errors.Is(err, ErrGone):
		r.w.log.Warn("Lost job", "job_id", r.job.ID, "error", err)
	case errors.Is(err, errLeaseLapsed):
		r.w.log.Error("Gave up reporting job", "job_id", r.job.ID, "outcome", "snoozed", "error", err)
	case err != nil:
		r.fail(ctx, FailRequest{Token: r.job.Token, Error: "the snooze was refused: " + err.Error()})
	case snoozed.State == StateCancelled:
		r.w.log.Info("Cancelled job", "job_id", r.job.ID, "reason", snoozed.CancelReason)
	default:
		r.w.log.Info("Snoozed job", "job_id", r.job.ID, "delay", se.delay, "state", snoozed.State)
	}
}
