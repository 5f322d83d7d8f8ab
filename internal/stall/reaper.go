package stall

import (
	"cmp"
	"context"
	"log/slog"
	"sync"
	"time"
)

// Defaults of the reaper.
const (
	DefaultInterval  = 5 * time.Second
	DefaultBatchSize = 1000
)

// ReaperConfig configures a Reaper; zero fields take the defaults.
type ReaperConfig struct {
	Interval   time.Duration // between passes; DefaultInterval
	MaxStalled int           // DefaultMaxStalled
	BatchSize  int           // jobs per script call; DefaultBatchSize
	Logger     *slog.Logger
	// OnSwept, when set, is told what each sweep of a queue moved (for
	// metrics).
	OnSwept func(queue string, swept Swept)
}

// Reaper sweeps every known queue and promotes its due delayed jobs, once per
// interval, in batches until a batch comes back short. Several replicas may
// run one each: every step is an atomic script, and a reaper passes over a
// queue another replica's reaper took within half an interval (TakeTurn),
// so a queue is swept once or twice per interval however many replicas
// there are, and at least once while any replica runs.
type Reaper struct {
	svc    *Service
	config ReaperConfig
	cancel context.CancelFunc
	done   sync.WaitGroup
}

// NewReaper returns a Reaper over svc's queues.
func NewReaper(svc *Service, config ReaperConfig) *Reaper {
	config.Interval = cmp.Or(config.Interval, DefaultInterval)
	config.MaxStalled = cmp.Or(config.MaxStalled, DefaultMaxStalled)
	config.BatchSize = cmp.Or(config.BatchSize, DefaultBatchSize)
	if config.Logger == nil {
		config.Logger = slog.New(slog.DiscardHandler)
	}
	return &Reaper{svc: svc, config: config}
}

// Start runs the reaper's loop in the background until ctx ends or Stop.
func (r *Reaper) Start(ctx context.Context) {
	ctx, r.cancel = context.WithCancel(ctx)
	r.done.Add(1)
	go func() {
		defer r.done.Done()
		r.loop(ctx)
	}()
}

// Stop ends the loop and waits for the pass under way to finish.
func (r *Reaper) Stop() {
	if r.cancel != nil {
		r.cancel()
	}
	r.done.Wait()
}

func (r *Reaper) loop(ctx context.Context) {
	ticker := time.NewTicker(r.config.Interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		swept, err := r.Pass(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			r.config.Logger.Warn("Reaper pass failed", "error", err)
		case swept.Len() > 0:
			r.config.Logger.Info("Reaper swept lapsed jobs",
				"recovered", len(swept.Recovered), "dead", len(swept.Dead), "cancelled", len(swept.Cancelled),
				"timed_out", len(swept.Retried), "expired", len(swept.Expired))
		}
	}
}

// Pass makes one pass over every known queue now, as the loop does once per
// interval, skipping the queues whose turn another replica has. It goes on
// past a queue that fails and returns the first error.
func (r *Reaper) Pass(ctx context.Context) (Swept, error) {
	var total Swept
	// A registry read that fails part way still gives the queues read
	// before it: they are swept, and the error is returned.
	queues, firstErr := r.svc.queues.All(ctx)
	for _, queue := range queues {
		err := r.reapQueue(ctx, queue, &total)
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return total, firstErr
}

// reapQueue sweeps queue and promotes its due jobs, batch by batch, when
// this reaper gets the queue's turn.
func (r *Reaper) reapQueue(ctx context.Context, queue string, total *Swept) error {
	if mine, err := r.svc.TakeTurn(ctx, queue, max(r.config.Interval/2, time.Millisecond)); err != nil || !mine {
		return err
	}
	p := SweepParams{MaxStalled: r.config.MaxStalled, Limit: r.config.BatchSize}
	for {
		swept, err := r.svc.Sweep(ctx, queue, p)
		if err != nil {
			return err
		}
		if r.config.OnSwept != nil && swept.Len() > 0 {
			r.config.OnSwept(queue, swept)
		}
		total.Recovered = append(total.Recovered, swept.Recovered...)
		total.Dead = append(total.Dead, swept.Dead...)
		total.Cancelled = append(total.Cancelled, swept.Cancelled...)
		total.Retried = append(total.Retried, swept.Retried...)
		if swept.Len() < p.Limit {
			break
		}
	}
	for more := true; more; {
		var expired []string
		var err error
		if expired, more, err = r.svc.Expire(ctx, queue, r.config.BatchSize); err != nil {
			return err
		}
		if r.config.OnSwept != nil && len(expired) > 0 {
			r.config.OnSwept(queue, Swept{Expired: expired})
		}
		total.Expired = append(total.Expired, expired...)
	}
	for {
		moved, err := r.svc.PromoteDue(ctx, queue, r.config.BatchSize)
		if err != nil || moved < r.config.BatchSize {
			return err
		}
	}
}
