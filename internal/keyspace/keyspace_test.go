package keyspace

import (
	"strings"
	"testing"
)

func TestValidQueueName(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"emails": true, "a.b_c-D9": true, strings.Repeat("q", 100): true,
		"": false, strings.Repeat("q", 101): false, "a{b": false, "a}b": false,
		"a:b": false, "a b": false, "a\nb": false, "a/b": false, "é": false, ".": false, "..": false, "...": false, ".a": true,
	} {
		if got := ValidQueueName(name); got != want {
			t.Errorf("ValidQueueName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestValidJobID(t *testing.T) {
	t.Parallel()
	for id, want := range map[string]bool{
		"order:1234": true, "a.b_c-D9": true, strings.Repeat("i", 128): true,
		"": false, "batch": false, strings.Repeat("i", 129): false, "a{b}": false, "a b": false, "..": false, "a..b": true,
	} {
		if got := ValidJobID(id); got != want {
			t.Errorf("ValidJobID(%q) = %v, want %v", id, got, want)
		}
	}
}

func TestQueueKeysShareOneHashTag(t *testing.T) {
	t.Parallel()
	q := NewQueue("emq", "emails")
	for _, key := range append(q.Keys(), q.Job("j1"), q.ReaperTurn()) {
		if !strings.HasPrefix(key, "emq:{emails}:") {
			t.Errorf("key %q is outside the queue's hash tag", key)
		}
	}
	if got := q.WakeChannel(); got != "emq:wake:emails" {
		t.Errorf("WakeChannel() = %q", got)
	}
}
