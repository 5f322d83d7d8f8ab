package http

// These tests are internal (package http): they mount handleEvents on a
// router and a real HTTP server of their own, so that they can set its
// timing and read streams as a client does. They share the test binary, and
// so the redis-server that TestMain in main_test.go starts. The stream
// through NewHandler's router, checked against api/openapi.yaml, is
// events_route_test.go's.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/events"
	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/memstore"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

// eventWait bounds every wait for something a stream should do.
const eventWait = 10 * time.Second

// forEachEventBackend runs fn as a parallel subtest on the real redis-server
// and on the embedded store, each with a client of its own.
func forEachEventBackend(t *testing.T, fn func(t *testing.T, rdb redis.UniversalClient), opts ...func(*redis.Options)) {
	t.Helper()
	connect := map[string]func(tb testing.TB) string{
		"redis":    func(testing.TB) string { return redistest.Addr() },
		"embedded": func(tb testing.TB) string { return miniredis.RunT(tb).Addr() },
	}
	for _, name := range []string{"redis", "embedded"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			o := &redis.Options{Addr: connect[name](t)}
			if name == "embedded" {
				memstore.Configure(o) // as cmd/api's client of it: no read deadline
			}
			for _, f := range opts {
				f(o)
			}
			rdb := redis.NewClient(o)
			t.Cleanup(func() { rdb.Close() })
			fn(t, rdb)
		})
	}
}

// eventsRig is the events route on a real HTTP server over one Redis.
type eventsRig struct {
	rdb      redis.UniversalClient
	prefix   string
	srv      *httptest.Server
	stopping chan struct{}
	stopOnce sync.Once
	exits    chan struct{} // a value each time the handler returns
}

// rigOption tunes an eventsRig.
type rigOption struct {
	prefix string             // "": one of the test's own
	timing *eventTiming       // nil: handleEvents' own timing
	server func(*http.Server) // the HTTP server's settings
}

// newEventsRig mounts the events route, behind the service's middleware,
// on an httptest server, with a key prefix unique to the test.
func newEventsRig(tb testing.TB, rdb redis.UniversalClient, opt rigOption) *eventsRig {
	tb.Helper()
	rig := &eventsRig{rdb: rdb, prefix: opt.prefix, stopping: make(chan struct{}), exits: make(chan struct{}, 1000)}
	if rig.prefix == "" {
		rig.prefix = "emqt-" + redistest.Queue(tb)
	}
	s := &server{cfg: Config{Stopping: rig.stopping, MaxStreams: DefaultMaxStreams}, log: slog.New(slog.DiscardHandler)}
	streams := events.NewLog(rdb, rig.prefix)
	handler := s.handleEvents(streams)
	if opt.timing != nil {
		handler = s.streamEvents(streams, *opt.timing)
	}
	r := chi.NewRouter()
	r.Use(middleware.RequestID, s.logRequests, s.recoverer)
	r.Get("/queues/{queue}/events", func(w http.ResponseWriter, r *http.Request) {
		defer func() { rig.exits <- struct{}{} }()
		handler(w, r)
	})
	rig.srv = httptest.NewUnstartedServer(r)
	if opt.server != nil {
		opt.server(rig.srv.Config)
	}
	rig.srv.Start()
	tb.Cleanup(rig.srv.Close)
	tb.Cleanup(rig.stop) // first: open streams end, so Close does not wait on them
	return rig
}

// stop closes Stopping, as a graceful shutdown does.
func (rig *eventsRig) stop() { rig.stopOnce.Do(func() { close(rig.stopping) }) }

// url is the events route of queue with the query.
func (rig *eventsRig) url(queue, query string) string {
	u := rig.srv.URL + "/queues/" + queue + "/events"
	if query != "" {
		u += "?" + query
	}
	return u
}

// add appends an entry to queue's stream as the scripts do, and returns its
// id; id "" lets Redis make it.
func (rig *eventsRig) add(tb testing.TB, queue, id string, values ...string) string {
	tb.Helper()
	args := make([]any, len(values))
	for i, v := range values {
		args[i] = v
	}
	id, err := rig.rdb.XAdd(context.Background(), &redis.XAddArgs{
		Stream: keyspace.NewQueue(rig.prefix, queue).Events(),
		MaxLen: 10000, Approx: true, ID: id, Values: args,
	}).Result()
	if err != nil {
		tb.Fatal("XADD: ", err)
	}
	return id
}

