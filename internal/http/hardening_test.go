package http_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	emqhttp "github.com/echo-mq/echo_mq/internal/http"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

func TestDeepJSONIsRefused(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		nest := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
		before := h.snapshot(t)
		wantProblem(t, h.do(t, "POST", jobsPath(q), `{"payload":`+nest(64)+`}`), 400, "EMQINVALID")
		h.unchanged(t, before, "a body nested 65 deep")
		// Brackets inside strings do not count.
		must[jobView](t, h.do(t, "POST", jobsPath(q), `{"payload":{"s":"`+strings.Repeat("[", 100)+`","a":`+nest(62)+`}}`), 201) // 64 deep in all
	})
}

// endlessBody fails the test if the service reads it: a declared length
// over the limit must be refused before the body is read.
type endlessBody struct{ t *testing.T }

func (b endlessBody) Read([]byte) (int, error) {
	b.t.Error("the service read a body whose declared length is over the limit")
	return 0, io.EOF
}

func TestOversizedBodyIsRefusedBeforeItIsRead(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		req := httptest.NewRequest("POST", jobsPath(redistest.Queue(t)), endlessBody{t})
		req.ContentLength = 1 << 30
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.handler.ServeHTTP(rec, req)
		if rec.Code != http.StatusRequestEntityTooLarge || !strings.Contains(rec.Body.String(), "EMQTOOLARGE") {
			t.Fatalf("got %d %s, want 413 EMQTOOLARGE", rec.Code, rec.Body)
		}
	})
}

func TestLongPollsAreCapped(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		h = h.only(0) // the cap is per replica
		q := redistest.Queue(t)
		polls := []<-chan answer{h.pollAsync(t, q, `{"wait_ms":10000}`), h.pollAsync(t, q, `{"wait_ms":10000}`)}
		stillWaiting(t, polls...)
		r := h.do(t, "POST", "/queues/"+q+"/claim", `{"wait_ms":10000}`)
		wantProblem(t, r, http.StatusServiceUnavailable, "EMQBUSY")
		if r.Header.Get("Retry-After") == "" {
			t.Error("EMQBUSY without Retry-After")
		}
		// A claim that does not wait is still served.
		must[jobList](t, h.do(t, "POST", "/queues/"+q+"/claim", `{}`), 200)
		h.add(t, q, "a", "b")
		for _, p := range polls {
			if a := await(t, p, 10*time.Second); a.Status != 200 {
				t.Fatalf("a waiting poll answered %s", a.reply)
			}
		}
		// Their slots are free again.
		h.add(t, q, "c")
		must[jobList](t, h.do(t, "POST", "/queues/"+q+"/claim", `{"wait_ms":1000}`), 200)
	}, withConfig(func(c *emqhttp.Config) { c.MaxWaiters = 2 }))
}
