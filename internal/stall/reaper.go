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
	DefaultInterval   = 5 * time.Second
	DefaultBatchSize  = 1000
	DefaultAuditEvery = time.Hour
	// DefaultClusterEvery is how often at most a reaper reads a Cluster's
	// due indexes, 16,384 keys whatever the number of queues: at every
	// pass of the default interval, at one pass in 25 of a 200 ms one.
	DefaultClusterEvery = DefaultInterval
)

// maxRounds bounds how many batches of due queues one pass takes.
const maxRounds = 100

// ReaperConfig configures a Reaper; zero fields take the defaults.
type ReaperConfig struct {
	Interval   time.Duration // between passes; DefaultInterval
	MaxStalled int           // DefaultMaxStalled
	BatchSize  int           // jobs per script call, and queues per batch; DefaultBatchSize
	// MaxAge is how long a queue's events are kept, and an empty queue
	// after its last event; DefaultMaxAge.
	MaxAge time.Duration
	// AuditEvery is how often every known queue is visited besides the
	// due index, BatchSize queues a pass; DefaultAuditEvery.
	AuditEvery time.Duration
	// ClusterEvery is how often at most a Cluster's due indexes are read,
	// one key per slot; DefaultClusterEvery.
	ClusterEvery time.Duration
	Logger       *slog.Logger
	// OnSwept, when set, is told what each sweep of a queue moved (for
	// metrics).
	OnSwept func(queue string, swept Swept)
	// OnPromoted, when set, is told how many due delayed jobs the reaper
	// moved to pending in a queue.
	OnPromoted func(queue string, n int)
	// OnForgotten, when set, is told of each empty queue the reaper
	// forgot (for metrics and the index of active queues).
	OnForgotten func(queue string)
}

// Reaper does the queues' due work once per interval: it sweeps lapsed
// leases, ends expired jobs and promotes due delayed ones, in batches
// until a batch comes back short, of the queues whose time in the due
// index has come (docs/design.md#the-sweep), never of every queue; then
// settles each (Service.Settle), which forgets an empty one whose events
// aged out. Besides, it audits the registry: from its start and every
// AuditEvery it visits every known queue, BatchSize a pass, so that a
// queue the index does not know (one a previous release wrote) gets its
// place in it. Several replicas may run one each: every step is an atomic
// script, and a reaper passes over a queue another replica's reaper took
// within half an interval (TakeTurn), so a queue is visited once or twice
// per interval however many replicas there are, and at least once while
// any replica runs.
type Reaper struct {
	svc    *Service
	config ReaperConfig
	cancel context.CancelFunc
	done   sync.WaitGroup

	audit     []string  // the queues the audit under way has yet to visit
	auditStep int       // how many of them a pass visits
	nextAudit time.Time // when the next audit starts
	nextIndex time.Time // on a Cluster, when the due indexes are read next
}