// addJobs appends n "enqueued" entries for jobs j0.. and returns their ids.
func (rig *eventsRig) addJobs(tb testing.TB, queue string, from, n int) []string {
	tb.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = rig.add(tb, queue, "", "kind", "enqueued", "job", fmt.Sprintf("j%d", from+i), "state", "pending")
	}
	return ids
}

// waitExits fails the test unless the handler returns n times within a
// bounded wait.
func (rig *eventsRig) waitExits(tb testing.TB, n int) {
	tb.Helper()
	for i := range n {
		select {
		case <-rig.exits:
		case <-time.After(eventWait):
			tb.Fatalf("%d of %d streams' handlers returned within %v", i, n, eventWait)
		}
	}
}

// sseEvent is one event, or one comment, read off a stream.
type sseEvent struct {
	ID, Event, Data string
	Comment         string   // a comment's text; the other fields are then empty
	Lines           []string // the lines as sent
}

// sseStream reads a Server-Sent Events response.
type sseStream struct {
	resp   *http.Response
	cancel context.CancelFunc // the client goes away
	events chan sseEvent      // closed when the response ends
}

// get sends GET url with header through the rig's client.
func (rig *eventsRig) get(tb testing.TB, url string, header http.Header) (*http.Response, context.CancelFunc) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		tb.Fatal(err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := rig.srv.Client().Do(req)
	if err != nil {
		cancel()
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cancel(); resp.Body.Close() })
	return resp, cancel
}

// open opens a stream and fails the test unless it is one.
func (rig *eventsRig) open(tb testing.TB, url string, header http.Header) *sseStream {
	tb.Helper()
	resp, cancel := rig.get(tb, url, header)
	if resp.StatusCode != http.StatusOK {
		var b strings.Builder
		_, _ = bufio.NewReader(resp.Body).WriteTo(&b)
		tb.Fatalf("GET %s: %d %s, want 200", url, resp.StatusCode, b.String())
	}
	st := &sseStream{resp: resp, cancel: cancel, events: make(chan sseEvent, 1000)}
	go st.read()
	return st
}

// read parses the stream's lines into events until it ends.
func (st *sseStream) read() {
	defer close(st.events)
	sc := bufio.NewScanner(st.resp.Body)
	var ev sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if len(ev.Lines) > 0 {
				st.events <- ev
			}
			ev = sseEvent{}
		case strings.HasPrefix(line, ":"):
			st.events <- sseEvent{Comment: strings.TrimSpace(line[1:]), Lines: []string{line}}
		default:
			ev.Lines = append(ev.Lines, line)
			name, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch name {
			case "id":
				ev.ID = value
			case "event":
				ev.Event = value
			case "data":
				ev.Data += value
			}
		}
	}
}

// next returns the next event, skipping comments, or fails the test.
func (st *sseStream) next(tb testing.TB) sseEvent {
	tb.Helper()
	deadline := time.After(eventWait)
	for {
		select {
		case ev, ok := <-st.events:
			if !ok {
				tb.Fatal("the stream ended, want an event")
			}
			if ev.Comment == "" {
				return ev
			}
		case <-deadline:
			tb.Fatalf("no event within %v", eventWait)
		}
	}
}

// nextIDs reads n events and returns their ids.
func (st *sseStream) nextIDs(tb testing.TB, n int) []string {
	tb.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = st.next(tb).ID
	}
	return ids
}

// quiet fails the test if an event comes within d.
func (st *sseStream) quiet(tb testing.TB, d time.Duration) {
	tb.Helper()
	deadline := time.After(d)
	for {
		select {
		case ev, ok := <-st.events:
			if !ok {
				tb.Fatal("the stream ended, want it open")
			}
			if ev.Comment == "" {
				tb.Fatalf("got event %v, want none", ev.Lines)
			}
		case <-deadline:
			return
		}
	}
}

// ends fails the test unless the stream ends, with no event before its
// end, within a bounded wait.
func (st *sseStream) ends(tb testing.TB) {
	tb.Helper()
	deadline := time.After(eventWait)
	for {
		select {
		case ev, ok := <-st.events:
			if !ok {
				return
			}
			if ev.Comment == "" {
				tb.Fatalf("got event %v, want the stream to end", ev.Lines)
			}
		case <-deadline:
			tb.Fatalf("the stream did not end within %v", eventWait)
		}
	}
}

