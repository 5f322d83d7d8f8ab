package scheduler

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/lease"
	"github.com/echo-mq/echo_mq/lua"
)

// Actor is who asks for a change, for its event.
type Actor = lua.Actor

// changedTries bounds how often a put, a resume or a run reads the clock
// or the schedule again when it changed between the read and the write.
const changedTries = 5

// Service manages the schedules of every queue under one key prefix.
type Service struct {
	rdb     redis.UniversalClient
	prefix  string
	queues  *keyspace.Registry
	scripts *lua.Runner
}

// Option configures a Service.
type Option func(*Service)

// Registry makes the Service admit queues through reg (its limit, shared
// with the other services); the default is a registry of its own with no
// limit.
func Registry(reg *keyspace.Registry) Option {
	return func(s *Service) { s.queues = reg }
}

// NewService returns a Service for the keys under prefix.
func NewService(rdb redis.UniversalClient, prefix string, opts ...Option) *Service {
	s := &Service{rdb: rdb, prefix: prefix, queues: keyspace.NewRegistry(rdb, prefix), scripts: lua.NewRunner(rdb)}
	for _, o := range opts {
		o(s)
	}
	return s
}

func (s *Service) run(ctx context.Context, queue string, c interface{ Call(keyspace.Queue) lua.Call }) (any, error) {
	return s.scripts.Reply(ctx, c.Call(keyspace.NewQueue(s.prefix, queue)))
}

// Put creates (created true) or replaces schedule name of queue, paused or
// not. Its first tick is the cadence's first after now within its window.
// Errors: a definition whose cadence is invalid wraps schedule.ErrCadence;
// keyspace.ErrQuota when queue is new and the registry is full.
func (s *Service) Put(ctx context.Context, queue, name string, d Definition, paused bool, by Actor) (Schedule, bool, error) {
	cadence, err := d.Cadence()
	if err != nil {
		return Schedule{}, false, err
	}
	text, err := d.encode()
	if err != nil {
		return Schedule{}, false, err
	}
	if err := s.watch(ctx, queue); err != nil {
		return Schedule{}, false, err
	}
	var reply any
	for try := 0; ; try++ {
		args := lua.SchedulePutArgs{Name: name, Definition: text, Paused: paused, By: by}
		if !paused {
			now, err := s.now(ctx)
			if err != nil {
				return Schedule{}, false, err
			}
			args.Next = unixMilli(cadence.First(now, d.Window))
		}
		reply, err = s.run(ctx, queue, args)
		if !changed(err) || try == changedTries {
			break // the first tick passed while it was computed: compute it again
		}
	}
	if err != nil {
		return Schedule{}, false, err
	}
	// Again after the write: a timer that saw the queue without schedules
	// just before may have taken it out of the watched set (unwatchIfEmpty).
	if err := s.watch(ctx, queue); err != nil {
		return Schedule{}, false, err
	}
	items, ok := reply.([]any)
	if !ok || len(items) != 2 {
		return Schedule{}, false, errUnexpected("schedule_put", reply)
	}
	sch, err := parseRecord(items[1])
	s.changed(ctx, queue)
	return sch, items[0] == int64(1), err
}

// Get reads one schedule. Errors: ErrNotFound.
func (s *Service) Get(ctx context.Context, queue, name string) (Schedule, error) {
	list, _, err := s.list(ctx, queue, lua.ScheduleListArgs{Name: name})
	if err != nil {
		return Schedule{}, err
	}
	if len(list) == 0 {
		return Schedule{}, notFound(queue, name)
	}
	return list[0], nil
}

// List reads a page of up to limit of queue's schedules by name, after
// cursor ("" for the first page), and the next page's cursor ("" on the
// last).
func (s *Service) List(ctx context.Context, queue, cursor string, limit int) ([]Schedule, string, error) {
	return s.list(ctx, queue, lua.ScheduleListArgs{Cursor: cursor, Limit: limit})
}

func (s *Service) list(ctx context.Context, queue string, args lua.ScheduleListArgs) ([]Schedule, string, error) {
	reply, err := s.run(ctx, queue, args)
	if err != nil {
		return nil, "", err
	}
	items, ok := reply.([]any)
	if !ok || len(items) != 2 {
		return nil, "", errUnexpected("schedule_list", reply)
	}
	records, _ := items[1].([]any)
	out := make([]Schedule, len(records))
	for i, r := range records {
		if out[i], err = parseRecord(r); err != nil {
			return nil, "", err
		}
	}
	next, _ := items[0].(string)
	return out, next, nil
}

// Delete deletes one schedule; the jobs it enqueued stay. Errors:
// ErrNotFound.
func (s *Service) Delete(ctx context.Context, queue, name string, by Actor) error {
	reply, err := s.run(ctx, queue, lua.ScheduleDeleteArgs{Name: name, By: by})
	if err != nil {
		return err
	}
	if reply != int64(1) {
		return notFound(queue, name)
	}
	s.changed(ctx, queue)
	return nil
}

// SetPaused pauses or resumes one schedule and answers it. A resumed
// schedule fires from its first tick after now: ticks passed while it was
// paused are not caught up. Errors: ErrNotFound.
func (s *Service) SetPaused(ctx context.Context, queue, name string, paused bool, by Actor) (Schedule, error) {
	for try := 0; ; try++ {
		args := lua.SchedulePauseArgs{Name: name, Paused: paused, By: by}
		if !paused {
			sch, err := s.Get(ctx, queue, name)
			if err != nil {
				return Schedule{}, err
			}
			if args.Next, err = s.firstTick(ctx, sch.Definition); err != nil {
				return Schedule{}, err
			}
			args.Version = sch.Version
		}
		reply, err := s.run(ctx, queue, args)
		if changed(err) && try < changedTries {
			continue
		}
		if err != nil {
			return Schedule{}, notFoundOf(err, queue, name)
		}
		s.changed(ctx, queue)
		return parseRecord(reply)
	}
}

