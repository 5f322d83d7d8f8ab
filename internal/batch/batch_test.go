package batch

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/internal/keyspace"
)

// TestFieldsMatchTheScript: parse reads a batch reply by position, so
// batchFields must name lua/batches.lua's batches.FIELDS in their order.
func TestFieldsMatchTheScript(t *testing.T) {
	text, err := os.ReadFile("../../lua/batches.lua")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)batches.FIELDS = \{(.*?)\}`).FindSubmatch(text)
	if m == nil {
		t.Fatal("lua/batches.lua has no batches.FIELDS")
	}
	var script []string
	for _, f := range regexp.MustCompile(`'([a-z_]+)'`).FindAllSubmatch(m[1], -1) {
		script = append(script, string(f[1]))
	}
	if !slices.Equal(script, batchFields) {
		t.Errorf("batches.FIELDS %v, batchFields %v", script, batchFields)
	}
}

// TestOtherCallbackID: the id a callback takes when batch:<id> is another
// batch's is a job id whatever the queue and batch ids' lengths, and tells
// batches apart by queue, id and creation.
func TestOtherCallbackID(t *testing.T) {
	at := time.UnixMilli(1764763200000)
	long := Batch{Queue: strings.Repeat("q", 100), ID: strings.Repeat("b", 122), CreatedAt: at}
	seen := map[string]bool{}
	for _, b := range []Batch{long, {Queue: "a", ID: "x", CreatedAt: at}, {Queue: "b", ID: "x", CreatedAt: at},
		{Queue: "a", ID: "x", CreatedAt: at.Add(time.Millisecond)}} {
		id := otherCallbackID(b)
		if !keyspace.ValidJobID(id) || len(id) > 128 || !strings.HasPrefix(id, CallbackPrefix) || seen[id] {
			t.Errorf("otherCallbackID(%s/%s) = %q: want a job id of its own, at most 128", b.Queue, b.ID, id)
		}
		seen[id] = true
	}
}

// TestCallbackOf: a job is a batch's callback when its payload's batch is
// that batch: same queue, id and creation time.
func TestCallbackOf(t *testing.T) {
	at := time.UnixMilli(1764763200123).UTC()
	b := Batch{Queue: "imports", ID: "b1", CreatedAt: at}
	payload := func(queue, id string, created time.Time) json.RawMessage {
		return json.RawMessage(`{"batch":{"id":"` + id + `","queue":"` + queue + `","created_at":"` +
			created.Format("2006-01-02T15:04:05.000Z07:00") + `"},"payload":null}`)
	}
	for _, c := range []struct {
		payload json.RawMessage
		want    bool
	}{
		{payload("imports", "b1", at), true},
		{payload("other", "b1", at), false},
		{payload("imports", "b2", at), false},
		{payload("imports", "b1", at.Add(-7*24*time.Hour)), false},
		{json.RawMessage(`{"user":1}`), false},
		{json.RawMessage(`not json`), false},
	} {
		if got := callbackOf(job.Job{Payload: c.payload}, b); got != c.want {
			t.Errorf("callbackOf(%s) = %v, want %v", c.payload, got, c.want)
		}
	}
}
