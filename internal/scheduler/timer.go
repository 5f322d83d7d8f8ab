package scheduler

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"strconv"
	"strings"
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
	// parallel is how many queues a timer fires at once.
	parallel = 8
	// retryFirst is how long a queue whose fire failed waits before it is
	// looked at again, doubled per failure in a row up to retryMost.
	retryFirst = 50 * time.Millisecond
	retryMost  = 5 * time.Second
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

	mu       sync.Mutex
	next     map[string]int64 // queue -> its earliest next tick, server ms; 0: look now; -1: none
	failures map[string]int   // queue -> its fires that failed in a row
	offset   time.Duration    // the server's clock minus this process's, from the last reply
}

// NewTimer returns a Timer over svc's schedules.
func NewTimer(svc *Service, config TimerConfig) *Timer {
	config.Refresh = cmp.Or(config.Refresh, DefaultRefresh)
	if config.Logger == nil {
		config.Logger = slog.New(slog.DiscardHandler)
	}
	return &Timer{svc: svc, config: config, next: map[string]int64{}, failures: map[string]int{}}
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

// fireDue fires the ticks of every queue whose earliest tick has come, up
// to parallel queues at once, so that many queues due at one time (every
// minutely schedule at the minute) are not served one after the other.
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
	slots := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for _, q := range due {
		if ctx.Err() != nil {
			break
		}
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			earliest, err := t.fireQueue(ctx, q)
			t.mu.Lock()
			defer t.mu.Unlock()
			if err != nil {
				earliest = t.retry(q, err)
			} else {
				delete(t.failures, q)
			}
			if _, watched := t.next[q]; watched {
				t.next[q] = earliest
			}
		}()
	}
	wg.Wait()
}

// retry is when a queue whose fire failed with err is looked at again
// (server ms): soon, for a tick is on time only within schedule.Grace,
// then backing off while the failures go on (Redis down). Its first
// failure in a row is logged at warn, the rest at debug. t.mu is held.
func (t *Timer) retry(queue string, err error) int64 {
	n := t.failures[queue]
	t.failures[queue] = n + 1
	level := slog.LevelWarn
	if n > 0 {
		level = slog.LevelDebug
	}
	t.config.Logger.Log(context.Background(), level, "Cannot fire a queue's schedules; retrying", "queue", queue, "error", err, "failures", n+1)
	wait := min(retryFirst<<min(n, 10), retryMost)
	return time.Now().Add(t.offset + wait).UnixMilli()
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
		fires := make([]lua.Fire, 0, len(due))
		onTime := make([][]time.Time, 0, len(due))
		for _, d := range due {
			f, ticks, err := d.plan(now)
			if err != nil {
				t.config.Logger.Warn("A schedule cannot be read; looking at it again later", "queue", queue,
					"schedule", d.sch.Name, "error", err, "again_in", parkFor)
				f = park(d.sch, now)
			}
			fires, onTime = append(fires, f), append(onTime, ticks)
		}
		if len(fires) > 0 {
			out, err := t.svc.fire(ctx, queue, fires)
			if err != nil {
				return 0, err
			}
			t.count(queue, fires, out, onTime)
			earliest = out.earliest
		}
		if len(due) < dueBatch {
			return earliest, nil
		}
	}
}

// dueRecord is one record of schedule_due.lua's reply: the schedule, and
// why its definition could not be read (nil when it could).
type dueRecord struct {
	sch Schedule
	err error
}

// plan is the fire of the schedule's due ticks at now, and the ticks of it
// that are on time.
func (d dueRecord) plan(now time.Time) (lua.Fire, []time.Time, error) {
	if d.err != nil {
		return lua.Fire{}, nil, d.err
	}
	return plan(d.sch, now)
}

// parkFor is how long a schedule that cannot be read (its definition
// written by a newer service version, its zone gone from this one's time
// zone database) is put off: its next tick moves on, so that it does not
// hold its queue's earliest tick in the past and keep the timer awake, and
// a replica that can read it fires it then.
const parkFor = 5 * time.Second

