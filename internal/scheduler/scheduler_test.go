package scheduler_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/admin"
	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/lease"
	"github.com/echo-mq/echo_mq/internal/redistest"
	"github.com/echo-mq/echo_mq/internal/schedule"
	"github.com/echo-mq/echo_mq/internal/scheduler"
	"github.com/echo-mq/echo_mq/lua"
)

func TestMain(m *testing.M) { os.Exit(redistest.Run(m)) }

var prefixes atomic.Int64

// fixture is a scheduler and an operator plane under a key prefix of the
// test's own (the timers watch every queue under their prefix), and a
// queue.
type fixture struct {
	rdb    redis.UniversalClient
	prefix string
	svc    *scheduler.Service
	admin  *admin.Service
	queue  string
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	rdb := redistest.Client(t)
	prefix := "emqsched" + strconv.FormatInt(prefixes.Add(1), 10)
	return fixture{rdb: rdb, prefix: prefix, svc: scheduler.NewService(rdb, prefix),
		admin: admin.NewService(rdb, prefix), queue: redistest.Queue(t)}
}

var by = scheduler.Actor{Name: "test", Role: "admin"}

func every(d time.Duration) scheduler.Definition {
	return scheduler.Definition{Every: d, Job: lease.NewJob{Payload: json.RawMessage(`{"n":1}`)},
		Overlap: scheduler.OverlapAllow, Misfire: schedule.MisfireOnce}
}

func (f fixture) put(t *testing.T, name string, d scheduler.Definition) scheduler.Schedule {
	t.Helper()
	s, _, err := f.svc.Put(context.Background(), f.queue, name, d, false, by)
	if err != nil {
		t.Fatalf("Put %s: %v", name, err)
	}
	return s
}

// startTimers runs n timers (one per replica, each with its own client)
// until the test ends.
func (f fixture) startTimers(t *testing.T, n int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, n)
	for range n {
		timer := scheduler.NewTimer(scheduler.NewService(redistest.Client(t), f.prefix), scheduler.TimerConfig{})
		go func() { timer.Run(ctx); done <- struct{}{} }()
	}
	t.Cleanup(func() {
		cancel()
		for range n {
			<-done
		}
	})
}

// jobs is every job of the queue in the states a tick's job can be in.
func (f fixture) jobs(t *testing.T) []job.Job {
	t.Helper()
	var all []job.Job
	for _, state := range []string{"pending", "active", "completed"} {
		page, err := f.admin.List(context.Background(), f.queue, state, "", 1000)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, page.Jobs...)
	}
	return all
}

// ticksOf reads the tick of each job id "<name>:<ms>", sorted, failing on
// any other id.
func ticksOf(t *testing.T, name string, jobs []job.Job) []int64 {
	t.Helper()
	var ticks []int64
	for _, j := range jobs {
		ms, err := strconv.ParseInt(strings.TrimPrefix(j.ID, name+":"), 10, 64)
		if err != nil || !strings.HasPrefix(j.ID, name+":") {
			t.Fatalf("job id %q is not a tick of %s", j.ID, name)
		}
		ticks = append(ticks, ms)
	}
	slices.Sort(ticks)
	return ticks
}

