// Package schedule is echo_mq's schedules (docs/design.md#schedules): when a
// schedule's ticks fall. A cron expression is parsed by
// github.com/robfig/cron/v3; this package adds what a user of cron expects
// across daylight-saving changes, which the library leaves out.
package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // every zone, also where the system has no zone database

	"github.com/robfig/cron/v3"
)

// Bounds of every_ms.
const (
	MinEvery = 100 * time.Millisecond
	MaxEvery = 365 * 24 * time.Hour
)

// parser reads the five standard fields and the @hourly-style names, no
// seconds field.
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Cadence is when a schedule's ticks fall: a cron expression in a time
// zone, or a fixed interval.
type Cadence struct {
	cron  cron.Schedule
	loc   *time.Location
	wall  bool          // ticks are wall-clock times of loc (a fixed hour), not every hour
	every time.Duration // for a fixed interval; 0 for cron
}

// ErrCadence means a cadence that cannot be used; its text says why.
var ErrCadence = errors.New("invalid cadence")

// Cron is the cadence of a five-field cron expression (or @hourly,
// @daily, @weekly, @monthly, @yearly; also @midnight and @annually, which
// the library reads too) in the IANA time zone tz ("" is UTC).
//
// Across a daylight-saving change a tick falls as in Vixie cron: one whose
// hour field names hours (02:30 daily) fires once a day even when that
// hour is skipped (at the wall time the clocks jumped to, 03:30) or comes
// twice (at its first occurrence); one that runs every hour fires every
// real hour, 23 or 25 times that day.
func Cron(spec, tz string) (Cadence, error) {
	loc, err := Zone(tz)
	if err != nil {
		return Cadence{}, err
	}
	spec = strings.TrimSpace(spec)
	switch {
	case strings.HasPrefix(spec, "@every"):
		return Cadence{}, fmt.Errorf("%w: %q: use every_ms for a fixed interval", ErrCadence, spec)
	case strings.Contains(spec, "="):
		// The library reads a CRON_TZ= or TZ= prefix, which would override
		// tz behind its back.
		return Cadence{}, fmt.Errorf("%w: %q: give the time zone in tz", ErrCadence, spec)
	}
	sched, err := parser.Parse(spec)
	if err != nil {
		return Cadence{}, fmt.Errorf("%w: %q: %v", ErrCadence, spec, err)
	}
	c := Cadence{cron: sched, loc: loc, wall: namesHours(spec)}
	if c.Next(time.Now()).IsZero() {
		return Cadence{}, fmt.Errorf("%w: %q matches no date (such as the 30th of February)", ErrCadence, spec)
	}
	return c, nil
}

// Every is the cadence of a fixed interval: ticks at the multiples of
// every since the Unix epoch, so that every replica computes the same ones.
func Every(every time.Duration) (Cadence, error) {
	if every < MinEvery || every > MaxEvery {
		return Cadence{}, fmt.Errorf("%w: every_ms %d: must be %d to %d", ErrCadence, every.Milliseconds(),
			MinEvery.Milliseconds(), MaxEvery.Milliseconds())
	}
	return Cadence{every: every, loc: time.UTC}, nil
}

// Zone is the IANA time zone tz ("" and "UTC": UTC). The zone database is
// built in (time/tzdata), so a container without one still knows every
// zone. Errors wrap ErrCadence.
func Zone(tz string) (*time.Location, error) {
	if tz == "" || tz == "UTC" {
		return time.UTC, nil
	}
	if tz == "Local" || strings.HasPrefix(tz, "/") {
		return nil, fmt.Errorf("%w: tz %q: want an IANA name such as Europe/Berlin", ErrCadence, tz)
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, fmt.Errorf("%w: tz %q: not an IANA time zone", ErrCadence, tz)
	}
	return loc, nil
}

// namesHours reports whether a cron expression's hour field names hours,
// rather than every hour ("*", "*/1"); the @names but @hourly do.
func namesHours(spec string) bool {
	switch spec {
	case "@hourly":
		return false
	case "@daily", "@midnight", "@weekly", "@monthly", "@yearly", "@annually":
		return true
	}
	fields := strings.Fields(spec)
	if len(fields) != 5 {
		return true
	}
	return fields[1] != "*" && fields[1] != "*/1"
}

// Next is the first tick strictly after after; the zero time when there
// is none (a cron expression of a date that never comes: the library looks
// five years ahead).
func (c Cadence) Next(after time.Time) time.Time {
	if c.every > 0 {
		ms, every := after.UnixMilli(), c.every.Milliseconds()
		return time.UnixMilli((ms/every + 1) * every).UTC()
	}
	if !c.wall {
		if next := c.cron.Next(after.In(c.loc)); !next.IsZero() {
			return next.UTC()
		}
		return time.Time{}
	}
	// A fixed hour: the ticks are wall-clock times, taken in a clock with
	// no daylight-saving change and then placed in the zone. The search
	// starts 3 hours of wall clock early, so that a tick placed later than
	// its reading (in a skipped hour) is not passed over.
	wall := wallClock(after.In(c.loc).Add(-3 * time.Hour))
	for {
		if wall = c.cron.Next(wall); wall.IsZero() {
			return time.Time{}
		}
		if at := c.place(wall); at.After(after) {
			return at.UTC()
		}
	}
}

// wallClock is t's wall-clock reading as a time in UTC.
func wallClock(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
}

// place is the instant at which loc's clocks read wall: in an hour that
// comes twice, its first occurrence; in a skipped hour, the wall time read
// with the offset in effect before the change (02:30 becomes 03:30 when
// the clocks jump from 02:00 to 03:00). (time.Date may give either
// occurrence, and may move a skipped time back or forth.)
func (c Cadence) place(wall time.Time) time.Time {
	at := time.Date(wall.Year(), wall.Month(), wall.Day(), wall.Hour(), wall.Minute(), 0, 0, c.loc)
	_, before := at.Add(-3 * time.Hour).Zone() // the offset in effect before any change at hand
	first := time.Date(wall.Year(), wall.Month(), wall.Day(), wall.Hour(), wall.Minute(), 0, 0,
		time.FixedZone("", before))
	if !wallClock(at.In(c.loc)).Equal(wall) {
		return first // a skipped hour
	}
	if first.Before(at) && wallClock(first.In(c.loc)).Equal(wall) {
		return first // the first occurrence of an hour that comes twice
	}
	return at
}
