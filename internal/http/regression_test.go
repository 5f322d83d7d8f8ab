package http_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/echo-mq/echo_mq/internal/redistest"
)

// Regressions found in review, each a rule of docs/design.md.

func TestRepeatedFailAfterAnotherClaimIsAnsweredAsTheFirst(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "a")
		first := h.claimOne(t, q, "a", 30_000)
		must[jobView](t, h.fail(t, q, "a", first.Token, `,"error":"x","retry_in_ms":0`), http.StatusOK)
		second := h.claimOne(t, q, "a", 30_000)
		// The first worker retries its fail after a network error.
		again := must[jobView](t, h.fail(t, q, "a", first.Token, `,"error":"x","retry_in_ms":0`), http.StatusOK)
		if again.State != "active" {
			t.Fatalf("the repeat answered %s, want the job as it is now (active)", again.State)
		}
		// It changed nothing: the second holder still holds the job.
		must[completed](t, h.complete(t, q, "a", second.Token, ""), http.StatusOK)
	})
}

func TestRepeatedCompleteWithClaimClaimsNothingMore(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "a", "b", "c")
		a := h.claimOne(t, q, "a", 30_000)
		first := must[completed](t, h.complete(t, q, "a", a.Token, `,"claim":{"count":1}`), http.StatusOK)
		again := must[completed](t, h.complete(t, q, "a", a.Token, `,"claim":{"count":1}`), http.StatusOK)
		if first.Next == nil || len(*first.Next) != 1 || again.Next == nil || len(*again.Next) != 0 {
			t.Fatalf("next %v then %v, want one job then none", first.Next, again.Next)
		}
		h.wantState(t, q, "c", "pending")
	})
}

func TestFixedBackoffLongerThanAnHourIsKept(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.enqueue(t, q, `{"id":"a","payload":1,"backoff":{"type":"fixed","delay_ms":7200000}}`)
		c := h.claimOne(t, q, "a", 30_000)
		j := must[jobView](t, h.fail(t, q, "a", c.Token, `,"error":"x"`), http.StatusOK)
		if delay := parseStamp(t, j.RunAt).Sub(parseStamp(t, j.StartedAt)); delay < 119*60e9 {
			t.Fatalf("retry in %v, want the fixed 2 h", delay)
		}
	})
}

func TestPayloadComesBackAsSentNotHTMLEscaped(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		r := h.do(t, "POST", jobsPath(redistest.Queue(t)), `{"payload":{"s":"<b>&</b>"}}`)
		if r.Status != http.StatusCreated || !strings.Contains(string(r.Body), `"s":"<b>&</b>"`) {
			t.Fatalf("got %s, want the payload's bytes unescaped", r)
		}
	})
}

func TestClaimNextCountZeroIsRefused(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "a")
		a := h.claimOne(t, q, "a", 30_000)
		wantField(t, wantProblem(t, h.complete(t, q, "a", a.Token, `,"claim":{"count":0}`), 400, "EMQINVALID"), "claim.count")
	})
}

func TestMethodNotAllowedSaysWhatIsAllowed(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		r := h.do(t, "PUT", jobPath(redistest.Queue(t), "a"), nil)
		wantProblem(t, r, http.StatusMethodNotAllowed, "EMQMETHOD")
		if got := strings.Join(r.Header.Values("Allow"), ","); got != "GET,HEAD,PATCH,DELETE" {
			t.Fatalf("Allow = %q, want GET,HEAD,PATCH,DELETE", got)
		}
	})
}

func TestUnknownDocsFileIsAProblem(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		wantProblem(t, h.do(t, "GET", "/docs/nope.js", nil), http.StatusNotFound, "EMQNOTFOUND")
		if r := h.do(t, "GET", "/docs/swagger-ui.css", nil); r.Status != http.StatusOK {
			t.Fatalf("GET /docs/swagger-ui.css: %d, want 200", r.Status)
		}
	})
}

func TestRepeatedBatchCompleteClaimsNothingMore(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "a", "b", "c")
		a := h.claimOne(t, q, "a", 30_000)
		body := fmt.Sprintf(`{"jobs":[{"id":"a","token":%d}],"claim":{"count":1}}`, a.Token)
		first := must[batchResults](t, h.do(t, "POST", "/queues/"+q+"/complete", body), http.StatusOK)
		again := must[batchResults](t, h.do(t, "POST", "/queues/"+q+"/complete", body), http.StatusOK)
		if first.Next == nil || len(*first.Next) != 1 || again.Next == nil || len(*again.Next) != 0 {
			t.Fatalf("next %v then %v, want one job then none", first.Next, again.Next)
		}
		if again.Results[0].State != "completed" {
			t.Fatalf("the repeat answered %+v, want the completed job", again.Results[0])
		}
		h.wantState(t, q, "c", "pending")
	})
}