func TestPutGetListPauseResumeDelete(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	d := every(time.Minute)
	s, created, err := f.svc.Put(ctx, f.queue, "hourly", d, false, by)
	if err != nil || !created {
		t.Fatalf("Put: created %v, %v", created, err)
	}
	now := time.Now()
	if s.Next.Before(now.Add(-time.Second)) || s.Next.After(now.Add(time.Minute+time.Second)) || s.Next.UnixMilli()%60000 != 0 {
		t.Errorf("next %v: want the next whole minute after %v", s.Next, now)
	}
	d.Overlap = scheduler.OverlapSkip
	s2, created, err := f.svc.Put(ctx, f.queue, "hourly", d, false, by)
	if err != nil || created || s2.Version == s.Version || s2.Overlap != scheduler.OverlapSkip || !s2.CreatedAt.Equal(s.CreatedAt) {
		t.Fatalf("replace: created %v, version %s after %s, overlap %s, created_at %v/%v, %v",
			created, s2.Version, s.Version, s2.Overlap, s2.CreatedAt, s.CreatedAt, err)
	}
	paused, err := f.svc.SetPaused(ctx, f.queue, "hourly", true, by)
	if err != nil || !paused.Paused || !paused.Next.IsZero() {
		t.Fatalf("pause: %+v, %v", paused, err)
	}
	resumed, err := f.svc.SetPaused(ctx, f.queue, "hourly", false, by)
	if err != nil || resumed.Paused || resumed.Next.IsZero() {
		t.Fatalf("resume: %+v, %v", resumed, err)
	}
	for _, name := range []string{"b", "c", "a"} {
		f.put(t, name, every(time.Hour))
	}
	var names []string
	for cursor := ""; ; {
		page, next, err := f.svc.List(ctx, f.queue, cursor, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range page {
			names = append(names, s.Name)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if want := []string{"a", "b", "c", "hourly"}; !slices.Equal(names, want) {
		t.Errorf("listed %v, want %v", names, want)
	}
	if err := f.svc.Delete(ctx, f.queue, "hourly", by); err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{
		f.svc.Delete(ctx, f.queue, "hourly", by),
		func() error { _, err := f.svc.Get(ctx, f.queue, "hourly"); return err }(),
		func() error { _, err := f.svc.SetPaused(ctx, f.queue, "hourly", true, by); return err }(),
		func() error { _, err := f.svc.RunNow(ctx, f.queue, "hourly"); return err }(),
	} {
		if !errors.Is(err, scheduler.ErrNotFound) || !errors.Is(err, job.ErrGone) {
			t.Errorf("on a deleted schedule: %v, want ErrNotFound", err)
		}
	}
}

func TestPutRefusesABadCadenceAndWritesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, d := range []scheduler.Definition{
		{Cron: "61 * * * *"}, {Cron: "* * * * *", TZ: "Mars/Olympus"}, {Every: time.Millisecond},
		{}, {Cron: "@hourly", Every: time.Hour}, {Every: time.Hour, TZ: "Europe/Berlin"},
	} {
		if _, _, err := f.svc.Put(context.Background(), f.queue, "bad", d, false, by); !errors.Is(err, schedule.ErrCadence) {
			t.Errorf("Put %+v: %v, want ErrCadence", d, err)
		}
	}
	if _, err := f.svc.Get(context.Background(), f.queue, "bad"); !errors.Is(err, scheduler.ErrNotFound) {
		t.Errorf("a refused schedule was written: %v", err)
	}
}

// Three timers over one Redis fire every tick of every schedule exactly
// once: the ticks of each schedule are consecutive multiples of its
// interval, each one job.
func TestThreeTimersFireEachTickOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const schedules = 10
	for i := range schedules {
		f.put(t, fmt.Sprintf("s%d", i), every(200*time.Millisecond))
	}
	f.startTimers(t, 3)
	time.Sleep(2500 * time.Millisecond)
	for i := range schedules { // so that the jobs and the runs below are counted at one time
		if _, err := f.svc.SetPaused(context.Background(), f.queue, fmt.Sprintf("s%d", i), true, by); err != nil {
			t.Fatal(err)
		}
	}
	jobs := f.jobs(t)
	byName := map[string][]job.Job{}
	for _, j := range jobs {
		name, _, _ := strings.Cut(j.ID, ":")
		byName[name] = append(byName[name], j)
	}
	for i := range schedules {
		name := fmt.Sprintf("s%d", i)
		ticks := ticksOf(t, name, byName[name])
		if len(ticks) < 8 {
			t.Errorf("%s fired %d ticks in 2.5 s, want about 12", name, len(ticks))
			continue
		}
		for k := 1; k < len(ticks); k++ {
			if ticks[k]-ticks[k-1] != 200 {
				t.Errorf("%s: tick %d after %d: a tick was lost or fired twice", name, ticks[k], ticks[k-1])
			}
		}
		s, err := f.svc.Get(context.Background(), f.queue, name)
		if err != nil {
			t.Fatal(err)
		}
		if s.Runs != int64(len(ticks)) || s.Missed != 0 {
			t.Errorf("%s: runs %d, missed %d, for %d jobs", name, s.Runs, s.Missed, len(ticks))
		}
	}
}

// overlap "skip": while the first tick's job waits unclaimed, later ticks
// enqueue nothing and count in skipped.
func TestOverlapSkipSkipsWhileThePreviousJobWaits(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	d := every(200 * time.Millisecond)
	d.Overlap = scheduler.OverlapSkip
	f.put(t, "nightly", d)
	f.startTimers(t, 2)
	time.Sleep(1200 * time.Millisecond)
	s, err := f.svc.Get(context.Background(), f.queue, "nightly")
	if err != nil {
		t.Fatal(err)
	}
	if jobs := f.jobs(t); len(jobs) != 1 || s.Runs != 1 || s.Skipped < 3 || s.LastJobID != jobs[0].ID {
		t.Errorf("%d jobs, runs %d, skipped %d, last job %s", len(jobs), s.Runs, s.Skipped, s.LastJobID)
	}
}

// Ticks missed while no timer ran: misfire "once" gives one catch-up job,
// for the latest of them, "skip" none; both count the rest in missed, and
// the cadence resumes.
func TestMisfireAfterThreeMissedTicks(t *testing.T) {
	t.Parallel()
	for _, misfire := range []string{schedule.MisfireOnce, schedule.MisfireSkip} {
		t.Run(misfire, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			d := every(2 * time.Second)
			d.Misfire = misfire
			put := f.put(t, "report", d)
			// Three ticks pass unfired, the last 1.2 s ago: more than the
			// grace, so that it too was missed.
			time.Sleep(time.Until(put.Next.Add(5200 * time.Millisecond)))
			started := time.Now()
			f.startTimers(t, 1)
			time.Sleep(400 * time.Millisecond) // the catch-up, before the next tick
			s, err := f.svc.Get(context.Background(), f.queue, "report")
			if err != nil {
				t.Fatal(err)
			}
			jobs := f.jobs(t)
			switch misfire {
			case schedule.MisfireOnce:
				ticks := ticksOf(t, "report", jobs)
				if want := put.Next.Add(4 * time.Second).UnixMilli(); len(ticks) != 1 || ticks[0] != want || s.Missed != 2 {
					t.Errorf("once: ticks %v (want the third, %d), missed %d (want 2)", ticks, want, s.Missed)
				}
			case schedule.MisfireSkip:
				if len(jobs) != 0 || s.Missed != 3 {
					t.Errorf("skip: %d jobs, missed %d (want none and 3)", len(jobs), s.Missed)
				}
			}
			if !s.Next.After(started) {
				t.Errorf("next %v: the cadence did not resume after %v", s.Next, started)
			}
		})
	}
}

