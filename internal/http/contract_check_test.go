package http

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/echo-mq/echo_mq/api"
)

// failures is a testing.TB that keeps what CheckContract reports instead of
// failing the test, so that a test can ask whether it reported.
type failures struct {
	testing.TB
	msgs []string
}

func (f *failures) Helper() {}
func (f *failures) Errorf(format string, args ...any) {
	f.msgs = append(f.msgs, fmt.Sprintf(format, args...))
}

// TestContractCheckBites proves the check that runs under every contract
// test: exchanges that break api/openapi.yaml in one way each are reported,
// and the same exchanges done right are not. It uses a contract of its own,
// so that its made-up exchanges cover no operation of the real run.
func TestContractCheckBites(t *testing.T) {
	t.Parallel()
	c, err := newContract(api.Spec)
	if err != nil {
		t.Fatal(err)
	}
	const job = `"id":"j1","queue":"q","payload":{"x":1},"priority":0,"attempts":1,"max_attempts":3,` +
		`"stalled":0,"cancel_requested":false,"created_at":"2026-11-29T19:06:37.123Z"`
	const problem = `"type":"https://github.com/echo-mq/echo_mq#emqgone","title":"No such job","status":404,"detail":"no such job: j1"`
	const event = `"queue":"q","job_id":"j1","state":"completed","at":"2026-11-29T19:06:37.123Z"`
	const jsonType, problemType, streamType = "application/json", "application/problem+json", "text/event-stream"
	tests := []struct {
		name         string
		method, path string
		sent         string // the request body, as JSON
		status       int
		contentType  string
		answer       string
		want         string // in the report; "" for none
	}{
		{"a job", "GET", "/queues/q/jobs/j1", "", 200, jsonType, `{"state":"active",` + job + `}`, ""},
		{"a field of the wrong type", "GET", "/queues/q/jobs/j1", "", 200, jsonType,
			`{"state":"active",` + strings.Replace(job, `"priority":0`, `"priority":"high"`, 1) + `}`, "priority"},
		{"a required field missing", "GET", "/queues/q/jobs/j1", "", 200, jsonType, `{` + job + `}`, "state"},
		{"a value outside the enum", "GET", "/queues/q/jobs/j1", "", 200, jsonType, `{"state":"running",` + job + `}`, "state"},
		{"a status the operation does not list", "GET", "/queues/q/jobs/j1", "", 418, problemType,
			`{` + problem + `,"code":"EMQGONE"}`, "status is not supported"},
		{"a problem", "GET", "/queues/q/jobs/j1", "", 404, problemType, `{` + problem + `,"code":"EMQGONE"}`, ""},
		{"a problem without its code", "GET", "/queues/q/jobs/j1", "", 404, problemType, `{` + problem + `}`, "code"},
		{"a problem sent as plain JSON", "GET", "/queues/q/jobs/j1", "", 404, jsonType, `{` + problem + `,"code":"EMQGONE"}`, "Content-Type"},
		{"a last page", "GET", "/queues/q/jobs?state=active", "", 200, jsonType, `{"jobs":[],"next_cursor":null}`, ""},
		{"a cursor that is a number", "GET", "/queues/q/jobs?state=active", "", 200, jsonType, `{"jobs":[],"next_cursor":5}`, "next_cursor"},
		{"a batch result, job or problem", "POST", "/queues/q/complete", `{"jobs":[{"id":"j1","token":1},{"id":"j2","token":1}]}`, 200, jsonType,
			`{"results":[{"state":"completed",` + job + `},{"id":"j2",` + problem + `,"code":"EMQGONE"}]}`, ""},
		{"a batch refusal without the job's id", "POST", "/queues/q/complete", `{"jobs":[{"id":"j2","token":1}]}`, 200, jsonType,
			`{"results":[{` + problem + `,"code":"EMQGONE"}]}`, "results"},
		{"a batch result that is neither", "POST", "/queues/q/complete", `{"jobs":[{"id":"j1","token":1}]}`, 200, jsonType,
			`{"results":[{"id":"j1"}]}`, "results"},
		{"an accepted request the spec refuses", "POST", "/queues/q/claim", `{"count":"many"}`, 200, jsonType, `{"jobs":[]}`, "refuses the request"},
		{"a refused request the spec refuses", "POST", "/queues/q/claim", `{"count":"many"}`, 400, problemType,
			`{"type":"https://github.com/echo-mq/echo_mq#emqinvalid","title":"Invalid request","status":400,"detail":"bad","code":"EMQINVALID"}`, ""},
		{"an event stream", "GET", "/queues/q/events", "", 200, streamType,
			": ping\n\nid: 1-0\nevent: completed\ndata: {\"kind\":\"completed\"," + event + "}\n\n", ""},
		{"an event named for another kind", "GET", "/queues/q/events", "", 200, streamType,
			"id: 1-0\nevent: failed\ndata: {\"kind\":\"completed\"," + event + "}\n\n", "kind"},
		{"an event without its time", "GET", "/queues/q/events", "", 200, streamType,
			"id: 1-0\nevent: completed\ndata: {\"kind\":\"completed\",\"queue\":\"q\"}\n\n", "at"},
		{"a route the spec does not describe", "GET", "/nope", "", 404, problemType, `{}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, tt.path, strings.NewReader(tt.sent))
			if tt.sent != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			header := http.Header{"Content-Type": {tt.contentType}}
			got := &failures{TB: t}
			c.check(got, req, []byte(tt.sent), tt.status, header, []byte(tt.answer), true)
			report := strings.Join(got.msgs, "\n")
			switch {
			case tt.want == "" && report != "":
				t.Errorf("reported a valid exchange:\n%s", report)
			case tt.want != "" && !strings.Contains(report, tt.want):
				t.Errorf("report %q, want one that names %q", report, tt.want)
			}
		})
	}
	if !c.covered["getJob"] || !c.covered["completeJobs"] || c.covered["claimJobs"] {
		t.Errorf("covered %v: want getJob and completeJobs (valid 2xx exchanges), not claimJobs (refused)", c.covered)
	}
}
