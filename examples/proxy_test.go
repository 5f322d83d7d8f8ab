package examples

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// fault is how the proxy answers a request instead of passing it on.
type fault int

const (
	pass fault = iota
	// unavailable answers 503 EMQUNAVAILABLE with Retry-After: 1, as the
	// service does while Redis is down.
	unavailable
	// unavailableLong answers the same with Retry-After: 10, longer than a
	// worker under test may wait to extend a lease (a third of it).
	unavailableLong
	// badGateway answers 502 with a text body and a Retry-After that is an
	// HTTP date, as a proxy whose upstream is down may: a worker must not
	// read the date as a number of seconds.
	badGateway
	// invalid answers 400 EMQINVALID with invalidDetail, as the service
	// refuses a result that is not valid.
	invalid
	// answerLost passes the request on, so the service acts on it, and then
	// answers 502 instead of the service's answer, as a connection cut
	// after the request reached the service.
	answerLost
)

// invalidDetail is the detail of the proxy's 400 answers.
const invalidDetail = "result: refused by the test proxy"

func (f fault) String() string {
	return [...]string{"pass", "503", "503 Retry-After: 10", "502", "400", "502 after passing"}[f]
}

// proxy stands between a worker or a producer and the service. For each
// kind of request it can answer the first ones itself, as a script says,
// and it records every request it saw.
//
// A request's kind is "claim", "enqueue", or a verb and a job id: "lease
// <id>", "complete <id>", "fail <id>".
type proxy struct {
	url      string
	upstream *httputil.ReverseProxy

	mu       sync.Mutex
	scripts  map[string][]fault // per kind, the answers still to give before passing
	seen     []request
	inFlight map[string]int // per kind, the requests passed on and not yet answered
}

// request is one request the proxy saw and how it answered it.
type request struct {
	at    time.Time
	kind  string
	fault fault
}

// newProxy starts a proxy to base, closed when the test ends.
func newProxy(t *testing.T, base string) *proxy {
	t.Helper()
	target, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{upstream: httputil.NewSingleHostReverseProxy(target), scripts: map[string][]fault{}, inFlight: map[string]int{}}
	// A call cut short when the test kills the worker is not news: no log.
	p.upstream.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(http.StatusBadGateway) }
	srv := httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(srv.Close)
	p.url = srv.URL
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("requests through the proxy:\n%s", p.String())
		}
	})
	return p
}

// script makes the proxy answer the next requests of kind with faults, in
// order, before it passes them on again.
func (p *proxy) script(kind string, faults ...fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.scripts[kind] = append(p.scripts[kind], faults...)
}

func (p *proxy) serve(w http.ResponseWriter, r *http.Request) {
	kind := kindOf(r)
	f := p.next(kind)
	switch f {
	case pass:
		p.passOn(w, r, kind)
	case answerLost:
		p.passOn(httptest.NewRecorder(), r, kind)
		writeBadGateway(w)
	case unavailable:
		writeProblem(w, http.StatusServiceUnavailable, "EMQUNAVAILABLE", "redis cannot be reached", "1")
	case unavailableLong:
		writeProblem(w, http.StatusServiceUnavailable, "EMQUNAVAILABLE", "redis cannot be reached", "10")
	case badGateway:
		writeBadGateway(w)
	case invalid:
		writeProblem(w, http.StatusBadRequest, "EMQINVALID", invalidDetail, "")
	}
}

// next records a request of kind and returns how to answer it.
func (p *proxy) next(kind string) fault {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := pass
	if s := p.scripts[kind]; len(s) > 0 {
		f, p.scripts[kind] = s[0], s[1:]
	}
	p.seen = append(p.seen, request{at: time.Now(), kind: kind, fault: f})
	return f
}

// passOn sends the request to the service, counting it in flight meanwhile.
func (p *proxy) passOn(w http.ResponseWriter, r *http.Request, kind string) {
	p.mu.Lock()
	p.inFlight[kind]++
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.inFlight[kind]--
		p.mu.Unlock()
	}()
	p.upstream.ServeHTTP(w, r)
}

// kindOf names the kind of a request: see proxy.
func kindOf(r *http.Request) string {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/") // queues q ...
	switch {
	case r.Method == "POST" && len(parts) == 3 && parts[2] == "claim":
		return "claim"
	case r.Method == "POST" && len(parts) == 3 && parts[2] == "jobs":
		return "enqueue"
	case r.Method == "POST" && len(parts) == 5 && parts[2] == "jobs":
		return parts[4] + " " + parts[3]
	}
	return r.Method + " " + r.URL.Path
}

func writeProblem(w http.ResponseWriter, status int, code, detail, retryAfter string) {
	w.Header().Set("Content-Type", "application/problem+json")
	if retryAfter != "" {
		w.Header().Set("Retry-After", retryAfter)
	}
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"type":"https://github.com/echo-mq/echo_mq#%s","title":"%s","status":%d,"detail":%q,"code":%q}`,
		strings.ToLower(code), http.StatusText(status), status, detail, code)
}

func writeBadGateway(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain")
	w.Header().Set("Retry-After", "Wed, 21 Oct 2015 07:28:00 GMT")
	w.WriteHeader(http.StatusBadGateway)
	w.Write([]byte("bad gateway\n"))
}

// times returns when each request of kind came in.
func (p *proxy) times(kind string) []time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []time.Time
	for _, r := range p.seen {
		if r.kind == kind {
			out = append(out, r.at)
		}
	}
	return out
}

// count returns how many requests of kind came in.
func (p *proxy) count(kind string) int { return len(p.times(kind)) }

// scripted returns how many scripted answers to requests of kind are
// still to give.
func (p *proxy) scripted(kind string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.scripts[kind])
}

// passing returns how many requests of kind are at the service now.
func (p *proxy) passing(kind string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.inFlight[kind]
}

// String lists every request the proxy saw, for a failure message.
func (p *proxy) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	for _, r := range p.seen {
		fmt.Fprintf(&b, "%s %s: %s\n", r.at.Format("15:04:05.000"), r.kind, r.fault)
	}
	return b.String()
}
