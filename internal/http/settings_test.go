package http_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/redistest"
	"github.com/echo-mq/echo_mq/internal/stall"
)

// fullSettings are settings with every job default and a retention rule
// for each state.
const fullSettings = `{"concurrency":50,` +
	`"job_defaults":{"max_attempts":5,"backoff":{"type":"fixed","delay_ms":120000},"priority":4,` +
	`"timeout_ms":60000,"expires_in_ms":600000},` +
	`"retention":{"completed":{"count":100},"dead":{"count":10,"age_ms":86400000},"cancelled":{}}}`

// fullAnswer is fullSettings as the service answers them: the backoff's
// cap filled in, the empty rule kept.
const fullAnswer = `{"concurrency":50,` +
	`"job_defaults":{"max_attempts":5,"backoff":{"type":"fixed","delay_ms":120000,"max_delay_ms":3600000},"priority":4,` +
	`"timeout_ms":60000,"expires_in_ms":600000},` +
	`"retention":{"completed":{"count":100},"dead":{"count":10,"age_ms":86400000},"cancelled":{}}}`

// compactBody is a reply's JSON body without its white space.
func compactBody(tb testing.TB, r reply) string {
	tb.Helper()
	var out bytes.Buffer
	if err := json.Compact(&out, r.Body); err != nil {
		tb.Fatalf("%s: %v", r, err)
	}
	return out.String()
}

// GET and PUT answer the job defaults and the retention as put (the
// backoff's cap filled in), and the settings event carries them; a PUT
// without them removes them.
func TestSettingsJobDefaultsAndRetentionReadBack(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		put := h.do(t, "PUT", settingsPath(q), fullSettings)
		if put.Status != http.StatusOK || compactBody(t, put) != fullAnswer {
			t.Fatalf("PUT answered %s, want %s", put, fullAnswer)
		}
		if got := compactBody(t, h.do(t, "GET", settingsPath(q), nil)); got != fullAnswer {
			t.Fatalf("GET answered %s, want %s", got, fullAnswer)
		}
		entries := entriesOf(h.streamEntries(t, q), "settings", "")
		if len(entries) != 1 || entries[0]["settings"] != fullAnswer {
			t.Fatalf("settings events %v, want one carrying %s", entries, fullAnswer)
		}
		if got := compactBody(t, h.do(t, "PUT", settingsPath(q), `{"concurrency":50}`)); got != `{"concurrency":50}` {
			t.Fatalf("a PUT without them answered %s", got)
		}
		if got := compactBody(t, h.do(t, "GET", settingsPath(q), nil)); got != `{"concurrency":50}` {
			t.Fatalf("after a PUT without them GET answered %s", got)
		}
	})
}

