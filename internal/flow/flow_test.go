package flow

import (
	"reflect"
	"testing"
)

func TestEncodeDecodeRoundTrip(t *testing.T) {
	one, two := 1, 20
	cases := []struct {
		s    Settings
		text string
	}{
		{Settings{}, ""},
		{Settings{Concurrency: &two}, "20,,,,,,"},
		{Settings{RateLimit: &Rate{100, 1000}}, ",100,1000,,,,"},
		{Settings{GroupConcurrency: &one, GroupRateLimit: &Rate{10, 60000}, FIFO: true}, ",,,1,10,60000,fifo"},
		{Settings{FIFO: true}, ",,,,,,fifo"},
	}
	for _, c := range cases {
		if got := c.s.Encode(); got != c.text {
			t.Errorf("Encode(%+v) = %q, want %q", c.s, got, c.text)
		}
		back, err := Decode(c.text)
		if err != nil {
			t.Fatalf("Decode(%q): %v", c.text, err)
		}
		if !reflect.DeepEqual(back, c.s) {
			t.Errorf("Decode(%q) = %+v, want %+v", c.text, back, c.s)
		}
	}
}

func TestDecodeRefusesWhatEncodeNeverWrites(t *testing.T) {
	for _, text := range []string{"1,2", "x,,,,,,", ",1,y,,,,", ",,,,,,,"} {
		if _, err := Decode(text); err == nil {
			t.Errorf("Decode(%q) = nil error", text)
		}
	}
}
