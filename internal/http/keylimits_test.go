package http_test

// The per-key limits: EMQ_MAX_STREAMS open event streams of one key, and
// EMQ_MAX_WAITERS_PER_KEY waiting long polls of one key. Both are per
// service replica, so each test goes through one (harness.only). No test
// sleeps: a stream's place is known taken once its headers are flushed,
// and free once its handler returned.

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/auth"
	emqhttp "github.com/echo-mq/echo_mq/internal/http"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

// keyLimitWait bounds every wait for an answer that should come.
const keyLimitWait = 15 * time.Second

func bearer(key string) http.Header { return http.Header{"Authorization": {"Bearer " + key}} }

// twoKeys configures two API keys of role; each test uses its own.
func twoKeys(tb testing.TB, role, a, b string) option {
	tb.Helper()
	keys, err := auth.ParseKeys(role + ":" + a + "," + role + ":" + b)
	if err != nil {
		tb.Fatal(err)
	}
	return withConfig(func(c *emqhttp.Config) { c.Keys = keys })
}

// wantBusy fails the test unless r is a problem+json EMQBUSY of status
// with a Retry-After header.
func wantBusy(tb testing.TB, what string, r reply, status int) {
	tb.Helper()
	p := decode[problem](tb, r)
	if r.Status != status || p.Code != emqhttp.CodeBusy || p.Status != status || p.Title == "" || p.Detail == "" ||
		!strings.HasPrefix(r.Header.Get("Content-Type"), "application/problem+json") {
		tb.Fatalf("%s: got %s (Content-Type %q), want a %d EMQBUSY problem", what, r, r.Header.Get("Content-Type"), status)
	}
	if r.Header.Get("Retry-After") == "" {
		tb.Errorf("%s: %d EMQBUSY without Retry-After", what, status)
	}
}

// refused fails the test unless ls was refused with 429 EMQBUSY before the
// stream started: openLive returned on its answer, not on an open stream.
func (ls *liveStream) refused(tb testing.TB) {
	tb.Helper()
	status, body := ls.rec.sent()
	select {
	case <-ls.done:
	default:
		tb.Fatalf("GET %s: the stream opened (%d), want it refused 429 EMQBUSY", ls.req.URL.Path, status)
	}
	wantBusy(tb, "GET "+ls.req.URL.Path, reply{Status: status, Header: ls.rec.header, Body: []byte(body)}, http.StatusTooManyRequests)
	emqhttp.CheckContract(tb, ls.req, nil, status, ls.rec.header, []byte(body))
}

// TestEventStreamsAreCappedPerKey: with EMQ_MAX_STREAMS=2 a key's third
// stream, of either events route, is 429 EMQBUSY with Retry-After, while
// another key still opens one; a stream that ends gives its place back.
func TestEventStreamsAreCappedPerKey(t *testing.T) {
	t.Parallel()
	const keyA, keyB = "reader-key-streams-a-0123", "reader-key-streams-b-0123"
	forEachBackend(t, func(t *testing.T, h *harness) {
		h = h.only(0)
		queueEvents := "/queues/" + redistest.Queue(t) + "/events"
		a1 := openLive(t, h, queueEvents, bearer(keyA))
		a1.wantOpen(t)
		a2 := openLive(t, h, "/events", bearer(keyA))
		a2.wantOpen(t)
		for _, target := range []string{queueEvents, "/events"} {
			openLive(t, h, target, bearer(keyA)).refused(t)
		}
		b := openLive(t, h, "/events", bearer(keyB))
		b.wantOpen(t)
		a1.cancel() // the client goes away: once its handler returns, its place is free
		a1.end(t)
		a3 := openLive(t, h, queueEvents, bearer(keyA))
		a3.wantOpen(t)
		openLive(t, h, "/events", bearer(keyA)).refused(t)
		h.stop() // the streams end as at shutdown
		for _, ls := range []*liveStream{a2, a3, b} {
			ls.end(t)
		}
	}, twoKeys(t, "reader", keyA, keyB), withConfig(func(c *emqhttp.Config) { c.MaxStreams = 2 }))
}

// TestEventStreamsAreCappedWithTheAPIOpen: with no keys every caller is the
// one anonymous key, so EMQ_MAX_STREAMS caps the streams of all together.
func TestEventStreamsAreCappedWithTheAPIOpen(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		h = h.only(0)
		first := openLive(t, h, "/events", nil)
		first.wantOpen(t)
		openLive(t, h, "/queues/"+redistest.Queue(t)+"/events", nil).refused(t)
		h.stop()
		first.end(t)
	}, withConfig(func(c *emqhttp.Config) { c.MaxStreams = 1 }))
}

