package http_test

// What a newcomer tripped on: HEAD where GET is answered, /docs/ like
// /docs, an instance on every problem, and an EMQGONE that says what is
// gone.

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	emqhttp "github.com/echo-mq/echo_mq/internal/http"
	"github.com/echo-mq/echo_mq/internal/lease"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

// served is h's handler behind a real server (net/http drops a HEAD's
// body, as in production), and a client that does not follow redirects.
func served(t *testing.T, h *harness) (string, *http.Client) {
	t.Helper()
	srv := httptest.NewServer(h.handler)
	t.Cleanup(func() {
		h.stop() // ends a stream a failed test left open
		srv.Close()
	})
	c := &http.Client{Timeout: 3 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return srv.URL, c
}

// exchange is one request's answer: status, headers and the body read.
type exchange struct {
	status int
	header http.Header
	body   string
}

func ask(t *testing.T, c *http.Client, method, url string) exchange {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, url, err)
	}
	return exchange{resp.StatusCode, resp.Header, string(body)}
}

// TestHeadIsAnsweredWhereGetIs: HEAD on every kind of GET route (the
// service's, the spec and its viewer, the dashboard's files and
// redirects, the API's) answers GET's status and headers without a body.
func TestHeadIsAnsweredWhereGetIs(t *testing.T) {
	t.Parallel()
	h := newHarness(t, redistest.Client(t))
	q := redistest.Queue(t)
	h.add(t, q, "j1")
	base, c := served(t, h)
	for _, path := range []string{
		"/healthz", "/readyz", "/openapi.yaml", "/docs", "/docs/", "/docs/index.html", "/docs/swagger-ui.css",
		"/ui", "/ui/", "/ui/app.js", "/ui/nope.js",
		"/whoami", "/queues", "/queues/" + q, "/queues/" + q + "/jobs", jobPath(q, "j1"), jobPath(q, "nope"),
		"/queues/" + q + "/stats", "/queues/" + q + "/settings", "/queues/" + q + "/schedules", "/queues/" + q + "/push",
		"/nope",
	} {
		get, head := ask(t, c, "GET", base+path), ask(t, c, "HEAD", base+path)
		if head.status != get.status || head.header.Get("Content-Type") != get.header.Get("Content-Type") ||
			head.header.Get("Location") != get.header.Get("Location") || head.body != "" {
			t.Errorf("HEAD %s: %d %q %q %q; GET: %d %q %q", path, head.status, head.header.Get("Content-Type"),
				head.header.Get("Location"), head.body, get.status, get.header.Get("Content-Type"), get.header.Get("Location"))
		}
		if get.status == http.StatusMethodNotAllowed {
			t.Errorf("GET %s: 405", path)
		}
	}
}

// TestHeadOfAnEventStreamEnds: HEAD on an event stream answers its
// headers and ends, releasing the stream: with one stream a key, HEAD
// after HEAD on one connection is answered each time.
func TestHeadOfAnEventStreamEnds(t *testing.T) {
	t.Parallel()
	h := newHarness(t, redistest.Client(t), withConfig(func(c *emqhttp.Config) { c.MaxStreams = 1 }))
	base, c := served(t, h)
	for _, path := range []string{"/queues/" + redistest.Queue(t) + "/events", "/events"} {
		for range 3 {
			got := ask(t, c, "HEAD", base+path)
			if got.status != http.StatusOK || got.header.Get("Content-Type") != "text/event-stream" || got.body != "" {
				t.Fatalf("HEAD %s: %d %q %q, want 200 text/event-stream and no body", path, got.status, got.header.Get("Content-Type"), got.body)
			}
		}
	}
}

// TestAllowListsHeadBesideGet: a 405 lists HEAD where GET is allowed, and
// a HEAD where only POST is is itself a 405 that says so.
func TestAllowListsHeadBesideGet(t *testing.T) {
	t.Parallel()
	h := newHarness(t, redistest.Client(t))
	q := redistest.Queue(t)
	base, c := served(t, h)
	for _, tc := range []struct{ method, path, allow string }{
		{"PUT", "/healthz", "GET,HEAD"},
		{"PUT", jobPath(q, "a"), "GET,HEAD,PATCH,DELETE"},
		{"POST", "/ui/app.js", "GET,HEAD"},
		{"HEAD", "/queues/" + q + "/claim", "POST"},
	} {
		got := ask(t, c, tc.method, base+tc.path)
		if allow := strings.Join(got.header.Values("Allow"), ","); got.status != http.StatusMethodNotAllowed || allow != tc.allow {
			t.Errorf("%s %s: %d, Allow %q; want 405, Allow %q", tc.method, tc.path, got.status, allow, tc.allow)
		}
	}
}

