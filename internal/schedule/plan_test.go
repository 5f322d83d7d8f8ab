package schedule

import (
	"testing"
	"time"
)

func TestDuePlansOnTimeTicksAndMisfires(t *testing.T) {
	every, _ := Every(time.Minute)
	tick := utc("2026-12-01T10:00:00Z")
	cases := []struct {
		name    string
		now     time.Time
		misfire string
		want    Plan
	}{
		{"on time: fires the tick", tick.Add(200 * time.Millisecond), MisfireOnce,
			Plan{Fire: tick, Next: tick.Add(time.Minute)}},
		{"late but within the grace: still on time", tick.Add(Grace), MisfireSkip,
			Plan{Fire: tick, Next: tick.Add(time.Minute)}},
		{"three ticks missed, once: one job for the latest", tick.Add(2*time.Minute + 30*time.Second), MisfireOnce,
			Plan{Fire: tick.Add(2 * time.Minute), Next: tick.Add(3 * time.Minute), Missed: 2}},
		{"three ticks missed, skip: none, the cadence resumes", tick.Add(2*time.Minute + 30*time.Second), MisfireSkip,
			Plan{Next: tick.Add(3 * time.Minute), Missed: 3}},
		{"one tick missed by more than the grace, skip: none", tick.Add(5 * time.Second), MisfireSkip,
			Plan{Next: tick.Add(time.Minute), Missed: 1}},
		{"one tick missed by more than the grace, once: it fires", tick.Add(5 * time.Second), MisfireOnce,
			Plan{Fire: tick, Next: tick.Add(time.Minute)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := every.Due(tick, c.now, c.misfire, Window{}); got != c.want {
				t.Fatalf("Due = %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestDueAfterALongOutageOfAFastCadence(t *testing.T) {
	fast, _ := Every(100 * time.Millisecond)
	tick := utc("2026-12-01T10:00:00Z")
	now := tick.Add(24 * time.Hour).Add(50 * time.Millisecond) // a day: 864,000 ticks
	p := fast.Due(tick, now, MisfireOnce, Window{})
	if want := tick.Add(24 * time.Hour); !p.Fire.Equal(want) || !p.Next.Equal(want.Add(100*time.Millisecond)) || p.Missed != 864_000 {
		t.Fatalf("Due after a day = %+v, want the tick at %s fired and the next after it", p, want)
	}
}

func TestTheWindowBoundsTheTicks(t *testing.T) {
	hourly, _ := Cron("@hourly", "")
	now := utc("2026-12-01T10:30:00Z")
	w := Window{Start: utc("2026-12-01T12:00:00Z"), End: utc("2026-12-01T13:00:00Z")}
	if first := hourly.First(now, w); !first.Equal(w.Start) {
		t.Fatalf("first tick %s, want the start %s (a tick at the start counts)", first, w.Start)
	}
	if p := hourly.Due(w.Start, w.Start, MisfireOnce, w); !p.Fire.Equal(w.Start) || !p.Next.Equal(w.End) {
		t.Fatalf("Due at the start = %+v, want it fired and 13:00 next", p)
	}
	if p := hourly.Due(w.End, w.End, MisfireOnce, w); !p.Fire.Equal(w.End) || !p.Next.IsZero() {
		t.Fatalf("Due at the end = %+v, want it fired and no next tick", p)
	}
	if first := hourly.First(utc("2026-12-01T13:30:00Z"), w); !first.IsZero() {
		t.Fatalf("a schedule created after its end has a first tick %s", first)
	}
}
