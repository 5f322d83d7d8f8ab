package schedule

import (
	"errors"
	"testing"
	"time"
)

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// The daylight-saving changes of 2026: Europe/Berlin springs forward on
// 29 March at 01:00Z (02:00 CET -> 03:00 CEST) and falls back on 25
// October at 01:00Z (03:00 CEST -> 02:00 CET); America/New_York on 8 March
// at 07:00Z (02:00 EST -> 03:00 EDT) and 1 November at 06:00Z (02:00 EDT ->
// 01:00 EST). Each case is the library's answers with this package's rules
// on top, from a given instant: no sleeping, no clock.
func TestTicksAcrossDaylightSavingChanges(t *testing.T) {
	cases := []struct {
		name, spec, tz, from string
		want                 []string
	}{
		{"a daily tick in Berlin's skipped hour fires once, at the time the clocks jumped to",
			"30 2 * * *", "Europe/Berlin", "2026-03-28T12:00:00Z",
			[]string{"2026-03-29T01:30:00Z", "2026-03-30T00:30:00Z"}},
		{"a daily tick in Berlin's repeated hour fires once, at its first occurrence",
			"30 2 * * *", "Europe/Berlin", "2026-10-24T12:00:00Z",
			[]string{"2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"}},
		{"a tick at the start of Berlin's repeated hour",
			"0 2 * * *", "Europe/Berlin", "2026-10-24T12:00:00Z",
			[]string{"2026-10-25T00:00:00Z", "2026-10-26T01:00:00Z"}},
		{"several ticks in Berlin's skipped hour each fire once",
			"*/20 2 * * *", "Europe/Berlin", "2026-03-29T00:00:00Z",
			[]string{"2026-03-29T01:00:00Z", "2026-03-29T01:20:00Z", "2026-03-29T01:40:00Z", "2026-03-30T00:00:00Z"}},
		{"an hourly schedule fires every real hour when Berlin falls back (25 that day)",
			"0 * * * *", "Europe/Berlin", "2026-10-25T00:00:00Z",
			[]string{"2026-10-25T01:00:00Z", "2026-10-25T02:00:00Z", "2026-10-25T03:00:00Z"}},
		{"an hourly schedule fires every real hour when Berlin springs forward (23 that day)",
			"@hourly", "Europe/Berlin", "2026-03-29T00:00:00Z",
			[]string{"2026-03-29T01:00:00Z", "2026-03-29T02:00:00Z"}},
		{"a daily tick in New York's skipped hour fires once",
			"30 2 * * *", "America/New_York", "2026-03-07T12:00:00Z",
			[]string{"2026-03-08T07:30:00Z", "2026-03-09T06:30:00Z"}},
		{"a daily tick in New York's repeated hour fires once, at its first occurrence",
			"30 1 * * *", "America/New_York", "2026-10-31T12:00:00Z",
			[]string{"2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"}},
		{"@daily is local midnight, on either side of a change",
			"@daily", "Europe/Berlin", "2026-03-28T12:00:00Z",
			[]string{"2026-03-28T23:00:00Z", "2026-03-29T22:00:00Z"}},
		{"weekdays at 09:00 in New York, across its spring change",
			"0 9 * * 1-5", "America/New_York", "2026-03-06T15:00:00Z",
			[]string{"2026-03-09T13:00:00Z", "2026-03-10T13:00:00Z"}},
		{"UTC has no changes", "15 3 1 * *", "", "2026-01-15T00:00:00Z",
			[]string{"2026-02-01T03:15:00Z", "2026-03-01T03:15:00Z"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cad, err := Cron(c.spec, c.tz)
			if err != nil {
				t.Fatal(err)
			}
			at := utc(c.from)
			for i, want := range c.want {
				at = cad.Next(at)
				if !at.Equal(utc(want)) {
					t.Fatalf("tick %d of %q in %s from %s: %s, want %s", i+1, c.spec, c.tz, c.from,
						at.Format(time.RFC3339), want)
				}
			}
		})
	}
}

func TestEveryTicksAtMultiplesSinceTheEpoch(t *testing.T) {
	cad, err := Every(15 * time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	at := utc("2026-03-29T01:07:00Z")
	for _, want := range []string{"2026-03-29T01:15:00Z", "2026-03-29T01:30:00Z"} {
		if at = cad.Next(at); !at.Equal(utc(want)) {
			t.Fatalf("every 15 min: %s, want %s", at.Format(time.RFC3339), want)
		}
	}
	ms, _ := Every(200 * time.Millisecond)
	if got := ms.Next(time.UnixMilli(1_000_000_000_100)); got.UnixMilli() != 1_000_000_000_200 {
		t.Fatalf("every 200 ms after ...100: %d", got.UnixMilli())
	}
	if got := ms.Next(time.UnixMilli(1_000_000_000_200)); got.UnixMilli() != 1_000_000_000_400 {
		t.Fatalf("every 200 ms after a tick: %d, want the next one", got.UnixMilli())
	}
}

func TestBadCadencesAreRefused(t *testing.T) {
	for _, c := range []struct{ spec, tz string }{
		{"* * * * * *", ""}, // seconds are not a field here
		{"* * * *", ""},
		{"61 * * * *", ""},
		{"@every 5m", ""},
		{"@often", ""},
		{"", ""},
		{"0 9 * * *", "Mars/Olympus_Mons"},
		{"0 9 * * *", "Local"},
		{"0 9 * * *", "/etc/localtime"},
	} {
		if _, err := Cron(c.spec, c.tz); !errors.Is(err, ErrCadence) {
			t.Errorf("Cron(%q, %q) = %v, want ErrCadence", c.spec, c.tz, err)
		}
	}
	for _, d := range []time.Duration{0, 99 * time.Millisecond, 366 * 24 * time.Hour} {
		if _, err := Every(d); !errors.Is(err, ErrCadence) {
			t.Errorf("Every(%v) = %v, want ErrCadence", d, err)
		}
	}
}

// Over all of 2026, in zones with and without changes (Lord Howe's are
// half an hour): a daily tick at a fixed hour fires once on every local
// day, an hourly one at every instant the local clock reads minute 0, and
// ticks only ever move forward.
func TestAYearOfTicks(t *testing.T) {
	for _, tz := range []string{"Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "UTC"} {
		loc, _ := time.LoadLocation(tz)
		from, to := time.Date(2026, 1, 1, 0, 0, 0, 0, loc), time.Date(2027, 1, 1, 0, 0, 0, 0, loc)
		onTheHour := 0
		for at := from; at.Before(to); at = at.Add(time.Minute) {
			if at.In(loc).Minute() == 0 {
				onTheHour++
			}
		}
		for spec, want := range map[string]int{"30 2 * * *": 365, "0 2 * * *": 365, "0 * * * *": onTheHour} {
			cad, err := Cron(spec, tz)
			if err != nil {
				t.Fatal(err)
			}
			days := map[string]bool{}
			n := 0
			for at := cad.Next(from.Add(-time.Nanosecond)); at.Before(to); {
				n++
				days[at.In(loc).Format("2006-01-02")] = true
				next := cad.Next(at)
				if !next.After(at) {
					t.Fatalf("%s in %s: the tick after %s is %s", spec, tz, at, next)
				}
				at = next
			}
			if n != want || (want == 365 && len(days) != 365) {
				t.Errorf("%s in %s over 2026: %d ticks on %d local days, want %d", spec, tz, n, len(days), want)
			}
		}
	}
}