// TestDocsWithSlashIsTheDocs: /docs/ leads to the same page as /docs.
func TestDocsWithSlashIsTheDocs(t *testing.T) {
	t.Parallel()
	h := newHarness(t, redistest.Client(t))
	docs, slash := h.do(t, "GET", "/docs", nil), h.do(t, "GET", "/docs/", nil)
	if slash.Status != docs.Status || slash.Header.Get("Location") != docs.Header.Get("Location") ||
		docs.Header.Get("Location") != "/docs/index.html" {
		t.Fatalf("GET /docs/: %d to %q; GET /docs: %d to %q", slash.Status, slash.Header.Get("Location"),
			docs.Status, docs.Header.Get("Location"))
	}
}

// TestEveryProblemHasItsInstance: the problems of an unknown route, a
// wrong method, a dashboard or docs file that is not there, a readiness
// check with Redis down and a panic name the path asked for.
func TestEveryProblemHasItsInstance(t *testing.T) {
	t.Parallel()
	h := newHarness(t, redistest.Client(t), withConfig(func(c *emqhttp.Config) {
		c.Leases = brokenLeaser{c.Leases.(*lease.Service)} // its Enqueue panics
	}))
	q := redistest.Queue(t)
	for _, tc := range []struct {
		method, path string
		body         any
		status       int
		code         string
	}{
		{"GET", "/nope", nil, 404, "EMQNOTFOUND"},
		{"POST", "/queues/" + q + "/nope", `{}`, 404, "EMQNOTFOUND"},
		{"GET", "/ui/nope.js", nil, 404, "EMQNOTFOUND"},
		{"GET", "/docs/nope.js", nil, 404, "EMQNOTFOUND"},
		{"DELETE", "/healthz", nil, 405, "EMQMETHOD"},
		{"GET", "/queues/" + q + "/claim", nil, 405, "EMQMETHOD"},
		{"POST", jobsPath(q), `{"payload":1}`, 500, "EMQINTERNAL"},
	} {
		p := wantProblem(t, h.do(t, tc.method, tc.path, tc.body), tc.status, tc.code)
		if p.Instance != tc.path {
			t.Errorf("%s %s: instance %q, want %q", tc.method, tc.path, p.Instance, tc.path)
		}
		if tc.code == "EMQNOTFOUND" && !strings.HasSuffix(p.Detail, " "+tc.path) {
			t.Errorf("%s %s: detail %q, want it to name %s", tc.method, tc.path, p.Detail, tc.path)
		}
	}
	p := wantProblem(t, downHandler(t).do(t, "GET", "/readyz", nil), 503, "EMQUNAVAILABLE")
	if p.Instance != "/readyz" {
		t.Errorf("GET /readyz with Redis down: instance %q, want /readyz", p.Instance)
	}
}

// TestGoneSaysWhatIsGone: an EMQGONE's title and detail name what is
// missing, a job, a schedule, a batch or a queue's push target, by the
// reads and by the writes that find it missing.
func TestGoneSaysWhatIsGone(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		sch, batch := "/queues/"+q+"/schedules/nightly", "/queues/"+q+"/batches/b1"
		for _, tc := range []struct {
			method, path  string
			body          any
			title, detail string
		}{
			{"GET", jobPath(q, "j1"), nil, "No such job", "no such job: j1"},
			{"POST", jobPath(q, "j1", "retry"), nil, "No such job", "no such job: j1"},
			{"GET", sch, nil, "No such schedule", "no such schedule: nightly"},
			{"DELETE", sch, nil, "No such schedule", "no such schedule: nightly"},
			{"POST", sch + "/pause", nil, "No such schedule", "no such schedule: nightly"},
			{"POST", sch + "/resume", nil, "No such schedule", "no such schedule: nightly"},
			{"POST", sch + "/run", nil, "No such schedule", "no such schedule: nightly"},
			{"GET", batch, nil, "No such batch", "no such batch: b1"},
			{"POST", batch + "/commit", nil, "No such batch", "no such batch: b1"},
			{"POST", batch + "/jobs", `{"jobs":[{"payload":1}]}`, "No such batch", "no such batch: b1"},
			{"GET", "/queues/" + q + "/push", nil, "No push target", "queue " + q + " has no push target"},
			{"DELETE", "/queues/" + q + "/push", nil, "No push target", "queue " + q + " has no push target"},
		} {
			p := wantProblem(t, h.do(t, tc.method, tc.path, tc.body), http.StatusNotFound, "EMQGONE")
			if p.Title != tc.title || p.Detail != tc.detail {
				t.Errorf("%s %s: %q, %q; want %q, %q", tc.method, tc.path, p.Title, p.Detail, tc.title, tc.detail)
			}
		}
	})
}
