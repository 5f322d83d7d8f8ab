package telemetry

import (
	"strings"
	"testing"
)

func TestValidTraceparent(t *testing.T) {
	const tid, pid = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	tests := []struct {
		name string
		in   string
		want bool
	}{
		{"version 00 sampled", "00-" + tid + "-" + pid + "-01", true},
		{"version 00 not sampled", "00-" + tid + "-" + pid + "-00", true},
		{"unknown flags kept", "00-" + tid + "-" + pid + "-ff", true},
		{"empty", "", false},
		{"short", "00-" + tid + "-" + pid + "-0", false},
		{"version 00 longer", "00-" + tid + "-" + pid + "-01-extra", false},
		{"version 00 one more char", "00-" + tid + "-" + pid + "-01x", false},
		{"version ff", "ff-" + tid + "-" + pid + "-01", false},
		{"higher version", "01-" + tid + "-" + pid + "-01", true},
		{"higher version longer", "cc-" + tid + "-" + pid + "-01-what-the-future-holds", true},
		{"higher version longer without dash", "cc-" + tid + "-" + pid + "-01x", false},
		{"uppercase version", "0A-" + tid + "-" + pid + "-01", false},
		{"uppercase trace id", "00-" + strings.ToUpper(tid) + "-" + pid + "-01", false},
		{"uppercase parent id", "00-" + tid + "-" + strings.ToUpper(pid) + "-01", false},
		{"uppercase flags", "00-" + tid + "-" + pid + "-0A", false},
		{"zero trace id", "00-" + strings.Repeat("0", 32) + "-" + pid + "-01", false},
		{"zero parent id", "00-" + tid + "-" + strings.Repeat("0", 16) + "-01", false},
		{"non-hex trace id", "00-" + tid[:31] + "g-" + pid + "-01", false},
		{"non-hex parent id", "00-" + tid + "-" + pid[:15] + "z-01", false},
		{"non-hex version", "0g-" + tid + "-" + pid + "-01", false},
		{"wrong separator", "00_" + tid + "-" + pid + "-01", false},
		{"trace id a char short", "00-" + tid[:31] + "-" + pid + "-01a", false},
		{"spaces around", " 00-" + tid + "-" + pid + "-01", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ValidTraceparent(tt.in); got != tt.want {
				t.Errorf("ValidTraceparent(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}