// NewReaper returns a Reaper over svc's queues.
func NewReaper(svc *Service, config ReaperConfig) *Reaper {
	config.Interval = cmp.Or(config.Interval, DefaultInterval)
	config.MaxStalled = cmp.Or(config.MaxStalled, DefaultMaxStalled)
	config.BatchSize = cmp.Or(config.BatchSize, DefaultBatchSize)
	config.MaxAge = cmp.Or(config.MaxAge, DefaultMaxAge)
	config.AuditEvery = cmp.Or(config.AuditEvery, DefaultAuditEvery)
	config.ClusterEvery = cmp.Or(config.ClusterEvery, DefaultClusterEvery)
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

// Pass makes one pass now, as the loop does once per interval: the due
// queues, batch after batch while batches come back full, then the
// audit's next queues. It passes over the queues whose turn another
// replica has, goes on past a queue that fails and returns the first
// error. A Pass is not safe to run concurrently with another.
func (r *Reaper) Pass(ctx context.Context) (Swept, error) {
	var total Swept
	var firstErr error
	note := func(err error) {
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	for range r.rounds() {
		queues, err := r.svc.DueQueues(ctx, r.config.BatchSize)
		note(err)
		visited := 0
		for _, queue := range queues {
			mine, err := r.reapQueue(ctx, queue, &total)
			note(err)
			if mine && err == nil {
				visited++
			}
		}
		if len(queues) < r.config.BatchSize || visited == 0 {
			break
		}
	}
	queues, err := r.audited(ctx)
	note(err)
	for _, queue := range queues {
		_, err := r.reapQueue(ctx, queue, &total)
		note(err)
	}
	return total, firstErr
}

// rounds is how many batches of due queues this pass may take: none on a
// Cluster whose indexes were read less than ClusterEvery ago (less half an
// interval, so that every pass of the default interval reads them).
func (r *Reaper) rounds() int {
	if !r.svc.cluster() {
		return maxRounds
	}
	now := time.Now()
	if now.Before(r.nextIndex) {
		return 0
	}
	r.nextIndex = now.Add(r.config.ClusterEvery - r.config.Interval/2)
	return maxRounds
}

// audited takes the next queues of the audit, starting one when its time
// has come: the names of the registry then. The first audit, at start
// (where a previous release's queues are not in the index yet), takes
// BatchSize a pass; a later one spreads its queues over AuditEvery, so
// that it costs an idle deployment a steady trickle, not a burst.
func (r *Reaper) audited(ctx context.Context) ([]string, error) {
	var err error
	if len(r.audit) == 0 && !time.Now().Before(r.nextAudit) {
		first := r.nextAudit.IsZero()
		r.nextAudit = time.Now().Add(r.config.AuditEvery)
		// A registry read that fails part way still gives the names read
		// before it.
		r.audit, err = r.svc.queues.All(ctx)
		r.auditStep = r.config.BatchSize
		if !first {
			r.auditStep = max(1, min(r.auditStep, len(r.audit)*int(r.config.Interval)/int(r.config.AuditEvery)+1))
		}
	}
	n := min(len(r.audit), r.auditStep)
	batch := r.audit[:n]
	r.audit = r.audit[n:]
	return batch, err
}

// reapQueue settles queue, and when it has due work does it, batch by
// batch, and settles it again, when this reaper gets the queue's turn
// (mine).
func (r *Reaper) reapQueue(ctx context.Context, queue string, total *Swept) (mine bool, err error) {
	if mine, err := r.svc.TakeTurn(ctx, queue, max(r.config.Interval/2, time.Millisecond)); err != nil || !mine {
		return false, err
	}
	settled, err := r.svc.Settle(ctx, queue, r.config.MaxAge)
	if err == nil && settled.Work {
		if err := r.dueWork(ctx, queue, total); err != nil {
			return true, err
		}
		settled, err = r.svc.Settle(ctx, queue, r.config.MaxAge)
	}
	if err == nil && settled.Owes {
		err = r.svc.owes(ctx, queue)
	}
	if err != nil || !settled.Forgotten {
		return true, err
	}
	r.config.Logger.Debug("Reaper forgot an empty queue", "queue", queue)
	if r.config.OnForgotten != nil {
		r.config.OnForgotten(queue)
	}
	return true, r.svc.forget(ctx, queue)
}

// dueWork sweeps queue's lapsed leases, ends its expired jobs, trims the
// finished jobs its retention lets go (Trim) and promotes its due delayed
// ones, batch by batch.
func (r *Reaper) dueWork(ctx context.Context, queue string, total *Swept) error {
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
	for more := true; more; {
		var err error
		if _, more, err = r.svc.Trim(ctx, queue, r.config.BatchSize); err != nil {
			return err
		}
	}
	for {
		moved, err := r.svc.PromoteDue(ctx, queue, r.config.BatchSize)
		if r.config.OnPromoted != nil && moved > 0 {
			r.config.OnPromoted(queue, moved)
		}
		if err != nil || moved < r.config.BatchSize {
			return err
		}
	}
}
