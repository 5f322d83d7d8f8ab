package schedule

import "time"

// Misfire policies: what a schedule does about ticks missed while no
// service replica ran (docs/design.md#schedules).
const (
	MisfireOnce = "once" // one catch-up job, for the latest missed tick
	MisfireSkip = "skip" // none; the cadence resumes at the next tick
)

// Grace is how late a tick may fire and still count as on time: a tick is
// enqueued within a second of it, however many replicas run.
const Grace = time.Second

// Window bounds a schedule's ticks: none before Start, none after End
// (zero: unbounded).
type Window struct{ Start, End time.Time }

// First is a new schedule's first tick: the first after now within w, or
// the zero time when there is none.
func (c Cadence) First(now time.Time, w Window) time.Time {
	from := now
	if !w.Start.IsZero() && w.Start.After(from) {
		from = w.Start.Add(-time.Nanosecond) // a tick at Start itself counts
	}
	return w.bound(c.Next(from))
}

func (w Window) bound(t time.Time) time.Time {
	if !w.End.IsZero() && t.After(w.End) {
		return time.Time{}
	}
	return t
}

// Plan is what a replica does about a schedule whose next tick is due.
type Plan struct {
	// CatchUp is the latest tick missed, enqueued under MisfireOnce; zero:
	// none.
	CatchUp time.Time
	// OnTime are the ticks within Grace of now, oldest first: each is
	// enqueued (more than one when a fast cadence's replica is a little
	// late).
	OnTime []time.Time
	Next   time.Time // the schedule's next tick after now; zero: none (it has ended)
	// Missed counts ticks more than Grace late that were not enqueued (all
	// of them under MisfireSkip; all but CatchUp under MisfireOnce).
	Missed int
}

// Fires are the ticks the plan enqueues a job for, oldest first.
func (p Plan) Fires() []time.Time {
	if p.CatchUp.IsZero() {
		return p.OnTime
	}
	return append([]time.Time{p.CatchUp}, p.OnTime...)
}

// maxWalk bounds how many missed ticks Due steps through one by one; past
// it, it jumps to the ticks around now.
const maxWalk = 100_000

// Due plans the ticks from next (next <= now) to now, within w. A tick at
// most Grace before now is on time and fires, every one of them; the ticks
// before those were missed (no replica ran then) and the misfire policy
// decides: one catch-up job for the latest (MisfireOnce) or none
// (MisfireSkip). The cadence resumes at its first tick after now.
func (c Cadence) Due(next, now time.Time, misfire string, w Window) Plan {
	cutoff := now.Add(-Grace)
	tick, latest, missed := next, time.Time{}, 0
	for walked := 0; w.holds(tick) && tick.Before(cutoff); walked++ {
		if walked == maxWalk {
			// A long outage of a fast cadence: jump to the latest tick
			// missed (by the interval, at once; a cron's by its ticks),
			// counting the ticks passed.
			bound := cutoff.Add(-time.Nanosecond)
			if !w.End.IsZero() && w.End.Before(bound) {
				bound = w.End
			}
			last, passed := c.lastBefore(bound, tick)
			missed += passed
			tick = last
		}
		latest, missed, tick = tick, missed+1, c.Next(tick)
	}
	var p Plan
	for ; w.holds(tick) && !tick.After(now); tick = c.Next(tick) {
		p.OnTime = append(p.OnTime, tick)
	}
	p.Next, p.Missed = w.bound(tick), missed
	if misfire != MisfireSkip && missed > 0 {
		p.CatchUp, p.Missed = latest, missed-1
	}
	return p
}

// holds reports whether t is a tick at all: not the zero time (a cadence
// with no next tick), and not after the window's end.
func (w Window) holds(t time.Time) bool {
	return !t.IsZero() && (w.End.IsZero() || !t.After(w.End))
}

// lastBefore is the latest tick at or before now, from from (a tick at or
// before now) on, and how many ticks it is after from.
func (c Cadence) lastBefore(now, from time.Time) (time.Time, int) {
	if c.every > 0 {
		every := c.every.Milliseconds()
		last := time.UnixMilli(now.UnixMilli() / every * every).UTC()
		return last, int(last.Sub(from) / c.every)
	}
	last, passed := from, 0
	for t := c.Next(from); !t.IsZero() && !t.After(now); t = c.Next(t) {
		last, passed = t, passed+1
	}
	return last, passed
}
