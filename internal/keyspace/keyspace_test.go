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

// TestSlotDueKeysHashToTheirSlots checks each slot's due index against
// the slots Redis's own examples give and against Slot itself.
func TestSlotDueKeysHashToTheirSlots(t *testing.T) {
	// Redis Cluster's specification: "123456789" hashes to 0x31C3.
	if got := crc16("123456789"); got != 0x31C3 {
		t.Fatalf("crc16 = %#x, want 0x31c3", got)
	}
	if got := Slot("foo"); got != 12182 { // CLUSTER KEYSLOT foo
		t.Fatalf("Slot(foo) = %d, want 12182", got)
	}
	keys := SlotDueKeys("emq")
	for slot, key := range keys {
		tag := key[len("emq:{") : len(key)-len("}:due")]
		if Slot(tag) != slot {
			t.Fatalf("slot %d: key %s hashes to %d", slot, key, Slot(tag))
		}
	}
	if SlotDueKey("emq", "foo") != keys[12182] {
		t.Fatalf("SlotDueKey(foo) = %s, want %s", SlotDueKey("emq", "foo"), keys[12182])
	}
	if q, ok := QueueOfBase("emq", NewQueue("emq", "a.b-c").Base()); !ok || q != "a.b-c" {
		t.Fatalf("QueueOfBase = %q, %v", q, ok)
	}
}
