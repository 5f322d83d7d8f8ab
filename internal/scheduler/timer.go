package scheduler

import (
	"cmp"
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/lease"
	"github.com/echo-mq/echo_mq/lua"
)

// Defaults of a Timer.
const (
	// DefaultRefresh is how often a timer reads every watched queue's next
	// tick again, in case it missed a change another replica announced.
	DefaultRefresh = 5 * time.Second
	// dueBatch is how many due schedules one call reads and fires.
	dueBatch = 100
	// retryAfterError is how long a queue whose call failed waits.
	retryAfterError = time.Second
)

// TimerConfig configures a Timer; zero fields take the defaults.
type TimerConfig struct {
	Refresh time.Duration // DefaultRefresh
	Logger  *slog.Logger
	// OnTicks, when set, is told what each fire of a queue's ticks did (for
	// metrics).
	OnTicks func(queue string, t Ticks)
}

// Ticks counts what one fire did: jobs enqueued, ticks skipped by overlap
// "skip", ticks missed (misfire); and how late each fired tick's job was
// enqueued, on the server's clock.
type Ticks struct {
	Fired, Skipped, Missed int
	Lateness               []time.Duration
}

// Timer fires the due ticks of every queue's schedules. Every service
// replica runs one: it keeps each watched queue's earliest next tick in
// memory and sleeps until the first comes, so an idle schedule costs no
// call at all; a change announced on keyspace.SchedulesChannel, and a
// reread every Refresh, keep that picture current. When a tick comes every
// replica's timer plans it, and the fire script lets exactly one through
// (docs/design.md#schedules).
type Timer struct {
	svc    *Service
	config TimerConfig

	mu     sync.Mutex
	next   map[string]int64 // queue -> its earliest next tick, server ms; 0: look now; -1: none
	offset time.Duration    // the server's clock minus this process's, from the last reply
}

// NewTimer returns a Timer over svc's schedules.
func NewTimer(svc *Service, config TimerConfig) *Timer {
	config.Refresh = cmp.Or(config.Refresh, DefaultRefresh)
	if config.Logger == nil {
		config.Logger = slog.New(slog.DiscardHandler)
	}
	return &Timer{svc: svc, config: config, next: map[string]int64{}}
}

// Run fires ticks until ctx ends. The subscription reconnects by itself
// when Redis comes back, and the timer then reads every queue again.
func (t *Timer) Run(ctx context.Context) {
	ps := t.svc.rdb.Subscribe(ctx, keyspace.SchedulesChannel(t.svc.prefix))
	defer ps.Close()
	messages := ps.ChannelWithSubscriptions()
	refresh := time.NewTicker(t.config.Refresh)
	defer refresh.Stop()
	wake := time.NewTimer(0)
	defer wake.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case msg := <-messages:
			switch m := msg.(type) {
			case *redis.Subscription:
				t.refresh(ctx) // (re)subscribed: a change may have gone unheard
			case *redis.Message:
				if keyspace.ValidQueueName(m.Payload) {
					t.lookNow(m.Payload)
				}
			}
		case <-refresh.C:
			t.refresh(ctx)
		case <-wake.C:
		}
		t.fireDue(ctx)
		wake.Reset(t.wait())
	}
}

// lookNow has the next pass read queue's schedules.
func (t *Timer) lookNow(queue string) {
	t.mu.Lock()
	t.next[queue] = 0
	t.mu.Unlock()
}

// refresh reads the watched queues again: each is looked at in the next
// pass. A queue left without schedules is unwatched.
func (t *Timer) refresh(ctx context.Context) {
	queues, err := t.svc.rdb.SMembers(ctx, keyspace.SchedulesKey(t.svc.prefix)).Result()
	if err != nil {
		t.config.Logger.Warn("Cannot read the queues with schedules", "error", err)
		return
	}
	watched := make(map[string]int64, len(queues))
	t.mu.Lock()
	idle := map[string]bool{}
	for _, q := range queues {
		if keyspace.ValidQueueName(q) {
			watched[q] = 0
			idle[q] = t.next[q] == -1
		}
	}
	t.next = watched
	t.mu.Unlock()
	for q, none := range idle {
		if none {
			t.unwatchIfEmpty(ctx, q)
		}
	}
}

// unwatchIfEmpty takes a queue that has no schedules left out of the
// watched set. A schedule put meanwhile is written before its queue is
// added (Service.watch), so looking again after the removal and adding it
// back when one came keeps it watched.
func (t *Timer) unwatchIfEmpty(ctx context.Context, queue string) {
	names := keyspace.NewQueue(t.svc.prefix, queue).ScheduleNames()
	if n, err := t.svc.rdb.ZCard(ctx, names).Result(); err != nil || n > 0 {
		return
	}
	key := keyspace.SchedulesKey(t.svc.prefix)
	if t.svc.rdb.SRem(ctx, key, queue).Err() != nil {
		return
	}
	if n, err := t.svc.rdb.ZCard(ctx, names).Result(); err != nil || n > 0 {
		t.svc.rdb.SAdd(ctx, key, queue)
	}
}