func TestRunNowEnqueuesOutsideTheCadence(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	if _, _, err := f.svc.Put(ctx, f.queue, "digest", every(time.Hour), true, by); err != nil {
		t.Fatal(err)
	}
	out, err := f.svc.RunNow(ctx, f.queue, "digest")
	if err != nil || !out.Created || !strings.HasPrefix(out.Job.ID, "digest:run:") || out.Job.State != job.StatePending {
		t.Fatalf("RunNow: %+v, %v", out, err)
	}
	s, err := f.svc.Get(ctx, f.queue, "digest")
	if err != nil || s.Runs != 1 || s.LastJobID != out.Job.ID || !s.Paused || s.LastRunAt.IsZero() {
		t.Errorf("after a run: %+v, %v", s, err)
	}
}

// A schedule whose end has passed has no next tick and fires nothing.
func TestWindowEnds(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	d := every(time.Second)
	d.Window = schedule.Window{End: time.Now().Add(-time.Minute)}
	if s := f.put(t, "over", d); !s.Next.IsZero() {
		t.Errorf("next %v after the end", s.Next)
	}
	d.Window = schedule.Window{Start: time.Now().Add(time.Hour)}
	if s := f.put(t, "later", d); s.Next.Before(d.Window.Start) {
		t.Errorf("next %v before the start %v", s.Next, d.Window.Start)
	}
}

// run runs a schedule script on the fixture's queue and answers its reply.
func (f fixture) run(t *testing.T, c interface{ Call(keyspace.Queue) lua.Call }) (any, error) {
	t.Helper()
	return lua.NewRunner(f.rdb).Run(context.Background(), c.Call(keyspace.NewQueue(f.prefix, f.queue))).Result()
}

// A put whose next tick has passed by the time its script runs (its clock
// read was slow) writes nothing: a fire may have taken that tick, and
// writing it back would fire it again. The service computes it anew.
func TestAPutWithAPassedTickIsRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	past := time.Now().Add(-time.Second).UnixMilli()
	_, err := f.run(t, lua.SchedulePutArgs{Name: "late", Definition: "{}", Next: past, By: by})
	if !redis.HasErrorPrefix(err, "EMQCHANGED") {
		t.Fatalf("a put of a passed tick answered %v, want EMQCHANGED", err)
	}
	if _, err := f.svc.Get(context.Background(), f.queue, "late"); !errors.Is(err, scheduler.ErrNotFound) {
		t.Errorf("the refused put wrote the schedule: %v", err)
	}
}

