package http_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/echo-mq/echo_mq/internal/redistest"
)

// fail fails job id of q under token with body's other fields.
func (h *harness) fail(tb testing.TB, q, id string, token int64, extra string) reply {
	tb.Helper()
	return h.do(tb, "POST", jobPath(q, id, "fail"), fmt.Sprintf(`{"token":%d%s}`, token, extra))
}

func TestFail(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		enqueue string // fields of the job besides id and payload
		fail    string // fields of the fail besides token
		state   string
		delay   time.Duration // run_at - the claim's started_at, for delayed
		cancel  bool          // a cancel is requested before the fail
	}{
		{"default backoff", ``, `,"error":"boom"`, "delayed", time.Second, false},
		{"fixed backoff", `,"backoff":{"type":"fixed","delay_ms":60000}`, `,"error":"boom"`, "delayed", time.Minute, false},
		{"retry_in_ms", `,"backoff":{"type":"fixed","delay_ms":60000}`, `,"error":"boom","retry_in_ms":45000`, "delayed", 45 * time.Second, false},
		{"retry_in_ms 0", ``, `,"error":"boom","retry_in_ms":0`, "pending", 0, false},
		{"fatal", ``, `,"error":"boom","fatal":true`, "dead", 0, false},
		{"last attempt", `,"max_attempts":1`, `,"error":"boom","retry_in_ms":0`, "dead", 0, false},
		{"cancel requested", ``, `,"error":"stopped","retry_in_ms":0`, "cancelled", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			forEachBackend(t, func(t *testing.T, h *harness) {
				q := redistest.Queue(t)
				h.enqueue(t, q, `{"id":"a","payload":1`+tc.enqueue+`}`)
				c := h.claimOne(t, q, "a", 30_000)
				if tc.cancel {
					must[jobView](t, h.do(t, "POST", jobPath(q, "a", "cancel"), `{"reason":"r"}`), http.StatusAccepted)
				}
				r := h.fail(t, q, "a", c.Token, tc.fail)
				j := must[jobView](t, r, http.StatusOK)
				if j.State != tc.state || j.LastError == "" || j.LeaseExpiresAt != "" || strings.Contains(string(r.Body), `"token"`) {
					t.Errorf("got %s, want state %s, last_error set, no lease and no token", r.Body, tc.state)
				}
				h.wantState(t, q, "a", tc.state)
				if tc.state == "delayed" {
					got := parseStamp(t, j.RunAt).Sub(parseStamp(t, c.StartedAt))
					if got < tc.delay || got > tc.delay+10*time.Second {
						t.Errorf("run_at - started_at = %v, want %v (and a little)", got, tc.delay)
					}
				}
				if (tc.state == "dead" || tc.state == "cancelled") != (j.FinishedAt != "") {
					t.Errorf("finished_at = %q for a %s job", j.FinishedAt, tc.state)
				}
				again := must[jobView](t, h.fail(t, q, "a", c.Token, `,"error":"again","fatal":true`), http.StatusOK)
				if again.State != j.State || again.RunAt != j.RunAt || again.LastError != j.LastError {
					t.Errorf("repeat got %+v, want the job unchanged %+v", again, j)
				}
				h.wantState(t, q, "a", tc.state)
			})
		})
	}
}

func TestFailExponentialBackoff(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		cap   int
		delay time.Duration // of the second retry
	}{
		{"doubled", 3_600_000, 40 * time.Second},
		{"capped", 30_000, 30 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			forEachBackend(t, func(t *testing.T, h *harness) {
				q := redistest.Queue(t)
				h.enqueue(t, q, fmt.Sprintf(`{"id":"a","payload":1,"max_attempts":5,
					"backoff":{"type":"exponential","delay_ms":20000,"max_delay_ms":%d}}`, tc.cap))
				c := h.claimOne(t, q, "a", 30_000)
				must[jobView](t, h.fail(t, q, "a", c.Token, `,"error":"1","retry_in_ms":0`), http.StatusOK)
				c = h.claimOne(t, q, "a", 30_000)
				if c.Attempts != 2 {
					t.Fatalf("attempts = %d, want 2", c.Attempts)
				}
				j := must[jobView](t, h.fail(t, q, "a", c.Token, `,"error":"2"`), http.StatusOK)
				got := parseStamp(t, j.RunAt).Sub(parseStamp(t, c.StartedAt))
				if got < tc.delay || got > tc.delay+5*time.Second {
					t.Errorf("second retry in %v, want %v", got, tc.delay)
				}
			})
		})
	}
}

func TestFailRefused(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "a", "b")
		a := h.claimOne(t, q, "a", 100)
		b := h.claimOne(t, q, "b", 30_000)
		wantProblem(t, h.fail(t, q, "b", b.Token+100, `,"error":"x"`), 409, "EMQSTALE")
		wantProblem(t, h.fail(t, q, "nope", b.Token, `,"error":"x"`), 404, "EMQGONE")
		h.wantState(t, q, "b", "active")
		h.sweepUntil(t, q, nil, "a")
		wantProblem(t, h.fail(t, q, "a", a.Token, `,"error":"x","fatal":true`), 409, "EMQSTALE")
		if j := h.wantState(t, q, "a", "pending"); j.LastError != "" {
			t.Errorf("the refused fail stored last_error %q", j.LastError)
		}
	})
}

func TestFailErrorTruncated(t *testing.T) {
	t.Parallel()
	for name, text := range map[string]string{
		"ascii":     strings.Repeat("e", 5000),
		"multibyte": strings.Repeat("€", 2000),
		"exact":     strings.Repeat("x", 4096),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			forEachBackend(t, func(t *testing.T, h *harness) {
				q := redistest.Queue(t)
				h.add(t, q, "a")
				c := h.claimOne(t, q, "a", 30_000)
				j := must[jobView](t, h.do(t, "POST", jobPath(q, "a", "fail"),
					map[string]any{"token": c.Token, "error": text, "fatal": true}), http.StatusOK)
				got := h.get(t, q, "a").LastError
				if got != j.LastError || len(got) > 4096 || len(got) < 4094 || !utf8.ValidString(got) || !strings.HasPrefix(text, got) {
					t.Errorf("last_error is %d bytes (valid UTF-8: %v), want the first 4096 bytes or so of the %d sent, cut on a character",
						len(got), utf8.ValidString(got), len(text))
				}
			})
		})
	}
}
