package http

import (
	"net/http"
	"testing"
)

// TestPreference reads Prefer headers as RFC 7240 section 2 has them.
func TestPreference(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		prefer []string // the Prefer headers, in order
		want   string   // the value of return
	}{
		{"no header", nil, ""},
		{"an empty header", []string{""}, ""},
		{"alone", []string{"return=minimal"}, "minimal"},
		{"the other value", []string{"return=representation"}, "representation"},
		{"a name in other case", []string{"RETURN=minimal"}, "minimal"},
		{"a value in other case is another value", []string{"return=MINIMAL"}, "MINIMAL"},
		{"space around =", []string{"Return = minimal"}, "minimal"},
		{"a quoted value", []string{`return="minimal"`}, "minimal"},
		{"a quoted-pair", []string{`return="min\imal"`}, "minimal"},
		{"after another preference", []string{"respond-async, return=minimal"}, "minimal"},
		{"with parameters", []string{"respond-async,return=minimal;foo=bar; baz"}, "minimal"},
		{"empty elements", []string{", ,return=minimal,"}, "minimal"},
		{"in a second header", []string{"respond-async, wait=10", "return=minimal"}, "minimal"},
		{"the first of two holds", []string{"return=representation, return=minimal"}, "representation"},
		{"the first of two headers holds", []string{"return=representation", "return=minimal"}, "representation"},
		{"a comma inside quotes", []string{`foo="a,return=minimal", return=representation`}, "representation"},
		{"an escaped quote inside quotes", []string{`foo="a\",return=minimal"`}, ""},
		{"a parameter of another preference", []string{"handling=lenient; return=minimal"}, ""},
		{"no value", []string{"return"}, ""},
		{"another name", []string{"returns=minimal"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for _, v := range tc.prefer {
				h.Add("Prefer", v)
			}
			if got := preference(h, "return"); got != tc.want {
				t.Errorf("preference(%q, return) = %q, want %q", tc.prefer, got, tc.want)
			}
		})
	}
}
