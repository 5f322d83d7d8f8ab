package schedule

import (
	"reflect"
	"testing"
	"time"
)

func TestDuePlansOnTimeTicksAndMisfires(t *testing.T) {
	every, _ := Every(time.Minute)
	tick := utc("2026-12-01T10:00:00Z")
	at := func(d ...time.Duration) []time.Time {
		var ts []time.Time
		for _, x := range d {
			ts = append(ts, tick.Add(x))
		}
		return ts
	}
	cases := []struct {
		name    string
		now     time.Time
		misfire string
		want    Plan
	}{
		{"on time: fires the tick", tick.Add(200 * time.Millisecond), MisfireOnce,
			Plan{OnTime: at(0), Next: tick.Add(time.Minute)}},
		{"late but within the grace: still on time", tick.Add(Grace), MisfireSkip,
			Plan{OnTime: at(0), Next: tick.Add(time.Minute)}},
		{"three ticks missed, once: one job for the latest", tick.Add(2*time.Minute + 30*time.Second), MisfireOnce,
			Plan{CatchUp: tick.Add(2 * time.Minute), Next: tick.Add(3 * time.Minute), Missed: 2}},
		{"three ticks missed, skip: none, the cadence resumes", tick.Add(2*time.Minute + 30*time.Second), MisfireSkip,
			Plan{Next: tick.Add(3 * time.Minute), Missed: 3}},
		{"one tick missed by more than the grace, skip: none", tick.Add(5 * time.Second), MisfireSkip,
			Plan{Next: tick.Add(time.Minute), Missed: 1}},
		{"one tick missed by more than the grace, once: it fires", tick.Add(5 * time.Second), MisfireOnce,
			Plan{CatchUp: tick, Next: tick.Add(time.Minute)}},
		{"missed ticks, then one on time: the catch-up and the tick", tick.Add(2*time.Minute + 300*time.Millisecond), MisfireOnce,
			Plan{CatchUp: tick.Add(time.Minute), OnTime: at(2 * time.Minute), Next: tick.Add(3 * time.Minute), Missed: 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := every.Due(tick, c.now, c.misfire, Window{}); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("Due = %+v, want %+v", got, c.want)
			}
		})
	}
}

// A replica a little late for a fast cadence fires every tick that is
// within the grace, under either policy: none of them was missed.
func TestDueFiresEveryTickWithinTheGrace(t *testing.T) {
	fast, _ := Every(100 * time.Millisecond)
	tick := utc("2026-12-01T10:00:00Z")
	for _, misfire := range []string{MisfireOnce, MisfireSkip} {
		p := fast.Due(tick, tick.Add(250*time.Millisecond), misfire, Window{})
		want := []time.Time{tick, tick.Add(100 * time.Millisecond), tick.Add(200 * time.Millisecond)}
		if !reflect.DeepEqual(p.Fires(), want) || p.Missed != 0 || !p.Next.Equal(tick.Add(300*time.Millisecond)) {
			t.Errorf("%s, 250 ms late: %+v, want the three ticks fired and none missed", misfire, p)
		}
	}
}

// A minutely cron down for 200,000 minutes counts every tick it missed,
// past the walk's bound too.
func TestDueCountsACronsLongOutage(t *testing.T) {
	minutely, _ := Cron("* * * * *", "")
	tick := utc("2026-01-01T00:00:00Z")
	p := minutely.Due(tick, tick.Add(200_000*time.Minute+30*time.Second), MisfireSkip, Window{})
	if p.Missed != 200_001 || !p.Next.Equal(tick.Add(200_001*time.Minute)) || len(p.Fires()) != 0 {
		t.Fatalf("Due = %+v, want 200,001 missed (the ticks from %s to 200,000 minutes later) and none fired", p, tick)
	}
}

// Ticks after the window's end are no ticks: an outage across the end
// catches up the last tick before it, and the schedule ends.
func TestDueStopsAtTheEnd(t *testing.T) {
	minutely, _ := Every(time.Minute)
	tick := utc("2026-12-01T10:00:00Z")
	w := Window{End: tick.Add(30 * time.Second)}
	p := minutely.Due(tick, tick.Add(5*time.Minute+10*time.Second), MisfireOnce, w)
	if !reflect.DeepEqual(p, Plan{CatchUp: tick}) {
		t.Errorf("Due across the end = %+v, want the tick at %s caught up, none missed, no next", p, tick)
	}
	fast, _ := Every(100 * time.Millisecond)
	w = Window{End: tick.Add(time.Hour)}
	p = fast.Due(tick, tick.Add(24*time.Hour), MisfireSkip, w)
	if p.Missed != 36_001 || !p.Next.IsZero() {
		t.Errorf("a day's outage across the end of a 100 ms cadence: %+v, want the hour's 36,001 ticks missed and no next", p)
	}
}

// A cron expression of a date that never comes is refused; one whose
// ticks stop has no next tick, and Due ends it rather than loop.
func TestACronOfNoDate(t *testing.T) {
	for _, spec := range []string{"0 0 30 2 *", "0 0 31 4 *", "* * 30 2 *", "CRON_TZ=Asia/Tokyo 0 3 * * *", "TZ=UTC 0 3 * * *"} {
		if _, err := Cron(spec, "Europe/Berlin"); err == nil {
			t.Errorf("Cron(%q) was taken", spec)
		}
	}
}

func TestDueAfterALongOutageOfAFastCadence(t *testing.T) {
	fast, _ := Every(100 * time.Millisecond)
	tick := utc("2026-12-01T10:00:00Z")
	now := tick.Add(24 * time.Hour).Add(50 * time.Millisecond) // a day: 864,000 ticks
	p := fast.Due(tick, now, MisfireOnce, Window{})
	// The ticks within the grace of now fire; of the 863,991 before them,
	// the latest is caught up.
	want := tick.Add(24 * time.Hour)
	var fires []time.Time
	for d := -Grace; d <= 0; d += 100 * time.Millisecond {
		fires = append(fires, want.Add(d))
	}
	if !reflect.DeepEqual(p.Fires(), fires) || !p.Next.Equal(want.Add(100*time.Millisecond)) || p.Missed != 863_990 {
		t.Fatalf("Due after a day = %+v, want %v fired, 863,990 missed and the next after %s", p, fires, want)
	}
}

func TestTheWindowBoundsTheTicks(t *testing.T) {
	hourly, _ := Cron("@hourly", "")
	now := utc("2026-12-01T10:30:00Z")
	w := Window{Start: utc("2026-12-01T12:00:00Z"), End: utc("2026-12-01T13:00:00Z")}
	if first := hourly.First(now, w); !first.Equal(w.Start) {
		t.Fatalf("first tick %s, want the start %s (a tick at the start counts)", first, w.Start)
	}
	if p := hourly.Due(w.Start, w.Start, MisfireOnce, w); !reflect.DeepEqual(p.Fires(), []time.Time{w.Start}) || !p.Next.Equal(w.End) {
		t.Fatalf("Due at the start = %+v, want it fired and 13:00 next", p)
	}
	if p := hourly.Due(w.End, w.End, MisfireOnce, w); !reflect.DeepEqual(p.Fires(), []time.Time{w.End}) || !p.Next.IsZero() {
		t.Fatalf("Due at the end = %+v, want it fired and no next tick", p)
	}
	if first := hourly.First(utc("2026-12-01T13:30:00Z"), w); !first.IsZero() {
		t.Fatalf("a schedule created after its end has a first tick %s", first)
	}
}
