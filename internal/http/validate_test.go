package http_test

import (
	"net/http"
	"testing"

	"github.com/echo-mq/echo_mq/internal/redistest"
)

// The backoffcap rule holds wherever a Backoff is reached through a
// pointer: a schedule's job and a batch's items, as an enqueue's. A token
// of 0 is a wrong token, not a missing one.
func TestBackoffCapAndTokenZero(t *testing.T) {
	t.Parallel()
	h := onRedis(t)
	q := redistest.Queue(t)
	bad := `{"type":"fixed","delay_ms":600,"max_delay_ms":500}`
	p := wantProblem(t, h.do(t, "PUT", schedulePath(q, "s"), `{"every_ms":1000,"job":{"payload":1,"backoff":`+bad+`}}`),
		http.StatusBadRequest, "EMQINVALID")
	wantField(t, p, "job.backoff.max_delay_ms")
	p = wantProblem(t, h.do(t, "POST", jobsPath(q)+"/batch", `{"jobs":[{"payload":1},{"payload":1,"backoff":`+bad+`}]}`),
		http.StatusBadRequest, "EMQINVALID")
	wantField(t, p, "jobs[1].backoff.max_delay_ms")
	h.add(t, q, "a")
	c := h.claimOne(t, q, "a", 30_000)
	p = wantProblem(t, h.do(t, "POST", jobPath(q, "a", "complete"), `{"token":0}`), http.StatusBadRequest, "EMQINVALID")
	if len(p.Errors) != 1 || p.Errors[0].Field != "token" || p.Errors[0].Message == "is required" {
		t.Fatalf("token 0: %+v", p.Errors)
	}
	must[any](t, h.complete(t, q, "a", c.Token, ""), http.StatusOK)
}