// Each default fills in what an enqueue does not name, from the next
// enqueue on (on a Cluster through the other replica); a job that names a
// field keeps its own value, priority 0 and max_attempts 3 too.
func TestJobDefaultsApplyToEachField(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		// A job before the settings (delayed, out of the claims' way): the
		// queue has a layout when its defaults come.
		if j := h.enqueue(t, q, `{"id":"before","payload":{},"delay_ms":600000}`); j.Priority != 0 || j.MaxAttempts != 3 || j.TimeoutMs != 0 || j.ExpiresAt != "" {
			t.Fatalf("before any settings: %+v", j)
		}
		h.putSettings(t, q, fullSettings)
		d := h.enqueue(t, q, `{"id":"d","payload":{}}`)
		if d.Priority != 4 || d.MaxAttempts != 5 || d.TimeoutMs != 60000 ||
			!parseStamp(t, d.ExpiresAt).Equal(parseStamp(t, d.CreatedAt).Add(600*time.Second)) {
			t.Fatalf("a job naming nothing: %+v, want the defaults", d)
		}
		own := h.enqueue(t, q, `{"id":"own","payload":{},"priority":0,"max_attempts":3,"timeout_ms":1000,"expires_in_ms":900000,`+
			`"backoff":{"type":"fixed","delay_ms":0}}`)
		if own.Priority != 0 || own.MaxAttempts != 3 || own.TimeoutMs != 1000 ||
			!parseStamp(t, own.ExpiresAt).Equal(parseStamp(t, own.CreatedAt).Add(900*time.Second)) {
			t.Fatalf("a job naming every field: %+v, want its own values", own)
		}
		if j := h.enqueue(t, q, `{"id":"seven","payload":{},"priority":7}`); j.Priority != 7 || j.MaxAttempts != 5 {
			t.Fatalf("a job naming its priority: %+v", j)
		}
		// The backoff: own retries at once (its own backoff), d after the
		// default's 120 s.
		held := h.claimOne(t, q, "own", 30000)
		if f := must[jobView](t, h.fail(t, q, "own", held.Token, `,"error":"boom"`), http.StatusOK); f.State != "pending" {
			t.Fatalf("own failed into %s, want pending (its own backoff of 0)", f.State)
		}
		held = h.claimOne(t, q, "own", 30000)
		must[json.RawMessage](t, h.complete(t, q, "own", held.Token, ""), http.StatusOK)
		held = h.claimOne(t, q, "d", 30000)
		f := must[jobView](t, h.fail(t, q, "d", held.Token, `,"error":"boom"`), http.StatusOK)
		if f.State != "delayed" || parseStamp(t, f.RunAt).Before(time.Now().Add(60*time.Second)) {
			t.Fatalf("d failed into %s until %s, want delayed about 120 s (the default backoff)", f.State, f.RunAt)
		}
		// Removed: the next enqueue gets none.
		h.putSettings(t, q, `{}`)
		if j := h.enqueue(t, q, `{"id":"after","payload":{}}`); j.Priority != 0 || j.MaxAttempts != 3 || j.TimeoutMs != 0 || j.ExpiresAt != "" {
			t.Fatalf("after the defaults were removed: %+v", j)
		}
	})
}

// The defaults apply to a batch enqueue, a batch's jobs and a schedule's
// jobs alike; a job with depends_on gets no default expiry.
func TestJobDefaultsApplyToBatchesAndSchedules(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.putSettings(t, q, `{"job_defaults":{"priority":6,"max_attempts":7,"expires_in_ms":600000}}`)
		jobs := h.enqueueBatch(t, q, `{"jobs":[{"id":"a","payload":1},{"id":"b","payload":2,"priority":0},`+
			`{"id":"c","payload":3,"depends_on":["a"]}]}`)
		if a := jobs[0]; a.Priority != 6 || a.MaxAttempts != 7 || a.ExpiresAt == "" {
			t.Errorf("batch enqueue, a job naming nothing: %+v", a)
		}
		if b := jobs[1]; b.Priority != 0 || b.MaxAttempts != 7 {
			t.Errorf("batch enqueue, a job naming priority 0: %+v", b)
		}
		if c := jobs[2]; c.Priority != 6 || c.ExpiresAt != "" {
			t.Errorf("batch enqueue, a job with depends_on: %+v, want the default priority and no expiry", c)
		}
		must[batchView](t, h.do(t, "POST", "/queues/"+q+"/batches", `{"id":"imp","jobs":[{"id":"x","payload":{}}]}`), http.StatusCreated)
		if x := h.get(t, q, "x"); x.Priority != 6 || x.MaxAttempts != 7 || x.BatchID != "imp" {
			t.Errorf("a batch's job: %+v", x)
		}
		must[json.RawMessage](t, h.do(t, "PUT", "/queues/"+q+"/schedules/tick", `{"every_ms":3600000,"job":{"payload":{}}}`), http.StatusCreated)
		fired := must[jobView](t, h.do(t, "POST", "/queues/"+q+"/schedules/tick/run", nil), http.StatusCreated)
		if fired.Priority != 6 || fired.MaxAttempts != 7 || fired.ExpiresAt == "" {
			t.Errorf("a schedule's job: %+v", fired)
		}
	})
}

