package http_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	emqhttp "github.com/echo-mq/echo_mq/internal/http"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

// smallLimits keeps the size tests cheap: values over 1 KiB and bodies over
// 70,000 bytes are refused.
var smallLimits = withConfig(func(c *emqhttp.Config) {
	c.MaxValueBytes = 1024
	c.MaxBodyBytes = 70_000
})

// refusal is a request the service must refuse without changing anything.
type refusal struct {
	name        string
	method      string
	path        string // "Q" stands for the test's queue
	contentType string // "" means application/json
	body        string
	status      int
	code        string
	field       string // named in the problem's errors, when set
}

// check sends r and wants its problem, with Redis as it was before.
func (r refusal) check(t *testing.T, h *harness, q string) {
	t.Helper()
	before := h.snapshot(t)
	ct := r.contentType
	if ct == "" {
		ct = "application/json"
	}
	var body []byte
	if r.body != "" {
		body = []byte(r.body)
	}
	path := strings.ReplaceAll(r.path, "Q", q)
	got := h.send(t, r.method, path, ct, body)
	p := wantProblem(t, got, r.status, r.code)
	if r.field != "" {
		wantField(t, p, r.field)
	}
	h.unchanged(t, before, r.name)
}

func runRefusals(t *testing.T, h *harness, q string, cases []refusal) {
	t.Helper()
	for _, r := range cases {
		t.Run(r.name, func(t *testing.T) { r.check(t, h, q) })
	}
}

func TestEnqueueRefused(t *testing.T) {
	t.Parallel()
	big := `"` + strings.Repeat("x", 2000) + `"`
	huge := `"` + strings.Repeat(" ", 100_000) + `"`
	post := func(name, body string, status int, code, field string) refusal {
		return refusal{name: name, method: "POST", path: "/queues/Q/jobs", body: body, status: status, code: code, field: field}
	}
	cases := []refusal{
		post("missing payload", `{"id":"a"}`, 400, "EMQINVALID", "payload"),
		post("empty body", ``, 400, "EMQINVALID", "payload"),
		post("priority 10", `{"payload":1,"priority":10}`, 400, "EMQINVALID", "priority"),
		post("priority -1", `{"payload":1,"priority":-1}`, 400, "EMQINVALID", "priority"),
		post("priority a string", `{"payload":1,"priority":"high"}`, 400, "EMQINVALID", "priority"),
		post("delay_ms -1", `{"payload":1,"delay_ms":-1}`, 400, "EMQINVALID", "delay_ms"),
		post("max_attempts 0", `{"payload":1,"max_attempts":0}`, 400, "EMQINVALID", "max_attempts"),
		post("backoff type", `{"payload":1,"backoff":{"type":"linear","delay_ms":10}}`, 400, "EMQINVALID", "backoff.type"),
		post("backoff cap below delay", `{"payload":1,"backoff":{"type":"fixed","delay_ms":10,"max_delay_ms":5}}`, 400, "EMQINVALID", "backoff.max_delay_ms"),
		post("unknown field", `{"payload":1,"bogus":2}`, 400, "EMQINVALID", "bogus"),
		post("malformed JSON", `{"payload":`, 400, "EMQINVALID", ""),
		post("not an object", `[1,2]`, 400, "EMQINVALID", ""),
		post("trailing data", `{"payload":1} {"payload":2}`, 400, "EMQINVALID", ""),
		post("a stray closing brace", `{"payload":1}}`, 400, "EMQINVALID", ""),
		post("a stray closing bracket", `{"payload":1}]`, 400, "EMQINVALID", ""),
		post("an array, not an object", `[]`, 400, "EMQINVALID", ""),
		post("id of dots", `{"id":"..","payload":1}`, 400, "EMQINVALID", "id"),
		post("id batch", `{"id":"batch","payload":1}`, 400, "EMQINVALID", "id"),
		post("id with brace", `{"id":"a{b","payload":1}`, 400, "EMQINVALID", "id"),
		post("id with space", `{"id":"a b","payload":1}`, 400, "EMQINVALID", "id"),
		post("id of 129 chars", `{"id":"`+strings.Repeat("i", 129)+`","payload":1}`, 400, "EMQINVALID", "id"),
		post("payload over the value limit", `{"payload":`+big+`}`, 413, "EMQTOOLARGE", ""),
		post("body over the body limit", `{"payload":`+huge+`}`, 413, "EMQTOOLARGE", ""),
		{name: "text/plain", method: "POST", path: "/queues/Q/jobs", contentType: "text/plain",
			body: `{"payload":1}`, status: 415, code: "EMQMEDIATYPE"},
		{name: "form", method: "POST", path: "/queues/Q/jobs", contentType: "application/x-www-form-urlencoded",
			body: `payload=1`, status: 415, code: "EMQMEDIATYPE"},
	}
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		if got := h.snapshot(t); len(got) != 0 {
			t.Fatalf("fresh prefix holds %v", got)
		}
		runRefusals(t, h, q, cases)
		if got := h.snapshot(t); len(got) != 0 {
			t.Errorf("refused enqueues created keys %v", got)
		}
	}, smallLimits)
}

