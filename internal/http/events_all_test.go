package http_test

// GET /events, the merged stream of every queue, read through the
// service's router on every backend while the test goes on: a liveRecorder
// lets the test read what the handler has sent so far, and each stream's
// whole answer is checked against api/openapi.yaml when it ends. The
// stream runs at its production timing (a poll and a read of the activity
// index every 0.5 s), so waits are bounded by allEventsWait, not slept out.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/auth"
	emqhttp "github.com/echo-mq/echo_mq/internal/http"
	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

// allEventsWait bounds every wait for something the merged stream should
// do: a few polls.
const allEventsWait = 15 * time.Second

// liveRecorder is an http.ResponseWriter that the test may read while the
// handler still writes to it.
type liveRecorder struct {
	mu      sync.Mutex
	header  http.Header
	status  int
	body    bytes.Buffer
	flushed chan struct{} // closed at the first flush: the stream is open
	once    sync.Once
}

func newLiveRecorder() *liveRecorder {
	return &liveRecorder{header: http.Header{}, flushed: make(chan struct{})}
}

func (lr *liveRecorder) Header() http.Header { return lr.header }

func (lr *liveRecorder) WriteHeader(status int) {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	if lr.status == 0 {
		lr.status = status
	}
}

func (lr *liveRecorder) Write(b []byte) (int, error) {
	lr.WriteHeader(http.StatusOK)
	lr.mu.Lock()
	defer lr.mu.Unlock()
	return lr.body.Write(b)
}

func (lr *liveRecorder) Flush() { lr.once.Do(func() { close(lr.flushed) }) }

// sent is what the handler has written so far.
func (lr *liveRecorder) sent() (int, string) {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	return lr.status, lr.body.String()
}

// liveStream is one GET /events served by a harness while the test goes on.
type liveStream struct {
	req    *http.Request
	rec    *liveRecorder
	cancel context.CancelFunc // the client goes away
	done   chan struct{}      // closed when the handler returns
}

// openAllEvents sends GET /events+query with header through h and waits
// until the stream is open (its headers flushed) or answered otherwise.
func openAllEvents(tb testing.TB, h *harness, query string, header http.Header) *liveStream {
	tb.Helper()
	return openLive(tb, h, "/events"+query, header)
}

// openLive sends GET target (an event stream's) with header through h and
// waits until the stream is open (its headers flushed) or answered
// otherwise.
func openLive(tb testing.TB, h *harness, target string, header http.Header) *liveStream {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ls := &liveStream{
		req: httptest.NewRequestWithContext(ctx, http.MethodGet, target, nil),
		rec: newLiveRecorder(), cancel: cancel, done: make(chan struct{}),
	}
	for name, values := range header {
		ls.req.Header[name] = values
	}
	go func() { defer close(ls.done); h.handler.ServeHTTP(ls.rec, ls.req) }()
	tb.Cleanup(func() { cancel(); <-ls.done })
	select {
	case <-ls.rec.flushed:
	case <-ls.done:
	case <-time.After(allEventsWait):
		tb.Fatalf("GET %s neither opened nor answered within %v", target, allEventsWait)
	}
	return ls
}

// wantOpen fails the test unless the stream opened with an event stream's
// headers.
func (ls *liveStream) wantOpen(tb testing.TB) {
	tb.Helper()
	status, body := ls.rec.sent()
	if status != http.StatusOK {
		tb.Fatalf("GET %s: %d %s, want 200", ls.req.URL.Path, status, body)
	}
	for name, want := range map[string]string{
		"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no",
	} {
		if got := ls.rec.header.Get(name); got != want {
			tb.Errorf("%s = %q, want %q", name, got, want)
		}
	}
}

// mergedEvent is one event of the merged stream as a client reads it.
type mergedEvent struct {
	Lines []string // as sent
	Name  string   // the "event:" line
	Data  string
	Event struct {
		Kind  string `json:"kind"`
		Queue string `json:"queue"`
		JobID string `json:"job_id"`
		State string `json:"state"`
		At    string `json:"at"`
	}
}