// atOf is the "at" an entry id stands for.
func atOf(tb testing.TB, id string) string {
	tb.Helper()
	ms, err := strconv.ParseInt(strings.Split(id, "-")[0], 10, 64)
	if err != nil {
		tb.Fatalf("entry id %q: %v", id, err)
	}
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
}

func TestEventsStreamInOrder(t *testing.T) {
	t.Parallel()
	forEachEventBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		rig := newEventsRig(t, rdb, rigOption{})
		q := redistest.Queue(t)
		rig.addJobs(t, q, 0, 3) // before the stream opens: not sent
		st := rig.open(t, rig.url(q, ""), nil)
		for name, want := range map[string]string{
			"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no",
		} {
			if got := st.resp.Header.Get(name); got != want {
				t.Errorf("%s = %q, want %q", name, got, want)
			}
		}
		changes := [][]string{
			{"kind", "enqueued", "job", "a", "state", "pending"},
			{"kind", "claimed", "job", "a", "state", "active"},
			{"kind", "completed", "job", "a", "state", "completed"},
		}
		for _, c := range changes {
			id := rig.add(t, q, "", c...)
			ev := st.next(t)
			data, _ := json.Marshal(map[string]string{
				"kind": c[1], "queue": q, "job_id": "a", "state": c[5], "at": atOf(t, id)})
			wantLines := []string{"id: " + id, "event: " + c[1]}
			if got := ev.Lines[:min(2, len(ev.Lines))]; !reflect.DeepEqual(got, wantLines) || len(ev.Lines) != 3 {
				t.Fatalf("got event lines %q, want %q and one data line", ev.Lines, wantLines)
			}
			var got, want map[string]any
			if err := json.Unmarshal([]byte(ev.Data), &got); err != nil {
				t.Fatalf("data %s: %v", ev.Data, err)
			}
			_ = json.Unmarshal(data, &want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("data = %s, want %s", ev.Data, data)
			}
		}
	})
}

func TestEventsData(t *testing.T) {
	t.Parallel()
	forEachEventBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		rig := newEventsRig(t, rdb, rigOption{})
		q := redistest.Queue(t)
		entries := []struct {
			id     string
			values []string
			want   string
		}{
			{"1700000000123-0", []string{"kind", "enqueued", "job", "j1", "state", "pending"},
				`{"kind":"enqueued","queue":"` + q + `","job_id":"j1","state":"pending","at":"2023-11-14T22:13:20.123Z"}`},
			{"1700000000123-1", []string{"kind", "failed", "job", "j1", "state", "delayed", "error", "boom\n<b>\"x\"</b>"},
				`{"kind":"failed","queue":"` + q + `","job_id":"j1","state":"delayed","at":"2023-11-14T22:13:20.123Z","error":"boom\n<b>\"x\"</b>"}`},
			{"1700000000999-7", []string{"kind", "cancelled", "job", "j2", "state", "cancelled",
				"actor", "alice", "role", "admin", "reason", "superseded", "token", "42"},
				`{"kind":"cancelled","queue":"` + q + `","job_id":"j2","state":"cancelled","at":"2023-11-14T22:13:20.999Z","actor":"alice","role":"admin","reason":"superseded"}`},
			{"1700000001000-0", []string{"kind", "drained", "count", "0", "actor", "bob", "role", "admin"},
				`{"kind":"drained","queue":"` + q + `","at":"2023-11-14T22:13:21.000Z","actor":"bob","role":"admin","count":0}`},
			{"1700000001001-0", []string{"kind", "paused"},
				`{"kind":"paused","queue":"` + q + `","at":"2023-11-14T22:13:21.001Z"}`},
		}
		for _, e := range entries {
			rig.add(t, q, e.id, e.values...)
		}
		st := rig.open(t, rig.url(q, "from=0"), nil)
		for _, e := range entries {
			ev := st.next(t)
			if ev.ID != e.id || ev.Event != e.values[1] || ev.Data != e.want {
				t.Errorf("got id %q event %q data %s\nwant id %q event %q data %s",
					ev.ID, ev.Event, ev.Data, e.id, e.values[1], e.want)
			}
		}
	})
}