func TestEnqueueBatchRefused(t *testing.T) {
	t.Parallel()
	big := `"` + strings.Repeat("x", 2000) + `"`
	post := func(name, body string, status int, code, field string) refusal {
		return refusal{name: name, method: "POST", path: "/queues/Q/jobs/batch", body: body, status: status, code: code, field: field}
	}
	cases := []refusal{
		post("1001 jobs", batchBody(1001), 400, "EMQINVALID", "jobs"),
		post("no jobs", `{"jobs":[]}`, 400, "EMQINVALID", "jobs"),
		post("jobs missing", `{}`, 400, "EMQINVALID", "jobs"),
		post("second job lacks payload", `{"jobs":[{"id":"n1","payload":1},{"id":"n2"}]}`, 400, "EMQINVALID", "jobs[1].payload"),
		post("third job's priority", `{"jobs":[{"payload":1},{"payload":2},{"payload":3,"priority":10}]}`, 400, "EMQINVALID", "jobs[2].priority"),
		post("second job's id", `{"jobs":[{"id":"n1","payload":1},{"id":"batch","payload":2}]}`, 400, "EMQINVALID", "jobs[1].id"),
		post("unknown field in a job", `{"jobs":[{"payload":1,"x":1}]}`, 400, "EMQINVALID", "jobs[0].x"),
		post("second job too large", `{"jobs":[{"id":"n1","payload":1},{"id":"n2","payload":`+big+`}]}`, 413, "EMQTOOLARGE", ""),
	}
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "existing")
		runRefusals(t, h, q, cases)
		if jobs := h.claim(t, q, `{"count":100}`); len(jobs) != 1 || jobs[0].ID != "existing" {
			t.Errorf("queue holds %v, want only the job enqueued before", ids(jobs))
		}
	}, smallLimits)
}