// events parses the complete events sent so far; comments are skipped.
func (ls *liveStream) events(tb testing.TB) []mergedEvent {
	tb.Helper()
	_, body := ls.rec.sent()
	var out []mergedEvent
	var cur mergedEvent
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "" && len(cur.Lines) > 0:
			if cur.Name != "error" {
				if err := json.Unmarshal([]byte(cur.Data), &cur.Event); err != nil {
					tb.Fatalf("event %q: data is not an Event: %v", cur.Lines, err)
				}
			}
			out = append(out, cur)
			cur = mergedEvent{}
		case line == "" || strings.HasPrefix(line, ":"):
		default:
			cur.Lines = append(cur.Lines, line)
			if v, ok := strings.CutPrefix(line, "event: "); ok {
				cur.Name = v
			} else if v, ok := strings.CutPrefix(line, "data: "); ok {
				cur.Data += v
			}
		}
	}
	return out
}

// waitFor returns the events sent so far once done holds for them, or
// fails the test.
func (ls *liveStream) waitFor(tb testing.TB, what string, done func([]mergedEvent) bool) []mergedEvent {
	tb.Helper()
	deadline := time.Now().Add(allEventsWait)
	for {
		evs := ls.events(tb)
		if done(evs) {
			return evs
		}
		if time.Now().After(deadline) {
			tb.Fatalf("no %s within %v; the stream sent %s", what, allEventsWait, describeEvents(evs))
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// end waits for the stream's handler to return (the test stopped the
// service, or Redis failed), and checks the whole answer against
// api/openapi.yaml.
func (ls *liveStream) end(tb testing.TB) {
	tb.Helper()
	select {
	case <-ls.done:
	case <-time.After(allEventsWait):
		tb.Fatalf("the stream did not end within %v", allEventsWait)
	}
	status, body := ls.rec.sent()
	emqhttp.CheckContract(tb, ls.req, nil, status, ls.rec.header, []byte(body))
}

// jobEvents lists "kind job" of queue's events, in the order sent.
func jobEvents(evs []mergedEvent, queue string) []string {
	var out []string
	for _, ev := range evs {
		if ev.Event.Queue == queue {
			out = append(out, ev.Event.Kind+" "+ev.Event.JobID)
		}
	}
	return out
}

func describeEvents(evs []mergedEvent) string {
	lines := make([]string, len(evs))
	for i, ev := range evs {
		lines[i] = strings.Join(ev.Lines, " | ")
	}
	return fmt.Sprintf("%d events %q", len(evs), lines)
}

// wantJobEvents fails the test unless queue's events are exactly want.
func wantJobEvents(tb testing.TB, evs []mergedEvent, queue string, want ...string) {
	tb.Helper()
	if got := jobEvents(evs, queue); !slices.Equal(got, want) {
		tb.Errorf("queue %s: the stream sent %q, want %q", queue, got, want)
	}
}

// hasJobEvents is a waitFor condition: queue has at least n events.
func hasJobEvents(queue string, n int) func([]mergedEvent) bool {
	return func(evs []mergedEvent) bool { return len(jobEvents(evs, queue)) >= n }
}

func TestAllEventsMergesQueues(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		a, b := redistest.Queue(t)+"-a", redistest.Queue(t)+"-b"
		h.add(t, a, "a0") // before the stream opens: not sent
		h.add(t, b, "b0")
		st := openAllEvents(t, h, "", nil)
		st.wantOpen(t)
		h.add(t, a, "a1")
		h.add(t, b, "b1")
		j := h.claimOne(t, a, "a0", 30_000)
		must[jobView](t, h.complete(t, a, j.ID, j.Token, ""), http.StatusOK)
		h.add(t, b, "b2")
		evs := st.waitFor(t, "5 events", func(evs []mergedEvent) bool {
			return hasJobEvents(a, 3)(evs) && hasJobEvents(b, 2)(evs)
		})
		wantJobEvents(t, evs, a, "enqueued a1", "claimed a0", "completed a0")
		wantJobEvents(t, evs, b, "enqueued b1", "enqueued b2")
		for _, ev := range evs {
			if len(ev.Lines) != 2 || ev.Lines[0] != "event: "+ev.Event.Kind || !strings.HasPrefix(ev.Lines[1], "data: ") {
				t.Errorf("event lines %q, want an event line naming its kind and a data line, no id", ev.Lines)
			}
			if ev.Event.At == "" || ev.Event.State == "" {
				t.Errorf("event %s has no at or state", ev.Data)
			}
		}
		h.stop() // the stream ends as at shutdown
		st.end(t)
	})
}

// TestAllEventsNewQueueJoins: a queue created after the stream opened joins
// at the next read of the activity index with its events since the stream
// opened: its first ones are not lost.
func TestAllEventsNewQueueJoins(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		st := openAllEvents(t, h, "", nil) // on an empty registry
		st.wantOpen(t)
		q := redistest.Queue(t)
		h.add(t, q, "n1")
		h.claimOne(t, q, "n1", 30_000)
		evs := st.waitFor(t, "the new queue's events", hasJobEvents(q, 2))
		wantJobEvents(t, evs, q, "enqueued n1", "claimed n1")
		h.stop()
		st.end(t)
	})
}