// RunNow enqueues one job of the schedule now, outside its cadence (paused
// or not), with id "<name>:run:<ms>", and answers it. It counts as a run:
// the next tick of an overlap "skip" schedule waits for it. Errors:
// ErrNotFound.
func (s *Service) RunNow(ctx context.Context, queue, name string) (lease.Enqueued, error) {
	for try := 0; ; try++ {
		sch, err := s.Get(ctx, queue, name)
		if err != nil {
			return lease.Enqueued{}, err
		}
		now, err := s.now(ctx)
		if err != nil {
			return lease.Enqueued{}, err
		}
		id := name + ":run:" + strconv.FormatInt(now.UnixMilli(), 10)
		out, err := s.fire(ctx, queue, []lua.Fire{{Name: name, Version: sch.Version, IDs: []string{id},
			Job: lease.ScriptJob(sch.Job)}})
		if err != nil {
			return lease.Enqueued{}, err
		}
		if o := out.outcomes[0]; !o.stale {
			return o.jobs[0], nil
		}
		if try == changedTries {
			return lease.Enqueued{}, fmt.Errorf("schedule %s kept changing while it was run", name)
		}
		// Changed between the read and the fire: read it again.
	}
}

// fireOutcome is what schedule_fire.lua did about one fire.
type fireOutcome struct {
	stale   bool // the schedule had changed since the fire was planned: nothing done
	skipped int  // ticks overlap "skip" passed over
	jobs    []lease.Enqueued
}

type fired struct {
	earliest int64 // ms; -1: none
	outcomes []fireOutcome
}

// fire runs schedule_fire.lua. Its answer stands even when adding the
// queue to the known queues fails after it: the jobs are made, and an
// enqueue of the queue adds it later (the registry heals itself).
func (s *Service) fire(ctx context.Context, queue string, fires []lua.Fire) (fired, error) {
	reply, err := s.run(ctx, queue, lua.ScheduleFireArgs{Fires: fires})
	if err != nil {
		return fired{}, err
	}
	items, ok := reply.([]any)
	if !ok || len(items) != 3 {
		return fired{}, errUnexpected("schedule_fire", reply)
	}
	_ = s.queues.Remember(ctx, queue, items[0] == int64(1))
	list, _ := items[2].([]any)
	out := fired{outcomes: make([]fireOutcome, len(list))}
	out.earliest, _ = items[1].(int64)
	for i, item := range list {
		f, _ := item.([]any)
		if len(f) != 3 {
			return fired{}, errUnexpected("schedule_fire", item)
		}
		o := &out.outcomes[i]
		o.stale = f[0] == "stale"
		skipped, _ := f[1].(int64)
		o.skipped = int(skipped)
		replies, _ := f[2].([]any)
		for _, r := range replies {
			pair, _ := r.([]any)
			if len(pair) != 2 {
				return fired{}, errUnexpected("schedule_fire", r)
			}
			j, err := job.Parse(queue, pair[1])
			if err != nil {
				return fired{}, err
			}
			o.jobs = append(o.jobs, lease.Enqueued{Job: j, Created: pair[0] == int64(1)})
		}
	}
	return out, nil
}

// changed reports whether err is a schedule script's EMQCHANGED: what it
// was given was computed from a state that has changed since.
func changed(err error) bool { return redis.HasErrorPrefix(err, "EMQCHANGED") }

// firstTick is d's first tick after now (ms), 0 for none.
func (s *Service) firstTick(ctx context.Context, d Definition) (int64, error) {
	cadence, err := d.Cadence()
	if err != nil {
		return 0, err
	}
	now, err := s.now(ctx)
	if err != nil {
		return 0, err
	}
	return unixMilli(cadence.First(now, d.Window)), nil
}

// now is the Redis server's clock, the one ticks are measured on.
func (s *Service) now(ctx context.Context) (time.Time, error) {
	return s.rdb.Time(ctx).Result()
}

// watch adds queue to the known queues, refused with keyspace.ErrQuota
// when it is new and there is no place for it, and then to the queues
// every replica's timer watches, before its first schedule is written.
func (s *Service) watch(ctx context.Context, queue string) error {
	if _, err := s.queues.Admit(ctx, queue); err != nil {
		return err
	}
	return s.rdb.SAdd(ctx, keyspace.SchedulesKey(s.prefix), queue).Err()
}

// changed tells every replica's timer that queue's schedules changed. It
// is a hint: a timer that misses it reads the queue again within
// refreshEvery.
func (s *Service) changed(ctx context.Context, queue string) {
	_ = s.rdb.Publish(ctx, keyspace.SchedulesChannel(s.prefix), queue).Err()
}

// notFoundOf is err, or ErrNotFound naming schedule name of queue for a
// script's EMQGONE.
func notFoundOf(err error, queue, name string) error {
	if errors.Is(err, job.ErrGone) {
		return notFound(queue, name)
	}
	return err
}

// errUnexpected is the error of a script reply not of the shape its header
// gives: a bug, or another version's script.
func errUnexpected(script string, reply any) error {
	return fmt.Errorf("%s reply: unexpected %T", script, reply)
}
