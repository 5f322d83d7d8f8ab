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
	Fire time.Time // the tick to enqueue a job for; zero: none
	Next time.Time // the schedule's next tick after this; zero: none (it has ended)
	// Missed counts ticks that came and went unfired (all of them under
	// MisfireSkip; all but the one fired under MisfireOnce).
	Missed int
}

// maxWalk bounds how many missed ticks Due steps through one by one; past
// it, it jumps to the ticks around now.
const maxWalk = 100_000

// Due plans the tick next, due at now (next <= now): on time (within
// Grace, and the only tick that came), it fires; missed, the misfire
// policy decides, and the cadence resumes at the first tick after now.
func (c Cadence) Due(next, now time.Time, misfire string, w Window) Plan {
	after := c.Next(next)
	if !now.Before(next) && now.Sub(next) <= Grace && after.After(now) {
		return Plan{Fire: next, Next: w.bound(after)}
	}
	latest, missed := next, 1
	for walked := 0; !after.After(now); walked++ {
		if walked == maxWalk {
			// A long outage of a fast cadence: jump to the latest tick, and
			// count the ticks by the interval (a cron's count stays where
			// the walk stopped).
			latest = c.lastBefore(now, latest)
			if c.every > 0 {
				missed = int(latest.Sub(next)/c.every) + 1
			}
			break
		}
		latest, after, missed = after, c.Next(after), missed+1
	}
	p := Plan{Next: w.bound(c.Next(latest)), Missed: missed}
	if misfire != MisfireSkip {
		p.Fire, p.Missed = latest, missed-1
	}
	return p
}

// lastBefore is the latest tick at or before now, from from (a tick at or
// before now) on.
func (c Cadence) lastBefore(now, from time.Time) time.Time {
	if c.every > 0 {
		every := c.every.Milliseconds()
		return time.UnixMilli(now.UnixMilli() / every * every).UTC()
	}
	last := from
	for t := c.Next(from); !t.After(now); t = c.Next(t) {
		last = t
	}
	return last
}