// A schedule deleted and made again under its name has a version no fire
// planned from the old one can match, even for the same next tick.
func TestAScheduleMadeAgainVoidsTheOldPlans(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	old := f.put(t, "daily", every(time.Hour))
	if err := f.svc.Delete(ctx, f.queue, "daily", by); err != nil {
		t.Fatal(err)
	}
	made := f.put(t, "daily", every(time.Hour))
	if made.Version == old.Version {
		t.Fatalf("made again with the old version %s", old.Version)
	}
	// The old plan, for the new schedule's own next tick.
	reply, err := f.run(t, lua.ScheduleFireArgs{Fires: []lua.Fire{{Name: "daily", Version: old.Version,
		Tick: made.Next.UnixMilli(), IDs: []string{scheduler.TickJobID("daily", made.Next)}, Next: made.Next.Add(time.Hour).UnixMilli()}}})
	if err != nil {
		t.Fatal(err)
	}
	if outcome := reply.([]any)[2].([]any)[0].([]any)[0]; outcome != "stale" {
		t.Errorf("a fire planned from the old schedule was %v, want stale", outcome)
	}
	if jobs := f.jobs(t); len(jobs) != 0 {
		t.Errorf("the old plan enqueued %d jobs", len(jobs))
	}
}

// A fire of several on-time ticks (a replica a little late for a fast
// cadence) enqueues one job per tick; under overlap "skip" only the first,
// the others counted in skipped.
func TestAFireOfSeveralTicks(t *testing.T) {
	t.Parallel()
	for _, overlap := range []string{scheduler.OverlapAllow, scheduler.OverlapSkip} {
		t.Run(overlap, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			d := every(time.Hour)
			d.Overlap = overlap
			s := f.put(t, "fast", d)
			var ids []string
			for k := range 3 {
				ids = append(ids, scheduler.TickJobID("fast", s.Next.Add(time.Duration(k)*time.Second)))
			}
			if _, err := f.run(t, lua.ScheduleFireArgs{Fires: []lua.Fire{{Name: "fast", Version: s.Version, Tick: s.Next.UnixMilli(),
				IDs: ids, Next: s.Next.Add(time.Hour).UnixMilli(), OverlapSkip: overlap == scheduler.OverlapSkip,
				Job: lease.ScriptJob(d.Job)}}}); err != nil {
				t.Fatal(err)
			}
			got, err := f.svc.Get(context.Background(), f.queue, "fast")
			if err != nil {
				t.Fatal(err)
			}
			want := map[string][2]int64{scheduler.OverlapAllow: {3, 0}, scheduler.OverlapSkip: {1, 2}}[overlap]
			if n := int64(len(f.jobs(t))); n != want[0] || got.Runs != want[0] || got.Skipped != want[1] || !got.Next.Equal(s.Next.Add(time.Hour)) {
				t.Errorf("%d jobs, runs %d, skipped %d, next %v; want %d jobs and runs, %d skipped", n, got.Runs, got.Skipped, got.Next, want[0], want[1])
			}
		})
	}
}

// A schedule this service cannot read (here, a definition whose cadence it
// refuses; as one written by a newer version would be) is put off, and the
// queue's other schedules fire on time beside it.
func TestAnUnreadableScheduleDoesNotHoldItsQueue(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	healthy := every(200 * time.Millisecond)
	healthy.Misfire = schedule.MisfireSkip
	f.put(t, "healthy", healthy)
	f.put(t, "broken", every(200*time.Millisecond))
	if err := f.rdb.HSet(context.Background(), keyspace.NewQueue(f.prefix, f.queue).Schedules(), "broken", `{"every_ms":50}`).Err(); err != nil {
		t.Fatal(err)
	}
	f.startTimers(t, 1)
	time.Sleep(2 * time.Second)
	for _, name := range []string{"healthy", "broken"} {
		if _, err := f.svc.SetPaused(context.Background(), f.queue, name, true, by); err != nil && name == "healthy" {
			t.Fatal(err)
		}
	}
	s, err := f.svc.Get(context.Background(), f.queue, "healthy")
	if err != nil {
		t.Fatal(err)
	}
	ticks := ticksOf(t, "healthy", f.jobs(t))
	if len(ticks) < 7 || s.Missed != 0 || s.Runs != int64(len(ticks)) {
		t.Errorf("beside an unreadable schedule: %d ticks in 2 s of every 200 ms, runs %d, missed %d", len(ticks), s.Runs, s.Missed)
	}
}