func TestEventsResume(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		query  func(ids []string) string
		header func(ids []string) string
		first  int // index of the first entry the stream sends
	}{
		{"Last-Event-ID", nil, func(ids []string) string { return ids[3] }, 4},
		{"last_event_id query", func(ids []string) string { return "last_event_id=" + ids[3] }, nil, 4},
		{"Last-Event-ID wins over from", func([]string) string { return "from=0" },
			func(ids []string) string { return ids[6] }, 7},
		{"from an id", func(ids []string) string { return "from=" + ids[5] }, nil, 5},
		{"from 0", func([]string) string { return "from=0" }, nil, 0},
		{"from a time", func(ids []string) string { return "from=" + strings.Split(ids[2], "-")[0] }, nil, -1},
		{"after the last", func(ids []string) string { return "last_event_id=" + ids[9] }, nil, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			forEachEventBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
				rig := newEventsRig(t, rdb, rigOption{})
				q := redistest.Queue(t)
				ids := rig.addJobs(t, q, 0, 10)
				first := tc.first
				if first < 0 { // from a time: the first entry of that millisecond
					first = 2
					for first > 0 && atOf(t, ids[first-1]) == atOf(t, ids[2]) {
						first--
					}
				}
				query, header := "", http.Header{}
				if tc.query != nil {
					query = tc.query(ids)
				}
				if tc.header != nil {
					header.Set("Last-Event-ID", tc.header(ids))
				}
				st := rig.open(t, rig.url(q, query), header)
				if got := st.nextIDs(t, len(ids)-first); !reflect.DeepEqual(got, ids[first:]) {
					t.Fatalf("got %q, want %q", got, ids[first:])
				}
				later := rig.addJobs(t, q, 10, 2)
				if got := st.nextIDs(t, 2); !reflect.DeepEqual(got, later) {
					t.Fatalf("then got %q, want %q", got, later)
				}
				st.quiet(t, 4*eventPoll)
			})
		})
	}
}

// TestEventsOnAClusterThroughAnyReplica: on a Redis Cluster, two
// replicas serve the same stream, and a client that reconnects to the
// other replica resumes where it left off.
func TestEventsOnAClusterThroughAnyReplica(t *testing.T) {
	t.Parallel()
	cluster := redistest.SharedCluster(t)
	a := newEventsRig(t, cluster.Client(t), rigOption{})
	b := newEventsRig(t, cluster.Client(t), rigOption{prefix: a.prefix})
	q := redistest.Queue(t)
	ids := a.addJobs(t, q, 0, 6)
	first := a.open(t, a.url(q, "from=0"), nil)
	if got := first.nextIDs(t, 3); !reflect.DeepEqual(got, ids[:3]) {
		t.Fatalf("replica a sent %q, want %q", got, ids[:3])
	}
	header := http.Header{}
	header.Set("Last-Event-ID", ids[2])
	resumed := b.open(t, b.url(q, ""), header)
	if got := resumed.nextIDs(t, 3); !reflect.DeepEqual(got, ids[3:]) {
		t.Fatalf("replica b resumed with %q, want %q", got, ids[3:])
	}
	later := b.addJobs(t, q, 6, 2)
	if got := first.nextIDs(t, 5); !reflect.DeepEqual(got, append(ids[3:], later...)) {
		t.Fatalf("replica a then sent %q, want %q", got, append(ids[3:], later...))
	}
	if got := resumed.nextIDs(t, 2); !reflect.DeepEqual(got, later) {
		t.Fatalf("replica b then sent %q, want %q", got, later)
	}
}

// TestEventsNewOnly: without a resume point, a stream sends the changes
// made after it opened, also on an empty or absent stream.
func TestEventsNewOnly(t *testing.T) {
	t.Parallel()
	forEachEventBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		rig := newEventsRig(t, rdb, rigOption{})
		q := redistest.Queue(t)
		empty := rig.open(t, rig.url(q, ""), nil)
		before := rig.addJobs(t, q, 0, 5)
		full := rig.open(t, rig.url(q, ""), nil)
		full.quiet(t, 3*eventPoll)
		after := rig.addJobs(t, q, 5, 2)
		if got := full.nextIDs(t, 2); !reflect.DeepEqual(got, after) {
			t.Errorf("a stream opened on 5 events got %q, want only the later %q", got, after)
		}
		all := append(before, after...)
		if got := empty.nextIDs(t, len(all)); !reflect.DeepEqual(got, all) {
			t.Errorf("a stream opened on no stream got %q, want %q", got, all)
		}
	})
}

