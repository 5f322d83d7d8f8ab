package http

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestCompactJSON: a value comes out as json.Compact makes it, and one that
// is already compact comes out as the very same bytes (no copy).
func TestCompactJSON(t *testing.T) {
	for _, in := range []string{
		`{"a":1}`, `[1,2,{"b":"c d"}]`, `"  spaces inside a string  "`, `"a \" quote"`,
		`"a backslash \\"`, `{"a": 1}`, " [1,\n2 ]", "{\"a\":\t\"x\"}", `"\\" `, `1`, `null`,
	} {
		var want bytes.Buffer
		if err := json.Compact(&want, []byte(in)); err != nil {
			t.Fatal(err)
		}
		got := compactJSON(json.RawMessage(in))
		if string(got) != want.String() {
			t.Errorf("compactJSON(%q) = %q, want %q", in, got, want.String())
		}
		if compact := want.String() == in; compact != isCompact([]byte(in)) {
			t.Errorf("isCompact(%q) = %v, want %v", in, !compact, compact)
		}
	}
}

func TestValueFieldNamesTheBatchItem(t *testing.T) {
	for field, want := range map[valueField]string{
		topField("payload"):        "payload",
		{index: 3, name: "result"}: "jobs[3].result",
	} {
		if field.String() != want {
			t.Errorf("%#v reads %q, want %q", field, field.String(), want)
		}
	}
}
