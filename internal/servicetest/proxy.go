package servicetest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// FlakyProxy stands between a client and a service and answers chosen
// requests itself: the next few requests whose path ends with a suffix
// get the answers queued for it with Answer, in order; every other
// request is passed on to the service. It records every request it sees.
// It is safe for concurrent use.
//
//	proxy := servicetest.NewFlakyProxy(t, svc.URL())
//	proxy.Answer("/claim", servicetest.Unavailable(1), servicetest.Answer{Drop: true})
//	// a worker of proxy.URL(): its first claim is answered 503, its second
//	// loses its connection, the rest reach the service.
//	claims := proxy.Requests("/claim")
type FlakyProxy struct {
	url     string
	pass    *httputil.ReverseProxy
	closing chan struct{} // closed when the test ends: hung requests return

	mu    sync.Mutex
	rules []*rule
	seen  []*Request
}

// Answer is what a FlakyProxy does with a request instead of passing it
// on: it answers Status with Header and Body, or it drops the connection,
// or it hangs. The zero Answer passes the request on, as if none were
// queued: queue it to let one request through between two others.
type Answer struct {
	Status int
	Header http.Header
	Body   string
	// PassOn passes the request on to the service first, which acts on it,
	// and throws the service's answer away before the proxy answers (or
	// drops, or hangs): as when a connection is cut after the request
	// reached the service.
	PassOn bool
	// Drop closes the connection without an answer, as a crashed service
	// does.
	Drop bool
	// Hang holds the request unanswered until the client gives up on it
	// (or the test ends), as a stuck service does.
	Hang bool
}

// Unavailable is the answer the service gives while Redis is down: 503
// EMQUNAVAILABLE as problem+json, with Retry-After: retryAfter seconds.
func Unavailable(retryAfter int) Answer {
	return Answer{
		Status: http.StatusServiceUnavailable,
		Header: http.Header{"Content-Type": {"application/problem+json"}, "Retry-After": {strconv.Itoa(retryAfter)}},
		Body: `{"type":"https://github.com/echo-mq/echo_mq#emqunavailable","title":"Service unavailable",` +
			`"status":503,"detail":"redis cannot be reached","code":"EMQUNAVAILABLE"}`,
	}
}

// Request is one request a FlakyProxy saw.
type Request struct {
	Method string
	Path   string
	// At is when it came in, Done when the proxy was finished with it
	// (answered, passed on and answered, dropped, or given up by its
	// client); Done is zero while it is in flight.
	At, Done time.Time
	// Answered says the proxy answered it (an Answer), not the service.
	Answered bool
}

// rule is the answers still queued for the requests whose path ends with
// suffix.
type rule struct {
	suffix  string
	answers []Answer
}

// NewFlakyProxy starts a FlakyProxy in front of target (a base URL such
// as Service.URL()), closed when the test ends. With no answers queued it
// passes every request on.
func NewFlakyProxy(tb testing.TB, target string) *FlakyProxy {
	tb.Helper()
	u, err := url.Parse(target)
	if err != nil {
		tb.Fatal(err)
	}
	p := &FlakyProxy{pass: httputil.NewSingleHostReverseProxy(u), closing: make(chan struct{})}
	// A request cut short because its client gave up is not news: no log.
	p.pass.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, _ error) {
		w.WriteHeader(http.StatusBadGateway)
	}
	srv := httptest.NewServer(p)
	p.url = srv.URL
	tb.Cleanup(func() {
		close(p.closing)
		srv.Close()
	})
	return p
}

// URL returns the proxy's base URL, to give the client instead of the
// service's.
func (p *FlakyProxy) URL() string { return p.url }

// Answer queues answers for the next requests whose path ends with suffix
// (such as "/claim" or "/complete"), one each, in order, after any
// answers queued for that suffix already. When a path matches several
// suffixes, the one queued first with answers left applies.
func (p *FlakyProxy) Answer(suffix string, answers ...Answer) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.rules {
		if r.suffix == suffix {
			r.answers = append(r.answers, answers...)
			return
		}
	}
	p.rules = append(p.rules, &rule{suffix: suffix, answers: answers})
}

// Requests returns the requests seen so far whose path ends with suffix
// ("" for all), in the order they came.
func (p *FlakyProxy) Requests(suffix string) []Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []Request
	for _, r := range p.seen {
		if strings.HasSuffix(r.Path, suffix) {
			out = append(out, *r)
		}
	}
	return out
}

func (p *FlakyProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	answer, seen := p.take(r)
	defer func() {
		p.mu.Lock()
		seen.Done = time.Now()
		p.mu.Unlock()
	}()
	if answer != nil && answer.PassOn {
		p.pass.ServeHTTP(httptest.NewRecorder(), r)
	}
	switch {
	case answer == nil:
		p.pass.ServeHTTP(w, r)
	case answer.Drop:
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			conn.Close()
		}
	case answer.Hang:
		// Read the body first: the server watches for the client hanging up
		// only once the body is read.
		io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-p.closing:
		}
	default:
		for k, v := range answer.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(answer.Status)
		w.Write([]byte(answer.Body))
	}
}

// take records r and returns the answer queued for it, nil when it is to
// be passed on.
func (p *FlakyProxy) take(r *http.Request) (*Answer, *Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	seen := &Request{Method: r.Method, Path: r.URL.Path, At: time.Now()}
	p.seen = append(p.seen, seen)
	for _, rule := range p.rules {
		if len(rule.answers) > 0 && strings.HasSuffix(r.URL.Path, rule.suffix) {
			a := rule.answers[0]
			rule.answers = rule.answers[1:]
			if a.passes() {
				return nil, seen
			}
			seen.Answered = true
			return &a, seen
		}
	}
	return nil, seen
}

// passes reports whether a says nothing but to pass the request on: no
// status, no drop, no hang.
func (a Answer) passes() bool { return a.Status == 0 && !a.Drop && !a.Hang }