// park is the fire that puts sch off by parkFor, enqueueing nothing.
func park(sch Schedule, now time.Time) lua.Fire {
	return lua.Fire{Name: sch.Name, Version: sch.Version, Tick: sch.Next.UnixMilli(), Next: now.Add(parkFor).UnixMilli()}
}

// plan is the fire of sch's due ticks at now, and the ticks of it that
// are on time.
func plan(sch Schedule, now time.Time) (lua.Fire, []time.Time, error) {
	cadence, err := sch.Cadence()
	if err != nil {
		return lua.Fire{}, nil, err
	}
	p := cadence.Due(sch.Next, now, sch.Misfire, sch.Window)
	f := lua.Fire{Name: sch.Name, Version: sch.Version, Tick: sch.Next.UnixMilli(), Next: unixMilli(p.Next),
		Missed: p.Missed, OverlapSkip: sch.Overlap == OverlapSkip, Job: lease.ScriptJob(sch.Job)}
	for _, tick := range p.Fires() {
		f.IDs = append(f.IDs, TickJobID(sch.Name, tick))
	}
	return f, p.OnTime, nil
}

// TickJobID is the id of the job schedule name enqueues for tick:
// "<name>:<tick in ms since the epoch>".
func TickJobID(name string, tick time.Time) string {
	return name + ":" + strconv.FormatInt(tick.UnixMilli(), 10)
}

// count tells OnTicks what a fire did. Lateness is that of the on-time
// ticks' jobs (a catch-up's would be the outage's).
func (t *Timer) count(queue string, fires []lua.Fire, out fired, onTime [][]time.Time) {
	if t.config.OnTicks == nil {
		return
	}
	var ticks Ticks
	for i, o := range out.outcomes {
		if o.stale {
			continue
		}
		ticks.Skipped += o.skipped
		ticks.Missed += fires[i].Missed
		for _, e := range o.jobs {
			if !e.Created {
				continue
			}
			ticks.Fired++
			if tick, ok := tickOf(e.Job.ID); ok && slices.ContainsFunc(onTime[i], func(t time.Time) bool { return t.UnixMilli() == tick }) {
				ticks.Lateness = append(ticks.Lateness, e.Job.CreatedAt.Sub(time.UnixMilli(tick)))
			}
		}
	}
	if ticks.Fired+ticks.Skipped+ticks.Missed > 0 {
		t.config.OnTicks(queue, ticks)
	}
}

// tickOf is the tick (ms) of a job id TickJobID made.
func tickOf(id string) (int64, bool) {
	i := strings.LastIndexByte(id, ':')
	if i < 0 {
		return 0, false
	}
	ms, err := strconv.ParseInt(id[i+1:], 10, 64)
	return ms, err == nil
}

// setOffset learns the server's clock from a reply's now: the server read
// it about half way between sending and receiving.
func (t *Timer) setOffset(now, sent time.Time) {
	mid := sent.Add(time.Since(sent) / 2)
	t.mu.Lock()
	t.offset = now.Sub(mid)
	t.mu.Unlock()
}

// parseDue reads schedule_due.lua's reply: the server's time, the
// earliest next tick, and the due schedules.
func parseDue(reply any) (now time.Time, earliest int64, due []dueRecord, err error) {
	items, ok := reply.([]any)
	if !ok || len(items) != 3 {
		return time.Time{}, 0, nil, errUnexpected("schedule_due", reply)
	}
	ms, _ := items[0].(int64)
	earliest, _ = items[1].(int64)
	records, _ := items[2].([]any)
	for _, r := range records {
		sch, err := parseRecord(r)
		if sch.Name == "" {
			return time.Time{}, 0, nil, err // not a record at all
		}
		due = append(due, dueRecord{sch: sch, err: err})
	}
	return time.UnixMilli(ms).UTC(), earliest, due, nil
}
