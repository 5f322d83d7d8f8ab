package http_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/redistest"
)

// stampMS is t as the API answers times: RFC 3339 UTC with milliseconds.
func stampMS(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// TestEnqueueRunAt: a run_at to come makes the job delayed until exactly
// then (to the millisecond, in UTC whatever the offset sent); one that has
// passed makes it pending at once, with no run_at.
func TestEnqueueRunAt(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		later := time.Now().Add(time.Hour).Truncate(time.Millisecond)
		sent := later.In(time.FixedZone("", 2*3600)).Format("2006-01-02T15:04:05.000") + "9+02:00" // a tenth of a ms more, another offset
		j := h.enqueue(t, q, fmt.Sprintf(`{"id":"later","payload":1,"run_at":%q}`, sent))
		if j.State != "delayed" || j.RunAt != stampMS(later) {
			t.Errorf("run_at %s: state %s, run_at %s; want delayed, run_at %s", sent, j.State, j.RunAt, stampMS(later))
		}
		h.wantState(t, q, "later", "delayed")
		if got := h.rdb.ZScore(t.Context(), h.key(q, "delayed"), "later").Val(); int64(got) != later.UnixMilli() {
			t.Errorf("delayed score %v, want %d", got, later.UnixMilli())
		}

		past := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
		j = h.enqueue(t, q, fmt.Sprintf(`{"id":"now","payload":1,"run_at":%q}`, past))
		if j.State != "pending" || j.RunAt != "" {
			t.Errorf("run_at %s (passed): state %s, run_at %q; want pending, none", past, j.State, j.RunAt)
		}
		epoch := h.enqueue(t, q, `{"id":"epoch","payload":1,"run_at":"1970-01-01T00:00:00Z"}`)
		if epoch.State != "pending" {
			t.Errorf("run_at 1970-01-01: state %s, want pending", epoch.State)
		}
		if got := ids(h.claim(t, q, `{"count":5}`)); len(got) != 2 || got[0] != "now" || got[1] != "epoch" {
			t.Errorf("claim got %v, want [now epoch]: the delayed job stays", got)
		}
	})
}

// TestEnqueueRunAtInBatches: every route that enqueues takes run_at, job
// by job; a dependant keeps it for its release.
func TestEnqueueRunAtInBatches(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		later := time.Now().Add(time.Hour).Truncate(time.Millisecond)
		at, past := stampMS(later), stampMS(time.Now().Add(-time.Minute))
		jobs := h.enqueueBatch(t, q, fmt.Sprintf(`{"jobs":[{"id":"a","payload":1,"run_at":%q},{"id":"b","payload":2,"run_at":%q},{"id":"c","payload":3}]}`, at, past))
		for i, want := range []struct{ state, runAt string }{{"delayed", at}, {"pending", ""}, {"pending", ""}} {
			if jobs[i].State != want.state || jobs[i].RunAt != want.runAt {
				t.Errorf("batch job %s: %s run_at %q, want %s run_at %q", jobs[i].ID, jobs[i].State, jobs[i].RunAt, want.state, want.runAt)
			}
		}

		b := must[batchView](t, h.do(t, "POST", batchesPath(q), fmt.Sprintf(`{"id":"b1","jobs":[{"id":"x","payload":1,"run_at":%q}]}`, at)), http.StatusCreated)
		if len(b.Jobs) != 1 || b.Jobs[0].State != "delayed" || b.Jobs[0].RunAt != at {
			t.Errorf("batch create with run_at: %+v, want x delayed until %s", b.Jobs, at)
		}

		h.add(t, q, "dep")
		w := h.enqueue(t, q, fmt.Sprintf(`{"id":"w","payload":1,"depends_on":["dep"],"run_at":%q}`, at))
		if w.State != "waiting" || w.RunAt != at {
			t.Errorf("dependant with run_at: %s run_at %q, want waiting run_at %s", w.State, w.RunAt, at)
		}
		h.claim(t, q, `{"count":2}`) // b and c
		h.finish(t, q, "dep")
		if got := h.wantState(t, q, "w", "delayed"); got.RunAt != at {
			t.Errorf("released dependant run_at %q, want %s", got.RunAt, at)
		}
	})
}

// TestEnqueueRunAtRefused: run_at with delay_ms, a run_at that is no RFC
// 3339 time, or one before 1970 or past 9999, is 400 naming it, on every
// route that enqueues, and nothing is written; a schedule's job has no
// run_at.
func TestEnqueueRunAtRefused(t *testing.T) {
	t.Parallel()
	var cases []refusal
	for _, tc := range []struct{ name, fields string }{
		{"with delay_ms", `"run_at":"2030-01-01T00:00:00Z","delay_ms":1000`},
		{"a date alone", `"run_at":"2030-01-01"`},
		{"no offset", `"run_at":"2030-01-01T00:00:00"`},
		{"words", `"run_at":"tomorrow"`},
		{"a number", `"run_at":1893456000000`},
		{"before 1970", `"run_at":"1969-12-31T23:59:59.999Z"`},
		{"past 9999 in UTC", `"run_at":"9999-12-31T23:59:59-01:00"`},
	} {
		job := `{"payload":1,` + tc.fields + `}`
		cases = append(cases,
			refusal{name: "one " + tc.name, method: "POST", path: "/queues/Q/jobs", body: job, status: 400, code: "EMQINVALID", field: "run_at"},
			refusal{name: "batch " + tc.name, method: "POST", path: "/queues/Q/jobs/batch", body: `{"jobs":[{"payload":0},` + job + `]}`,
				status: 400, code: "EMQINVALID", field: "jobs[1].run_at"},
			refusal{name: "batch create " + tc.name, method: "POST", path: "/queues/Q/batches", body: `{"jobs":[` + job + `]}`,
				status: 400, code: "EMQINVALID", field: "jobs[0].run_at"})
	}
	cases = append(cases, refusal{name: "schedule job", method: "PUT", path: "/queues/Q/schedules/s",
		body: `{"every_ms":60000,"job":{"payload":1,"run_at":"2030-01-01T00:00:00Z"}}`, status: 400, code: "EMQINVALID", field: "job.run_at"})
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "x")
		runRefusals(t, h, q, cases)
	})
}