func TestWorkerCallsRefused(t *testing.T) {
	t.Parallel()
	big := `"` + strings.Repeat("x", 2000) + `"`
	req := func(name, method, path, body string, status int, code, field string) refusal {
		return refusal{name: name, method: method, path: path, body: body, status: status, code: code, field: field}
	}
	const claim, job = "/queues/Q/claim", "/queues/Q/jobs/held"
	cases := []refusal{
		req("claim count 0", "POST", claim, `{"count":0}`, 400, "EMQINVALID", "count"),
		req("claim count 101", "POST", claim, `{"count":101}`, 400, "EMQINVALID", "count"),
		req("claim lease_ms 99", "POST", claim, `{"lease_ms":99}`, 400, "EMQINVALID", "lease_ms"),
		req("claim lease_ms over a day", "POST", claim, `{"lease_ms":86400001}`, 400, "EMQINVALID", "lease_ms"),
		req("claim wait_ms 30001", "POST", claim, `{"wait_ms":30001}`, 400, "EMQINVALID", "wait_ms"),
		req("claim wait_ms -1", "POST", claim, `{"wait_ms":-1}`, 400, "EMQINVALID", "wait_ms"),
		req("claim unknown field", "POST", claim, `{"cnt":1}`, 400, "EMQINVALID", "cnt"),
		req("extend without token", "POST", job+"/lease", `{"lease_ms":1000}`, 400, "EMQINVALID", "token"),
		req("extend without lease_ms", "POST", job+"/lease", `{"token":1}`, 400, "EMQINVALID", "lease_ms"),
		req("extend lease_ms 99", "POST", job+"/lease", `{"token":1,"lease_ms":99}`, 400, "EMQINVALID", "lease_ms"),
		req("extend progress too large", "POST", job+"/lease", `{"token":1,"lease_ms":1000,"progress":`+big+`}`, 413, "EMQTOOLARGE", ""),
		req("complete token 0", "POST", job+"/complete", `{"token":0}`, 400, "EMQINVALID", "token"),
		req("complete token a string", "POST", job+"/complete", `{"token":"1"}`, 400, "EMQINVALID", "token"),
		req("complete result too large", "POST", job+"/complete", `{"token":1,"result":`+big+`}`, 413, "EMQTOOLARGE", ""),
		req("complete claim count 101", "POST", job+"/complete", `{"token":1,"claim":{"count":101}}`, 400, "EMQINVALID", "claim.count"),
		req("complete claim lease_ms 99", "POST", job+"/complete", `{"token":1,"claim":{"count":1,"lease_ms":99}}`, 400, "EMQINVALID", "claim.lease_ms"),
		req("batch complete of 1001", "POST", "/queues/Q/complete", completeBody(1001), 400, "EMQINVALID", "jobs"),
		req("batch complete of none", "POST", "/queues/Q/complete", `{"jobs":[]}`, 400, "EMQINVALID", "jobs"),
		req("batch complete without token", "POST", "/queues/Q/complete", `{"jobs":[{"id":"held"}]}`, 400, "EMQINVALID", "jobs[0].token"),
		req("batch complete bad id", "POST", "/queues/Q/complete", `{"jobs":[{"id":"a{b","token":1}]}`, 400, "EMQINVALID", "jobs[0].id"),
		req("batch complete result too large", "POST", "/queues/Q/complete", `{"jobs":[{"id":"held","token":1,"result":`+big+`}]}`, 413, "EMQTOOLARGE", ""),
		req("fail without error", "POST", job+"/fail", `{"token":1}`, 400, "EMQINVALID", "error"),
		req("fail retry_in_ms -1", "POST", job+"/fail", `{"token":1,"error":"x","retry_in_ms":-1}`, 400, "EMQINVALID", "retry_in_ms"),
		req("cancel token 0", "POST", job+"/cancel", `{"token":0}`, 400, "EMQINVALID", "token"),
		req("cancel unknown field", "POST", job+"/cancel", `{"why":"x"}`, 400, "EMQINVALID", "why"),
		req("cancellation without token", "GET", job+"/cancellation", ``, 400, "EMQINVALID", "token"),
		req("cancellation token abc", "GET", job+"/cancellation?token=abc", ``, 400, "EMQINVALID", "token"),
		req("cancellation token 0", "GET", job+"/cancellation?token=0", ``, 400, "EMQINVALID", "token"),
		req("remove force maybe", "DELETE", job+"?force=maybe", ``, 400, "EMQINVALID", "force"),
		req("sweep max_stalled -1", "POST", "/queues/Q/sweep", `{"max_stalled":-1}`, 400, "EMQINVALID", "max_stalled"),
		{name: "claim as text", method: "POST", path: claim, contentType: "text/plain", body: `{}`, status: 415, code: "EMQMEDIATYPE"},
	}
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "held", "waiting")
		// The cases name token 1 for the holder's token: use the real one,
		// so that each is refused for its flaw alone.
		holder := fmt.Sprintf(`"token":%d`, h.claimOne(t, q, "held", 30_000).Token)
		withToken := make([]refusal, len(cases))
		for i, c := range cases {
			c.body = tokenOne.ReplaceAllString(c.body, holder)
			withToken[i] = c
		}
		runRefusals(t, h, q, withToken)
	}, smallLimits)
}

