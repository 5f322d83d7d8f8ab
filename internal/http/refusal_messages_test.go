package http_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/echo-mq/echo_mq/internal/redistest"
)

// wantMessage fails tb unless p names field with a message that says want.
func wantMessage(tb testing.TB, p problem, field, want string) {
	tb.Helper()
	for _, e := range p.Errors {
		if e.Field == field {
			if !strings.Contains(e.Message, want) {
				tb.Errorf("%s: %q, want it to say %q", field, e.Message, want)
			}
			return
		}
	}
	tb.Errorf("problem errors %+v name no %s", p.Errors, field)
}

// A name of dots alone ("." or "..") is refused wherever a name goes, and
// the rule the refusal quotes is one that refuses it: "not only dots".
func TestAllDotNamesAreRefusedByTheRuleQuoted(t *testing.T) {
	t.Parallel()
	h := newHarness(t, redistest.Client(t))
	q := redistest.Queue(t)
	for _, dots := range []string{".", ".."} {
		for _, c := range []struct {
			method, path, body, field string
		}{
			{"POST", "/queues/" + dots + "/jobs", `{"payload":1}`, "queue"},
			{"GET", "/queues/" + dots + "/jobs/a", ``, "queue"},
			{"GET", "/queues/" + q + "/jobs/" + dots, ``, "id"},
			{"POST", "/queues/" + q + "/jobs/" + dots + "/lease", `{"token":1,"lease_ms":1000}`, "id"},
			{"POST", "/queues/" + q + "/groups/" + dots + "/pause", ``, "group"},
			{"PUT", schedulePath(q, dots), `{"every_ms":1000,"job":{"payload":1}}`, "name"},
			{"POST", jobsPath(q), fmt.Sprintf(`{"id":%q,"payload":1}`, dots), "id"},
			{"POST", jobsPath(q), fmt.Sprintf(`{"payload":1,"group":%q}`, dots), "group"},
			{"POST", jobsPath(q) + "/batch", fmt.Sprintf(`{"jobs":[{"id":%q,"payload":1}]}`, dots), "jobs[0].id"},
			{"POST", "/queues/" + q + "/complete", fmt.Sprintf(`{"jobs":[{"id":%q,"token":1}]}`, dots), "jobs[0].id"},
			{"POST", "/queues/" + q + "/batches", fmt.Sprintf(`{"id":%q,"jobs":[{"payload":1}]}`, dots), "id"},
		} {
			var body any
			if c.body != "" {
				body = c.body
			}
			p := wantProblem(t, h.do(t, c.method, c.path, body), http.StatusBadRequest, "EMQINVALID")
			wantMessage(t, p, c.field, "not only dots")
		}
	}
}

// A token that is there but cannot be one a claim gave out (0, or below)
// is a wrong token, and says so; only a token that is not there "is
// required". Every route that takes a token tells them apart.
func TestATokenOfZeroIsWrongNotMissing(t *testing.T) {
	t.Parallel()
	const wrong = "must be a token a claim gave out (a positive integer)"
	h := newHarness(t, redistest.Client(t))
	q := redistest.Queue(t)
	h.add(t, q, "held")
	h.claimOne(t, q, "held", 30_000)
	job := jobPath(q, "held")
	routes := []struct {
		method, path, field string
		body                func(token string) string // "" token: none
	}{
		{"POST", job + "/lease", "token", func(tok string) string { return `{` + tok + `"lease_ms":1000}` }},
		{"POST", job + "/complete", "token", func(tok string) string { return `{` + strings.TrimSuffix(tok, ",") + `}` }},
		{"POST", job + "/fail", "token", func(tok string) string { return `{` + tok + `"error":"x"}` }},
		{"POST", job + "/snooze", "token", func(tok string) string { return `{` + tok + `"delay_ms":0}` }},
		{"POST", "/queues/" + q + "/complete", "jobs[0].token", func(tok string) string {
			return `{"jobs":[{` + tok + `"id":"held"}]}`
		}},
	}
	for _, rt := range routes {
		p := wantProblem(t, h.do(t, rt.method, rt.path, rt.body("")), http.StatusBadRequest, "EMQINVALID")
		wantMessage(t, p, rt.field, "is required")
		for _, token := range []string{"0", "-1"} {
			p := wantProblem(t, h.do(t, rt.method, rt.path, rt.body(`"token":`+token+`,`)), http.StatusBadRequest, "EMQINVALID")
			wantMessage(t, p, rt.field, wrong)
		}
	}
	// A cancel's token is optional: absent is fine, 0 is wrong.
	p := wantProblem(t, h.do(t, "POST", job+"/cancel", `{"token":0}`), http.StatusBadRequest, "EMQINVALID")
	wantMessage(t, p, "token", wrong)
	// The cancellation check takes its token in the query.
	p = wantProblem(t, h.do(t, "GET", job+"/cancellation", nil), http.StatusBadRequest, "EMQINVALID")
	wantMessage(t, p, "token", "is required")
	for _, token := range []string{"0", "-1", "abc"} {
		p := wantProblem(t, h.do(t, "GET", job+"/cancellation?token="+token, nil), http.StatusBadRequest, "EMQINVALID")
		wantMessage(t, p, "token", wrong)
	}
	h.wantState(t, q, "held", "active")
}
