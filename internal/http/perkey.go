package http

import (
	"fmt"
	"net/http"
	"sync"
)

// perKey counts what each API key holds at once (open event streams,
// waiting long polls), by the key's name, so that one key cannot take the
// whole of something the service shares. The zero value is ready to use.
type perKey struct {
	mu   sync.Mutex
	held map[string]int // only names that hold something: the map does not grow
}

// acquire takes one of name's places if it holds fewer than limit, and
// returns the func that gives it back (calling it again does nothing). ok
// is false, and nothing is taken, when name holds limit already.
func (p *perKey) acquire(name string, limit int) (release func(), ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held[name] >= limit {
		return func() {}, false
	}
	if p.held == nil {
		p.held = make(map[string]int)
	}
	p.held[name]++
	var once sync.Once
	return func() { once.Do(func() { p.release(name) }) }, true
}

func (p *perKey) release(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held[name]--
	if p.held[name] <= 0 {
		delete(p.held, name)
	}
}

// keyed reports whether API keys are configured: otherwise every caller is
// the one anonymous key.
func (s *server) keyed() bool {
	return s.cfg.Keys != nil && !s.cfg.Keys.Open()
}

// keyBusy refuses a request over a per-key limit: 429 EMQBUSY, with
// Retry-After. A service-wide limit answers EMQBUSY's own 503.
func keyBusy(format string, args ...any) error {
	return &requestError{code: CodeBusy, status: http.StatusTooManyRequests, detail: fmt.Sprintf(format, args...)}
}

// holdStream takes one of the request's key's EMQ_MAX_STREAMS places for
// an event stream, or refuses with 429 EMQBUSY. The stream calls release
// when it ends; release is never nil (on a refusal it does nothing).
func (s *server) holdStream(r *http.Request) (release func(), err error) {
	release, ok := s.streams.acquire(actorOf(r).Name, s.cfg.MaxStreams)
	switch {
	case ok:
		return release, nil
	case s.keyed():
		return release, keyBusy("this key has %d event streams open (EMQ_MAX_STREAMS); close one or retry later", s.cfg.MaxStreams)
	default:
		return release, keyBusy("%d event streams are open (EMQ_MAX_STREAMS; with the API open every caller shares them); "+
			"close one or retry later", s.cfg.MaxStreams)
	}
}

// holdWaiter takes a place for a long poll: one of the key's share
// (MaxWaitersPerKey, 429 EMQBUSY past it) when keys are configured, and one
// of the service's (MaxWaiters, 503 EMQBUSY past it). The poll calls
// release when it ends; release is never nil (on a refusal it does
// nothing).
func (s *server) holdWaiter(r *http.Request) (release func(), err error) {
	releaseKey := func() {}
	if s.keyed() {
		var ok bool
		if releaseKey, ok = s.waitersByKey.acquire(actorOf(r).Name, s.cfg.MaxWaitersPerKey); !ok {
			return releaseKey, keyBusy("this key has %d long polls waiting (EMQ_MAX_WAITERS_PER_KEY); retry later", s.cfg.MaxWaitersPerKey)
		}
	}
	if s.waiting.Add(1) > int64(s.cfg.MaxWaiters) {
		s.waiting.Add(-1)
		releaseKey()
		return func() {}, &requestError{code: CodeBusy, detail: "too many claims are waiting; retry later"}
	}
	return sync.OnceFunc(func() { s.waiting.Add(-1); releaseKey() }), nil
}
