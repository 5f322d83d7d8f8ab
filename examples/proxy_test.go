package examples

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/servicetest"
)

// The answers the tests' proxy (a servicetest.FlakyProxy) gives to chosen
// requests instead of the service's. The proxy picks a request by the end
// of its path: "/claim" for a claim, "/jobs" for an enqueue, and "/jobs/"
// + id + "/lease", "/complete" or "/fail" for a call on one job.
var (
	// pass lets a request through to the service between two others.
	pass = servicetest.Answer{}
	// unavailable is the service's answer while Redis is down: 503
	// EMQUNAVAILABLE with Retry-After: 1.
	unavailable = servicetest.Unavailable(1)
	// unavailableLong is the same with Retry-After: 10, longer than a
	// worker under test may wait to extend a lease (a third of it).
	unavailableLong = servicetest.Unavailable(10)
	// badGateway answers 502 with a text body and a Retry-After that is an
	// HTTP date, as a proxy whose upstream is down may: a worker must not
	// read the date as a number of seconds.
	badGateway = servicetest.Answer{
		Status: http.StatusBadGateway,
		Header: http.Header{"Content-Type": {"text/plain"}, "Retry-After": {"Wed, 21 Oct 2015 07:28:00 GMT"}},
		Body:   "bad gateway\n",
	}
	// answerLost passes the request on, so that the service acts on it, and
	// then answers badGateway's 502 instead of the service's answer, as a
	// connection cut after the request reached the service.
	answerLost = servicetest.Answer{PassOn: true, Status: badGateway.Status, Header: badGateway.Header, Body: badGateway.Body}
	// invalid answers 400 EMQINVALID with invalidDetail, as the service
	// refuses a result that is not valid.
	invalid = servicetest.Answer{
		Status: http.StatusBadRequest,
		Header: http.Header{"Content-Type": {"application/problem+json"}},
		Body: `{"type":"https://github.com/echo-mq/echo_mq#emqinvalid","title":"Bad Request","status":400,` +
			`"detail":"` + invalidDetail + `","code":"EMQINVALID"}`,
	}
)

// invalidDetail is the detail of the proxy's 400 answers.
const invalidDetail = "result: refused by the test proxy"

// newProxy starts a servicetest.FlakyProxy to base, closed when the test
// ends. If the test failed, it logs every request the proxy saw.
func newProxy(t *testing.T, base string) *servicetest.FlakyProxy {
	t.Helper()
	p := servicetest.NewFlakyProxy(t, base)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("requests through the proxy:\n%s", proxyLog(p))
		}
	})
	return p
}

// proxyLog lists every request the proxy saw and who answered it, for a
// failure message.
func proxyLog(p *servicetest.FlakyProxy) string {
	var b strings.Builder
	for _, r := range p.Requests("") {
		how := "passed on"
		if r.Answered {
			how = "answered by the proxy"
		}
		took := "still in flight"
		if !r.Done.IsZero() {
			took = "done in " + r.Done.Sub(r.At).Round(time.Millisecond).String()
		}
		fmt.Fprintf(&b, "%s %s %s: %s, %s\n", r.At.Format("15:04:05.000"), r.Method, r.Path, how, took)
	}
	return b.String()
}

// atService returns how many requests whose path ends with suffix the
// proxy has passed on to the service and not yet answered.
func atService(p *servicetest.FlakyProxy, suffix string) int {
	n := 0
	for _, r := range p.Requests(suffix) {
		if !r.Answered && r.Done.IsZero() {
			n++
		}
	}
	return n
}