// TestEventsReplayAll: from=0 replays more than a page of events in order,
// then goes on with new ones.
func TestEventsReplayAll(t *testing.T) {
	t.Parallel()
	forEachEventBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		rig := newEventsRig(t, rdb, rigOption{})
		q := redistest.Queue(t)
		ids := rig.addJobs(t, q, 0, 2*eventPage+50)
		st := rig.open(t, rig.url(q, "from=0"), nil)
		if got := st.nextIDs(t, len(ids)); !reflect.DeepEqual(got, ids) {
			t.Fatalf("replay got %d ids, want all %d in order", len(got), len(ids))
		}
		later := rig.addJobs(t, q, len(ids), 1)
		if got := st.nextIDs(t, 1); !reflect.DeepEqual(got, later) {
			t.Errorf("then got %q, want %q", got, later)
		}
	})
}

// eventProblem is a problem as a client reads it.
type eventProblem struct {
	Type, Title, Detail, Code, Instance string
	Status                              int
	Errors                              []FieldError
}

// wantEventProblem fails the test unless resp is a problem with status and
// code, and returns it.
func wantEventProblem(tb testing.TB, resp *http.Response, status int, code string) eventProblem {
	tb.Helper()
	var p eventProblem
	err := json.NewDecoder(resp.Body).Decode(&p)
	if resp.StatusCode != status || err != nil || p.Code != code || p.Status != status || p.Title == "" || p.Detail == "" {
		tb.Fatalf("got %d %+v (%v), want a %d %s problem", resp.StatusCode, p, err, status, code)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
		tb.Errorf("Content-Type = %q, want application/problem+json", ct)
	}
	return p
}

func TestEventsBadRequest(t *testing.T) {
	t.Parallel()
	cases := []struct {
		queue, query, header, field string
	}{
		{"a:b", "", "", "queue"},
		{strings.Repeat("q", 101), "", "", "queue"},
		{"", "", "abc", "Last-Event-ID"},
		{"", "", "17", "Last-Event-ID"},
		{"", "", "1-", "Last-Event-ID"},
		{"", "", "-1", "Last-Event-ID"},
		{"", "", "1-2-3", "Last-Event-ID"},
		{"", "", "+1-2", "Last-Event-ID"},
		{"", "", "18446744073709551616-0", "Last-Event-ID"},
		{"", "from=0", "x-1", "Last-Event-ID"},
		{"", "last_event_id=1.5-0", "", "last_event_id"},
		{"", "from=now", "", "from"},
		{"", "from=-1", "", "from"},
		{"", "from=%24", "1-0", "from"},
	}
	forEachEventBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		rig := newEventsRig(t, rdb, rigOption{})
		for _, c := range cases {
			q := c.queue
			if q == "" {
				q = redistest.Queue(t)
			}
			header := http.Header{}
			if c.header != "" {
				header.Set("Last-Event-ID", c.header)
			}
			resp, _ := rig.get(t, rig.url(url.PathEscape(q), c.query), header)
			p := wantEventProblem(t, resp, http.StatusBadRequest, CodeInvalid)
			if len(p.Errors) != 1 || p.Errors[0].Field != c.field || p.Errors[0].Message == "" {
				t.Errorf("queue %q, query %q, Last-Event-ID %q: got errors %+v, want field %s",
					c.queue, c.query, c.header, p.Errors, c.field)
			}
		}
		if keys := rdb.Keys(context.Background(), rig.prefix+"*").Val(); len(keys) != 0 {
			t.Errorf("bad requests made keys %q", keys)
		}
	})
}

func TestEventsHeartbeat(t *testing.T) {
	t.Parallel()
	fast := &eventTiming{poll: eventPoll, heartbeat: 50 * time.Millisecond}
	forEachEventBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		rig := newEventsRig(t, rdb, rigOption{timing: fast})
		st := rig.open(t, rig.url(redistest.Queue(t), ""), nil)
		deadline := time.After(eventWait)
		for pings := 0; pings < 3; {
			select {
			case ev, ok := <-st.events:
				if !ok {
					t.Fatal("the stream ended, want heartbeats")
				}
				if ev.Comment != "ping" || !reflect.DeepEqual(ev.Lines, []string{": ping"}) {
					t.Fatalf("got %q, want a \": ping\" comment", ev.Lines)
				}
				pings++
			case <-deadline:
				t.Fatalf("%d heartbeats within %v, want 3", pings, eventWait)
			}
		}
	})
}