// wait is how long until the earliest next tick of any queue, on this
// process's clock (at most Refresh).
func (t *Timer) wait() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	wait := t.config.Refresh
	for _, next := range t.next {
		if next >= 0 {
			wait = min(wait, time.Until(time.UnixMilli(next).Add(-t.offset)))
		}
	}
	return max(wait, 0)
}

// fireDue fires the ticks of every queue whose earliest tick has come.
func (t *Timer) fireDue(ctx context.Context) {
	t.mu.Lock()
	now := time.Now().Add(t.offset).UnixMilli()
	var due []string
	for q, next := range t.next {
		if next >= 0 && next <= now {
			due = append(due, q)
		}
	}
	t.mu.Unlock()
	for _, q := range due {
		if ctx.Err() != nil {
			return
		}
		earliest, err := t.fireQueue(ctx, q)
		if err != nil {
			t.config.Logger.Warn("Cannot fire a queue's schedules; retrying", "queue", q, "error", err)
			earliest = time.Now().Add(t.offset + retryAfterError).UnixMilli()
		}
		t.mu.Lock()
		if _, watched := t.next[q]; watched {
			t.next[q] = earliest
		}
		t.mu.Unlock()
	}
}

// fireQueue fires queue's due ticks, a batch at a time, and answers its
// earliest next tick (-1: none).
func (t *Timer) fireQueue(ctx context.Context, queue string) (int64, error) {
	for {
		sent := time.Now()
		reply, err := t.svc.run(ctx, queue, lua.ScheduleDueArgs{Limit: dueBatch})
		if err != nil {
			return 0, err
		}
		now, earliest, due, err := parseDue(reply)
		if err != nil {
			return 0, err
		}
		t.setOffset(now, sent)
		if len(due) == 0 {
			return earliest, nil
		}
		fires := make([]lua.Fire, 0, len(due))
		for _, sch := range due {
			fires = append(fires, t.plan(queue, sch, now))
		}
		out, err := t.svc.fire(ctx, queue, fires)
		if err != nil {
			return 0, err
		}
		t.count(queue, fires, out)
		if len(due) < dueBatch {
			return out.earliest, nil
		}
	}
}

// plan is the fire of sch's due tick at now. A schedule whose definition
// cannot be read any more (written by a service version that this one
// cannot read) is ended, loudly, rather than read again and again.
func (t *Timer) plan(queue string, sch Schedule, now time.Time) lua.Fire {
	f := lua.Fire{Name: sch.Name, Version: sch.Version, Tick: sch.Next.UnixMilli(), OverlapSkip: sch.Overlap == OverlapSkip}
	cadence, err := sch.Cadence()
	if err != nil {
		t.config.Logger.Error("A schedule cannot be read; it fires no more", "queue", queue, "schedule", sch.Name, "error", err)
		return f
	}
	p := cadence.Due(sch.Next, now, sch.Misfire, sch.Window)
	f.Next, f.Missed = unixMilli(p.Next), p.Missed
	if !p.Fire.IsZero() {
		nj := sch.Job
		nj.ID = TickJobID(sch.Name, p.Fire)
		f.Job = lease.ScriptJob(nj)
	}
	return f
}

// TickJobID is the id of the job schedule name enqueues for tick:
// "<name>:<tick in ms since the epoch>".
func TickJobID(name string, tick time.Time) string {
	return name + ":" + strconv.FormatInt(tick.UnixMilli(), 10)
}

// count tells OnTicks what a fire did. Lateness is that of the ticks
// fired on time (a catch-up's is the outage's).
func (t *Timer) count(queue string, fires []lua.Fire, out fired) {
	if t.config.OnTicks == nil {
		return
	}
	var ticks Ticks
	for i, o := range out.outcomes {
		switch o.outcome {
		case outcomeFired:
			ticks.Fired++
			if o.job != nil && fires[i].Missed == 0 {
				ticks.Lateness = append(ticks.Lateness, o.job.CreatedAt.Sub(time.UnixMilli(fires[i].Tick)))
			}
		case outcomeSkipped:
			ticks.Skipped++
		}
		if o.outcome != outcomeStale {
			ticks.Missed += fires[i].Missed
		}
	}
	if ticks.Fired+ticks.Skipped+ticks.Missed > 0 {
		t.config.OnTicks(queue, ticks)
	}
}

// setOffset learns the server's clock from a reply's now: the server read
// it about half way between sending and receiving.
func (t *Timer) setOffset(now, sent time.Time) {
	mid := sent.Add(time.Since(sent) / 2)
	t.mu.Lock()
	t.offset = now.Sub(mid)
	t.mu.Unlock()
}

// parseDue reads schedule_due.lua's reply.
func parseDue(reply any) (time.Time, int64, []Schedule, error) {
	items, ok := reply.([]any)
	if !ok || len(items) != 3 {
		return time.Time{}, 0, nil, errUnexpected("schedule_due", reply)
	}
	now, _ := items[0].(int64)
	earliest, _ := items[1].(int64)
	records, _ := items[2].([]any)
	due := make([]Schedule, len(records))
	for i, r := range records {
		var err error
		if due[i], err = parseRecord(r); err != nil {
			return time.Time{}, 0, nil, err
		}
	}
	return time.UnixMilli(now).UTC(), earliest, due, nil
}