// claimAs starts a claim on q with key and body, and returns where its
// answer comes. It is not checked against api/openapi.yaml: it touches no
// testing.TB, so that it may answer after its test.
func (h *harness) claimAs(q, key, body string) <-chan reply {
	out := make(chan reply, 1)
	go func() {
		req := httptest.NewRequest(http.MethodPost, "/queues/"+q+"/claim", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		rec := httptest.NewRecorder()
		h.handler.ServeHTTP(rec, req)
		out <- reply{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
	}()
	return out
}

// addAs enqueues a job per id on q with key.
func (h *harness) addAs(tb testing.TB, q, key string, ids ...string) {
	tb.Helper()
	for _, id := range ids {
		if r := h.sendWith(tb, http.MethodPost, jobsPath(q), bearer(key), `{"id":"`+id+`","payload":1}`); r.Status != http.StatusCreated {
			tb.Fatalf("enqueue %s: %s, want 201", id, r)
		}
	}
}

// firstReply waits for the first of polls to answer, and returns its index
// and answer (the others' answers stay in their channels); the test fails
// when none answers within keyLimitWait.
func firstReply(tb testing.TB, what string, polls []<-chan reply) (int, reply) {
	tb.Helper()
	cases := []reflect.SelectCase{{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(time.After(keyLimitWait))}}
	for _, p := range polls {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(p)})
	}
	i, v, _ := reflect.Select(cases)
	if i == 0 {
		tb.Fatalf("%s: none of %d claims answered within %v", what, len(polls), keyLimitWait)
	}
	return i - 1, v.Interface().(reply)
}

// without is polls but the i-th.
func without(polls []<-chan reply, i int) []<-chan reply {
	return append(append([]<-chan reply(nil), polls[:i]...), polls[i+1:]...)
}

// TestLongPollsAreSharedPerKey: with MaxWaiters 4 and a share of 3, a key's
// fourth waiting claim is 429 EMQBUSY with Retry-After while another key's
// claim still waits; past the service-wide cap it is 503 EMQBUSY as
// before; and an answered poll gives its place back.
func TestLongPollsAreSharedPerKey(t *testing.T) {
	t.Parallel()
	const keyA, keyB = "worker-key-waiters-a-0123", "worker-key-waiters-b-0123"
	const wait = `{"wait_ms":30000}`
	forEachBackend(t, func(t *testing.T, h *harness) {
		h = h.only(0)
		qa, qb := redistest.Queue(t)+"-a", redistest.Queue(t)+"-b"
		// Four claims of key A at once: whichever comes last finds the
		// other three waiting, and is refused at once.
		var pollsA []<-chan reply
		for range 4 {
			pollsA = append(pollsA, h.claimAs(qa, keyA, wait))
		}
		i, r := firstReply(t, "key A over its share", pollsA)
		wantBusy(t, "key A's fourth waiting claim", r, http.StatusTooManyRequests)
		claim := httptest.NewRequest(http.MethodPost, "/queues/"+qa+"/claim", strings.NewReader(wait))
		claim.Header.Set("Content-Type", "application/json")
		emqhttp.CheckContract(t, claim, []byte(wait), r.Status, r.Header, r.Body)
		pollsA = without(pollsA, i)
		// Key B has the fourth place: of two claims of B, one waits, the
		// other finds all four places taken, the service-wide cap.
		pollsB := []<-chan reply{h.claimAs(qb, keyB, wait), h.claimAs(qb, keyB, wait)}
		i, r = firstReply(t, "four claims waiting", pollsB)
		wantBusy(t, "a claim past MaxWaiters", r, http.StatusServiceUnavailable)
		pollsB = without(pollsB, i)
		h.addAs(t, qb, keyB, "b1")
		if _, r := firstReply(t, "key B's waiting claim", pollsB); r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"b1"`) {
			t.Fatalf("key B's waiting claim answered %s, want job b1", r)
		}
		h.addAs(t, qa, keyA, "a1", "a2", "a3")
		for len(pollsA) > 0 {
			i, r := firstReply(t, "key A's waiting claims", pollsA)
			if r.Status != http.StatusOK {
				t.Fatalf("a waiting claim of key A answered %s, want a job", r)
			}
			pollsA = without(pollsA, i)
		}
		// Their places are free again: three claims of A wait at once.
		for range 3 {
			pollsA = append(pollsA, h.claimAs(qa, keyA, wait))
		}
		h.addAs(t, qa, keyA, "a4", "a5", "a6")
		for len(pollsA) > 0 {
			i, r := firstReply(t, "key A's claims after its polls were answered", pollsA)
			if r.Status != http.StatusOK {
				t.Fatalf("key A's claim, after its earlier polls were answered, answered %s, want a job", r)
			}
			pollsA = without(pollsA, i)
		}
	}, twoKeys(t, "worker", keyA, keyB), withConfig(func(c *emqhttp.Config) { c.MaxWaiters, c.MaxWaitersPerKey = 4, 3 }))
}

// TestLongPollsHaveNoShareWithTheAPIOpen: with no keys every caller is the
// one anonymous key, and only MaxWaiters caps the waiting claims.
func TestLongPollsHaveNoShareWithTheAPIOpen(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		h = h.only(0)
		q := redistest.Queue(t)
		var polls []<-chan reply
		for range 3 {
			polls = append(polls, h.claimAs(q, "", `{"wait_ms":30000}`))
		}
		i, r := firstReply(t, "three claims with two places", polls)
		wantBusy(t, "a claim past MaxWaiters", r, http.StatusServiceUnavailable)
		polls = without(polls, i)
		h.add(t, q, "j1", "j2")
		for len(polls) > 0 {
			i, r := firstReply(t, "the waiting claims", polls)
			if r.Status != http.StatusOK {
				t.Fatalf("a waiting claim answered %s, want a job", r)
			}
			polls = without(polls, i)
		}
	}, withConfig(func(c *emqhttp.Config) { c.MaxWaiters, c.MaxWaitersPerKey = 2, 1 }))
}