var tokenOne = regexp.MustCompile(`"token":1\b`)

func TestPathRefused(t *testing.T) {
	t.Parallel()
	badQueues := map[string]string{
		"brace":    "a%7Bb%7D",
		"colon":    "a:b",
		"space":    "a%20b",
		"101 long": strings.Repeat("q", 101),
		"control":  "a%01b",
		"unicode":  "%C3%A9t%C3%A9",
	}
	badIDs := map[string]string{
		"batch":    "batch",
		"brace":    "a%7Bb",
		"129 long": strings.Repeat("i", 129),
		"space":    "a%20b",
	}
	routes := []struct{ method, path, body string }{
		{"POST", "/queues/Q/jobs/ID/lease", `{"token":1,"lease_ms":1000}`},
		{"POST", "/queues/Q/jobs/ID/complete", `{"token":1}`},
		{"POST", "/queues/Q/jobs/ID/fail", `{"token":1,"error":"x"}`},
		{"POST", "/queues/Q/jobs/ID/cancel", `{}`},
		{"GET", "/queues/Q/jobs/ID/cancellation?token=1", ``},
		{"GET", "/queues/Q/jobs/ID", ``},
		{"DELETE", "/queues/Q/jobs/ID?force=true", ``},
	}
	var cases []refusal
	for name, bad := range badQueues {
		for _, path := range []string{"/queues/Q/jobs", "/queues/Q/jobs/batch", "/queues/Q/claim", "/queues/Q/complete", "/queues/Q/sweep"} {
			body := map[string]string{"/queues/Q/jobs": `{"payload":1}`, "/queues/Q/jobs/batch": `{"jobs":[{"payload":1}]}`,
				"/queues/Q/complete": `{"jobs":[{"id":"x","token":1}]}`}[path]
			cases = append(cases, refusal{name: "queue " + name + " " + path, method: "POST",
				path: strings.Replace(path, "Q", bad, 1), body: body, status: 400, code: "EMQINVALID", field: "queue"})
		}
		for _, rt := range routes {
			cases = append(cases, refusal{name: "queue " + name + " " + rt.method + " " + rt.path, method: rt.method,
				path: strings.Replace(strings.Replace(rt.path, "Q", bad, 1), "ID", "x", 1), body: rt.body,
				status: 400, code: "EMQINVALID", field: "queue"})
		}
	}
	for name, bad := range badIDs {
		for _, rt := range routes {
			cases = append(cases, refusal{name: "id " + name + " " + rt.method + " " + rt.path, method: rt.method,
				path: strings.Replace(rt.path, "ID", bad, 1), body: rt.body, status: 400, code: "EMQINVALID", field: "id"})
		}
	}
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "x")
		runRefusals(t, h, q, cases)
	})
}

// completeBody is a batch complete of n jobs.
func completeBody(n int) string {
	jobs := make([]string, n)
	for i := range jobs {
		jobs[i] = fmt.Sprintf(`{"id":"j%d","token":%d}`, i, i+1)
	}
	return `{"jobs":[` + strings.Join(jobs, ",") + `]}`
}

// TestProblemNamesJSONFields: a client sees the JSON names of its request,
// in errors[].field and in the messages, never the Go names.
func TestProblemNamesJSONFields(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		r := h.do(t, "POST", jobsPath(q), `{"payload":1,"backoff":{"type":"fixed","delay_ms":10,"max_delay_ms":5}}`)
		p := wantProblem(t, r, 400, "EMQINVALID")
		wantField(t, p, "backoff.max_delay_ms")
		for _, e := range p.Errors {
			if strings.Contains(e.Message, "DelayMs") {
				t.Errorf("error %+v names the Go field DelayMs, want the JSON name delay_ms", e)
			}
		}
	})
}
