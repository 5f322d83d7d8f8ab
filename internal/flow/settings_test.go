package flow

import (
	"reflect"
	"testing"
)

func TestJobDefaultsRoundTrip(t *testing.T) {
	five, zero := 5, 0
	ms := int64(60000)
	cases := []struct {
		d    JobDefaults
		text string
	}{
		{JobDefaults{}, ""},
		{JobDefaults{Priority: &zero}, ",,0,,"},
		{JobDefaults{MaxAttempts: &five, Backoff: &Backoff{Exponential: true, DelayMS: 1000, MaxDelayMS: 3600000},
			TimeoutMS: &ms, ExpiresInMS: &ms}, "5,exponential:1000:3600000,,60000,60000"},
	}
	for _, c := range cases {
		if got := c.d.Encode(); got != c.text {
			t.Errorf("Encode(%+v) = %q, want %q", c.d, got, c.text)
		}
		// As lua/settings.lua keeps it: the due index's name after them.
		kept := c.text
		if kept != "" {
			kept += ",emq:{7}:due"
		}
		back, err := DecodeJobDefaults(kept)
		if err != nil {
			t.Fatalf("DecodeJobDefaults(%q): %v", kept, err)
		}
		if !reflect.DeepEqual(back, c.d) {
			t.Errorf("DecodeJobDefaults(%q) = %+v, want %+v", kept, back, c.d)
		}
	}
	for _, bad := range []string{"5,,", "x,,,,", "5,linear:1:2,,,"} {
		if _, err := DecodeJobDefaults(bad); err == nil {
			t.Errorf("DecodeJobDefaults(%q) took it", bad)
		}
	}
}

func TestRetentionRoundTrip(t *testing.T) {
	cases := []struct {
		r    Retention
		text string
	}{
		{Retention{}, ""},
		{Retention{Cancelled: &Keep{}}, ",,0:0"},
		{Retention{Completed: &Keep{Count: 100}, Dead: &Keep{Count: 10, AgeMS: 86400000}}, "100:0,10:86400000,"},
	}
	for _, c := range cases {
		if got := c.r.Encode(); got != c.text {
			t.Errorf("Encode(%+v) = %q, want %q", c.r, got, c.text)
		}
		back, err := DecodeRetention(c.text)
		if err != nil {
			t.Fatalf("DecodeRetention(%q): %v", c.text, err)
		}
		if !reflect.DeepEqual(back, c.r) {
			t.Errorf("DecodeRetention(%q) = %+v, want %+v", c.text, back, c.r)
		}
	}
	for _, bad := range []string{"1:2", "x:1,,", "1,,"} {
		if _, err := DecodeRetention(bad); err == nil {
			t.Errorf("DecodeRetention(%q) took it", bad)
		}
	}
}