// TestEventsOutlivesServerTimeouts: a stream lasts past the server's read
// and write timeouts, which are for requests, not streams.
func TestEventsOutlivesServerTimeouts(t *testing.T) {
	t.Parallel()
	const timeout = 300 * time.Millisecond
	opt := rigOption{
		timing: &eventTiming{poll: 50 * time.Millisecond, heartbeat: 100 * time.Millisecond},
		server: func(s *http.Server) { s.ReadTimeout, s.WriteTimeout = timeout, timeout },
	}
	forEachEventBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		rig := newEventsRig(t, rdb, opt)
		q := redistest.Queue(t)
		st := rig.open(t, rig.url(q, ""), nil)
		st.quiet(t, 4*timeout)
		ids := rig.addJobs(t, q, 0, 1)
		if got := st.nextIDs(t, 1); !reflect.DeepEqual(got, ids) {
			t.Errorf("after %v got %q, want %q", 4*timeout, got, ids)
		}
	})
}

func TestEventsStopping(t *testing.T) {
	t.Parallel()
	forEachEventBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		rig := newEventsRig(t, rdb, rigOption{})
		q := redistest.Queue(t)
		streams := make([]*sseStream, 3)
		for i := range streams {
			streams[i] = rig.open(t, rig.url(q, ""), nil)
		}
		rig.stop()
		for _, st := range streams {
			st.ends(t)
		}
		rig.waitExits(t, len(streams))
	})
}

func TestEventsClientGone(t *testing.T) {
	t.Parallel()
	forEachEventBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		rig := newEventsRig(t, rdb, rigOption{})
		q := redistest.Queue(t)
		st := rig.open(t, rig.url(q, ""), nil)
		ids := rig.addJobs(t, q, 0, 1)
		if got := st.nextIDs(t, 1); !reflect.DeepEqual(got, ids) {
			t.Fatalf("got %q, want %q", got, ids)
		}
		st.cancel()
		rig.waitExits(t, 1)
	})
}

// TestEventsRedisFails: a stream whose Redis fails sends an error event and
// ends; a stream asked for while Redis is down is a 503 problem.
func TestEventsRedisFails(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	rig := newEventsRig(t, rdb, rigOption{})
	q := redistest.Queue(t)
	st := rig.open(t, rig.url(q, ""), nil)
	ids := rig.addJobs(t, q, 0, 1)
	if got := st.nextIDs(t, 1); !reflect.DeepEqual(got, ids) {
		t.Fatalf("got %q, want %q", got, ids)
	}
	srv.Stop()
	ev := st.next(t)
	var p eventProblem
	if err := json.Unmarshal([]byte(ev.Data), &p); err != nil || ev.Event != "error" || ev.ID != "" ||
		p.Code != CodeUnavailable || p.Status != http.StatusServiceUnavailable || p.Detail == "" {
		t.Errorf("got event %q (%v), want an error event without id whose data is an EMQUNAVAILABLE problem", ev.Lines, err)
	}
	st.ends(t)
	rig.waitExits(t, 1)

	resp, _ := rig.get(t, rig.url(q, ""), nil)
	wantEventProblem(t, resp, http.StatusServiceUnavailable, CodeUnavailable)
	if resp.Header.Get("Retry-After") == "" {
		t.Error("a 503 without Retry-After")
	}
}

// TestEventsIdleHoldsNoConnection: idle streams share the pool; they do not
// hold a Redis connection each.
func TestEventsIdleHoldsNoConnection(t *testing.T) {
	t.Parallel()
	const streams = 60
	bigPool := func(o *redis.Options) { o.PoolSize, o.MaxIdleConns = 4*streams, 4 }
	forEachEventBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		rig := newEventsRig(t, rdb, rigOption{})
		q := redistest.Queue(t)
		open := make([]*sseStream, streams)
		for i := range open {
			open[i] = rig.open(t, rig.url(q, ""), nil)
		}
		// The streams were opened together, so their polls come together,
		// and a poll's burst may open many connections for a moment (more
		// on a busy machine). Held connections would never go: so the
		// fewest open at any of the samples is what tells.
		least := uint32(math.MaxUint32)
		for range 10 {
			time.Sleep(eventPoll / 2)
			least = min(least, rdb.(*redis.Client).PoolStats().TotalConns)
		}
		if least >= streams/2 {
			t.Errorf("%d idle streams held at least %d Redis connections open throughout, want far fewer", streams, least)
		}
		ids := rig.addJobs(t, q, 0, 1)
		for _, st := range open {
			if got := st.nextIDs(t, 1); !reflect.DeepEqual(got, ids) {
				t.Fatalf("got %q, want %q", got, ids)
			}
		}
	}, bigPool)
}