// TestAllEventsObliteratedQueueLeaves: an obliterated queue leaves the
// stream without an error, the stream goes on, and a queue made again
// under that name joins again with only its new events.
func TestAllEventsObliteratedQueueLeaves(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		gone, stays := redistest.Queue(t)+"-gone", redistest.Queue(t)+"-stays"
		h.add(t, gone, "g0")
		h.add(t, stays, "s0")
		st := openAllEvents(t, h, "", nil)
		st.wantOpen(t)
		h.add(t, gone, "g1")
		st.waitFor(t, "the first event", hasJobEvents(gone, 1))
		must[map[string]any](t, h.do(t, "DELETE", "/queues/"+gone, nil), http.StatusOK)
		if h.rdb.SIsMember(context.Background(), keyspace.QueuesKey(h.prefix), gone).Val() {
			t.Fatalf("queue %s is still registered after DELETE", gone)
		}
		time.Sleep(3 * time.Second) // past a registry read: the queue has left
		h.add(t, stays, "s1")
		h.add(t, gone, "g2") // the queue again, new to the registry
		evs := st.waitFor(t, "events after the obliteration", func(evs []mergedEvent) bool {
			return hasJobEvents(stays, 1)(evs) && hasJobEvents(gone, 2)(evs)
		})
		wantJobEvents(t, evs, stays, "enqueued s1")
		wantJobEvents(t, evs, gone, "enqueued g1", "enqueued g2")
		for _, ev := range evs {
			if ev.Name == "error" {
				t.Errorf("the stream sent an error event: %s", ev.Data)
			}
		}
		h.stop()
		st.end(t)
	})
}

// TestAllEventsRefusesResume: the merged stream cannot resume, so each of
// the per-queue stream's resume points is a 400 naming it, and changes
// nothing.
func TestAllEventsRefusesResume(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		h.add(t, redistest.Queue(t), "j1")
		before := h.snapshot(t)
		for _, tc := range []struct {
			query, header string
			fields        []string
		}{
			{"?from=0", "", []string{"from"}},
			{"?from=", "", []string{"from"}},
			{"?last_event_id=1-0", "", []string{"last_event_id"}},
			{"", "1700000000000-0", []string{"Last-Event-ID"}},
			{"?from=0&last_event_id=1-0", "1-0", []string{"Last-Event-ID", "last_event_id", "from"}},
		} {
			header := http.Header{}
			if tc.header != "" {
				header.Set("Last-Event-ID", tc.header)
			}
			r := h.sendWith(t, "GET", "/events"+tc.query, header, "")
			p := wantProblem(t, r, http.StatusBadRequest, emqhttp.CodeInvalid)
			var fields []string
			for _, e := range p.Errors {
				fields = append(fields, e.Field)
				if !strings.Contains(e.Message, "/queues/{queue}/events") {
					t.Errorf("field %s: message %q, want it to name the per-queue stream", e.Field, e.Message)
				}
			}
			if !slices.Equal(fields, tc.fields) {
				t.Errorf("GET /events%s with Last-Event-ID %q: errors name %q, want %q", tc.query, tc.header, fields, tc.fields)
			}
		}
		h.unchanged(t, before, "refused GET /events")
	})
}