// A default expiry is indexed for the reaper although the enqueue names
// no option (the service takes it for a plain one): the job expires on an
// idle queue. A default timeout bounds the lease as an enqueue's does.
func TestJobDefaultsExpiryAndTimeoutTakeEffect(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q, busy := redistest.Queue(t), redistest.Queue(t)+"-busy"
		h.putSettings(t, q, `{"job_defaults":{"expires_in_ms":300}}`)
		j := h.enqueue(t, q, `{"id":"e","payload":{}}`)
		waitPast(t, j.ExpiresAt)
		h.reapWhenDue(t, q)
		if e := h.wantState(t, q, "e", "cancelled"); e.CancelReason != "expired" {
			t.Fatalf("after its expiry: %+v, want cancelled, expired", e)
		}

		h.putSettings(t, busy, `{"job_defaults":{"timeout_ms":500}}`)
		h.enqueue(t, busy, `{"id":"t","payload":{}}`)
		held := h.claimOne(t, busy, "t", 60000)
		if ends := parseStamp(t, held.StartedAt).Add(500 * time.Millisecond); held.TimeoutMs != 500 || !parseStamp(t, held.LeaseExpiresAt).Equal(ends) {
			t.Fatalf("claimed %+v, want its lease to end at started_at + 500 ms", held)
		}
	})
}

// Invalid settings are 400 naming the field, and write nothing.
func TestBadJobDefaultsAndRetentionAreRefused(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.putSettings(t, q, `{"job_defaults":{"priority":2},"retention":{"dead":{"count":5}}}`)
		before := h.snapshot(t)
		for body, field := range map[string]string{
			`{"job_defaults":{"max_attempts":0}}`:                                               "job_defaults.max_attempts",
			`{"job_defaults":{"max_attempts":1001}}`:                                            "job_defaults.max_attempts",
			`{"job_defaults":{"priority":10}}`:                                                  "job_defaults.priority",
			`{"job_defaults":{"timeout_ms":99}}`:                                                "job_defaults.timeout_ms",
			`{"job_defaults":{"expires_in_ms":0}}`:                                              "job_defaults.expires_in_ms",
			`{"job_defaults":{"backoff":{"type":"linear"}}}`:                                    "job_defaults.backoff.type",
			`{"job_defaults":{"backoff":{"delay_ms":10}}}`:                                      "job_defaults.backoff.type",
			`{"job_defaults":{"backoff":{"type":"fixed","delay_ms":5000,"max_delay_ms":1000}}}`: "job_defaults.backoff.max_delay_ms",
			`{"retention":{"completed":{"count":-1}}}`:                                          "retention.completed.count",
			`{"retention":{"dead":{"age_ms":-5}}}`:                                              "retention.dead.age_ms",
			`{"retention":{"cancelled":{"count":100000001}}}`:                                   "retention.cancelled.count",
		} {
			p := wantProblem(t, h.do(t, "PUT", settingsPath(q), body), http.StatusBadRequest, "EMQINVALID")
			wantField(t, p, field)
		}
		for _, body := range []string{`{"retention":{"failed":{}}}`, `{"job_defaults":{"group":"g"}}`, `{"retention":{"dead":{"max":1}}}`} {
			wantProblem(t, h.do(t, "PUT", settingsPath(q), body), http.StatusBadRequest, "EMQINVALID")
		}
		h.unchanged(t, before, "refused settings")
	})
}

// reapWhenDue waits until q's time in the due index has come (within 10
// s), then makes one pass of a reaper, as the background one would: it
// visits the queues that are due, and only those.
func (h *harness) reapWhenDue(tb testing.TB, q string) {
	tb.Helper()
	ctx := context.Background()
	svc := stall.NewService(h.rdb, h.prefix)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		due, err := svc.DueQueues(ctx, 1000)
		if err != nil {
			tb.Fatal(err)
		}
		if slices.Contains(due, q) {
			break
		}
		if time.Now().After(deadline) {
			tb.Fatalf("queue %s is not due in the due index within 10 s (due: %v)", q, due)
		}
	}
	// (Its first audit visits every known queue too: the index was checked
	// above.)
	r := stall.NewReaper(svc, stall.ReaperConfig{ClusterEvery: time.Nanosecond})
	if _, err := r.Pass(ctx); err != nil {
		tb.Fatal(err)
	}
	// Its turn on q ends: the embedded store ends no key on its own.
	if err := h.rdb.Del(ctx, keyspace.NewQueue(h.prefix, q).ReaperTurn()).Err(); err != nil {
		tb.Fatal(err)
	}
}

// jobIDs are ids prefix00000 ... as batchOf makes them, from from, n of them.
func jobIDs(prefix string, from, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%05d", prefix, from+i)
	}
	return out
}
