package job

import (
	"testing"
	"time"
)

// TestParseReplyForms: a job reads the same from the flat reply form and
// from the nested one the hot path answers (the row as read, then what
// changed, later lists winning, an empty value an absent field).
func TestParseReplyForms(t *testing.T) {
	flat := []any{"a", "state", "active", "payload", `{"n":1}`, "attempts", "2", "max_attempts", "5",
		"token", "9007199254675456", "lease_expires_at", "1764727200000", "worker", "w1"}
	nested := []any{"a",
		[]any{"state", "pending", "payload", `{"n":1}`, "attempts", "1", "max_attempts", "5", "worker", "old",
			"cancel_requested", "1", "lease_expires_at", "1"},
		[]any{"cancel_requested", "", "worker", "w1"},
		[]any{"state", "active", "attempts", "2", "token", "9007199254675456", "lease_expires_at", "1764727200000"},
	}
	want, err := Parse("q", flat)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse("q", nested)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != "active" || got.Attempts != 2 || got.MaxAttempts != 5 || got.Token != 9007199254675456 ||
		got.Worker != "w1" || got.CancelRequested || string(got.Payload) != `{"n":1}` ||
		!got.LeaseExpiresAt.Equal(time.UnixMilli(1764727200000)) {
		t.Fatalf("nested form read %+v", got)
	}
	if got.State != want.State || got.Token != want.Token || !got.LeaseExpiresAt.Equal(want.LeaseExpiresAt) {
		t.Fatalf("the forms differ: flat %+v, nested %+v", want, got)
	}
}

// TestParseEmptyIsAbsent: every field a script may clear reads as absent
// when its value is empty, max_attempts as the default.
func TestParseEmptyIsAbsent(t *testing.T) {
	reply := []any{"a", []any{"state", "completed", "max_attempts", "7", "result", "1", "depends_on", "x,y",
		"timeout_ms", "100", "started_at", "5"},
		[]any{"max_attempts", "", "result", "", "depends_on", "", "timeout_ms", "", "started_at", ""}}
	j, err := Parse("q", reply)
	if err != nil {
		t.Fatal(err)
	}
	if j.MaxAttempts != DefaultMaxAttempts || j.Result != nil || j.DependsOn != nil || j.Timeout != 0 || !j.StartedAt.IsZero() {
		t.Fatalf("cleared fields read %+v", j)
	}
}

// TestParseRefusesOddLists: a list of pairs with an odd length is an
// error, not a job with a field lost.
func TestParseRefusesOddLists(t *testing.T) {
	for _, reply := range []any{
		[]any{"a", "state"},
		[]any{"a", []any{"state", "active", "token"}},
		[]any{},
		"a",
	} {
		if j, err := Parse("q", reply); err == nil {
			t.Errorf("Parse(%v) = %+v, want an error", reply, j)
		}
	}
}