// sendWith sends a request with header through the router and checks it
// and its answer against api/openapi.yaml.
func (h *harness) sendWith(tb testing.TB, method, path string, header http.Header, body string) reply {
	tb.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	for name, values := range header {
		req.Header[name] = values
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	h.handler.ServeHTTP(rec, req)
	emqhttp.CheckContract(tb, req, []byte(body), rec.Code, rec.Header(), rec.Body.Bytes())
	return reply{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
}

// TestAllEventsNeedsAKey: on a service with keys, a reader key may open the
// merged stream and no key is a 401.
func TestAllEventsNeedsAKey(t *testing.T) {
	t.Parallel()
	const readerKey, workerKey = "reader-key-all-events-0123", "worker-key-all-events-0123"
	keys, err := auth.ParseKeys("reader:" + readerKey + ",worker:" + workerKey)
	if err != nil {
		t.Fatal(err)
	}
	bearer := func(key string) http.Header { return http.Header{"Authorization": {"Bearer " + key}} }
	forEachBackend(t, func(t *testing.T, h *harness) {
		r := h.do(t, "GET", "/events", nil)
		wantProblem(t, r, http.StatusUnauthorized, emqhttp.CodeUnauthorized)
		st := openAllEvents(t, h, "", bearer(readerKey))
		st.wantOpen(t)
		q := redistest.Queue(t)
		if r := h.sendWith(t, "POST", jobsPath(q), bearer(workerKey), `{"id":"k1","payload":1}`); r.Status != http.StatusCreated {
			t.Fatalf("enqueue with the worker key: %s, want 201", r)
		}
		evs := st.waitFor(t, "the enqueued event", hasJobEvents(q, 1))
		wantJobEvents(t, evs, q, "enqueued k1")
		h.stop()
		st.end(t)
	}, withConfig(func(c *emqhttp.Config) { c.Keys = keys }))
}

// TestAllEventsRedisFails: a merged stream whose Redis fails sends an error
// event, with no id, whose data is an EMQUNAVAILABLE problem, and ends; one
// asked for while Redis is down is a 503.
func TestAllEventsRedisFails(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	h := newHarness(t, closeLater(t, redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})))
	q := redistest.Queue(t)
	h.add(t, q, "r0")
	st := openAllEvents(t, h, "", nil)
	st.wantOpen(t)
	h.add(t, q, "r1")
	st.waitFor(t, "the enqueued event", hasJobEvents(q, 1))
	srv.Stop()
	evs := st.waitFor(t, "an error event", func(evs []mergedEvent) bool {
		return len(evs) > 0 && evs[len(evs)-1].Name == "error"
	})
	last := evs[len(evs)-1]
	var p problem
	if err := json.Unmarshal([]byte(last.Data), &p); err != nil || len(last.Lines) != 2 ||
		p.Code != emqhttp.CodeUnavailable || p.Status != http.StatusServiceUnavailable || p.Detail == "" {
		t.Errorf("got event %q (%v), want an error event without id whose data is an EMQUNAVAILABLE problem", last.Lines, err)
	}
	st.end(t)
	r := h.do(t, "GET", "/events", nil)
	wantProblem(t, r, http.StatusServiceUnavailable, emqhttp.CodeUnavailable)
	if r.Header.Get("Retry-After") == "" {
		t.Error("a 503 without Retry-After")
	}
}

// TestAllEventsABusyQueueHoldsNoOtherBack: while one queue's stream fills
// a page on every read (a backlog that keeps growing), another queue's
// event still comes, at the next read. A stream that read on only the
// full queues would starve the quiet one for as long as the busy one
// stays busy. On the real Redis only: it is about the pump, not the store.
func TestAllEventsABusyQueueHoldsNoOtherBack(t *testing.T) {
	t.Parallel()
	h := newHarness(t, backends[0].connect(t, &redis.Options{}))
	busy, quiet := redistest.Queue(t)+"-busy", redistest.Queue(t)+"-quiet"
	h.add(t, busy, "b0")
	h.add(t, quiet, "q0")
	st := openAllEvents(t, h, "", nil)
	st.wantOpen(t)

	// The busy queue's stream gets 500 entries a round trip, five times what
	// one read takes, until the quiet queue's event has come.
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	writing := make(chan error, 1)
	go func() { writing <- keepFilling(ctx, h, busy) }()
	st.waitFor(t, "the busy queue's events", hasJobEvents(busy, 1))
	h.add(t, quiet, "q1")
	const wait = 5 * time.Second // ample for one read; short, as the busy stream grows meanwhile
	deadline := time.Now().Add(wait)
	for {
		if _, body := st.rec.sent(); strings.Contains(body, `"job_id":"q1"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the quiet queue's event did not come within %v while another queue was busy", wait)
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	if err := <-writing; err != nil {
		t.Fatal(err)
	}
}

// keepFilling adds entries to q's event stream, 500 a round trip (keeping
// about the last 50,000), until ctx ends; it returns the first Redis
// error, nil once ctx ends.
func keepFilling(ctx context.Context, h *harness, q string) error {
	key := keyspace.NewQueue(h.prefix, q).Events()
	for n := 0; ; n++ {
		_, err := h.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := range 500 {
				p.XAdd(ctx, &redis.XAddArgs{Stream: key, MaxLen: 50_000, Approx: true,
					Values: []any{"kind", "enqueued", "job", fmt.Sprintf("busy-%d-%d", n, i), "state", "pending"}})
			}
			return nil
		})
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
