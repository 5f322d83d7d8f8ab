package http_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/echo-mq/echo_mq/internal/redistest"
)

// producerTrace is a producer's traceparent, as a W3C Trace Context
// library sends it.
const producerTrace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// enqueueTraced enqueues body on path with the given traceparent header.
func (h *harness) enqueueTraced(tb testing.TB, path, traceparent string, body any) reply {
	tb.Helper()
	raw, err := json.Marshal(body)
	if err != nil {
		tb.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", traceparent)
	return h.serve(tb, req, raw)
}

// TestTraceparentKeptWithTheJob: an enqueue's traceparent is the job's
// traceparent on enqueue, claim and get, for one job and for a batch; an
// invalid one is ignored, as W3C Trace Context asks, and a job enqueued
// without one has none.
func TestTraceparentKeptWithTheJob(t *testing.T) {
	forEachBackend(t, func(t *testing.T, h *harness) {
		one := must[jobView](t, h.enqueueTraced(t, jobsPath("tq"), producerTrace,
			map[string]any{"id": "one", "payload": 1}), http.StatusCreated)
		if one.Traceparent != producerTrace {
			t.Errorf("enqueue answered traceparent %q, want %q", one.Traceparent, producerTrace)
		}
		batch := must[jobList](t, h.enqueueTraced(t, jobsPath("tq")+"/batch", producerTrace,
			map[string]any{"jobs": []map[string]any{{"id": "b1", "payload": 1}, {"id": "b2", "payload": 2}}}), http.StatusOK)
		for _, j := range batch.Jobs {
			if j.Traceparent != producerTrace {
				t.Errorf("batch job %s: traceparent %q, want %q", j.ID, j.Traceparent, producerTrace)
			}
		}
		for _, bad := range []string{
			"00-00000000000000000000000000000000-00f067aa0ba902b7-01",  // all-zero trace id
			"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",  // uppercase
			"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  // version ff
			"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-", // version 00 with more
			"not a traceparent",
		} {
			j := must[jobView](t, h.enqueueTraced(t, jobsPath("tq"), bad,
				map[string]any{"payload": 3}), http.StatusCreated)
			if j.Traceparent != "" {
				t.Errorf("traceparent %q was kept as %q", bad, j.Traceparent)
			}
		}
		later := "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-" + strings.Repeat("a", 4000)
		j := must[jobView](t, h.enqueueTraced(t, jobsPath("tq"), later, map[string]any{"payload": 5}), http.StatusCreated)
		if want := later[:55]; j.Traceparent != want {
			t.Errorf("a later version's traceparent was kept as %q, want its first 55 bytes %q", j.Traceparent, want)
		}
		h.enqueue(t, "tq", map[string]any{"id": "plain", "payload": 4})

		got := map[string]string{}
		for _, j := range h.claim(t, "tq", map[string]any{"count": 10, "lease_ms": 30000}) {
			got[j.ID] = j.Traceparent
		}
		for _, id := range []string{"one", "b1", "b2"} {
			if got[id] != producerTrace {
				t.Errorf("claim of %s answered traceparent %q, want %q", id, got[id], producerTrace)
			}
		}
		if tp, ok := got["plain"]; !ok || tp != "" {
			t.Errorf("claim of a job enqueued without one: traceparent %q (claimed %v)", tp, ok)
		}
		if j := h.get(t, "tq", "one"); j.Traceparent != producerTrace {
			t.Errorf("get answered traceparent %q, want %q", j.Traceparent, producerTrace)
		}
	})
}

// TestTraceparentPushedWithTracingOff: with tracing off, a pushed job's
// receiver is handed the producer's traceparent as it was sent, on the
// POST's header and in the job; a job without one is sent none.
func TestTraceparentPushedWithTracingOff(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		rc := newReceiver(t, func(d delivery, w http.ResponseWriter) { w.WriteHeader(http.StatusOK) })
		must[jobView](t, h.enqueueTraced(t, jobsPath(q), producerTrace, map[string]any{"id": "traced", "payload": 1}), http.StatusCreated)
		h.enqueue(t, q, map[string]any{"id": "plain", "payload": 2})
		putPush(t, h, q, `{"url":"`+rc.URL+`/hook"}`)
		until(t, "both delivered", func() bool { return h.queueOf(t, q).Counts["completed"] == 2 })
		for _, d := range rc.got() {
			want := map[string]string{"traced": producerTrace, "plain": ""}[d.job.ID]
			if got := d.header.Get("traceparent"); got != want || d.job.Traceparent != want {
				t.Errorf("%s: header traceparent %q, job's %q, want %q", d.job.ID, got, d.job.Traceparent, want)
			}
		}
	}, withPush("127.0.0.1"))
}
