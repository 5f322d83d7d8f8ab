package http_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	emqhttp "github.com/echo-mq/echo_mq/internal/http"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

// testSecret is a Standard Webhooks secret: "whsec_" and the base64 of 32 bytes.
const testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwNDE0NjM3MDk1NzI="

type pushView struct {
	URL          string `json:"url"`
	TimeoutMs    int64  `json:"timeout_ms"`
	Concurrency  int    `json:"concurrency"`
	LeaseMs      int64  `json:"lease_ms"`
	SecretSet    bool   `json:"secret_set"`
	UpdatedAt    string `json:"updated_at"`
	RecentErrors []struct {
		At      string `json:"at"`
		JobID   string `json:"job_id"`
		Attempt int    `json:"attempt"`
		Status  int    `json:"status"`
		Error   string `json:"error"`
	} `json:"recent_errors"`
}

// delivery is one request a receiver got.
type delivery struct {
	header http.Header
	job    jobView
	raw    []byte
	done   <-chan struct{} // closed when the service hangs up
}

// receiver is a real HTTP server a test points a push target at: answer
// decides each answer; it keeps every delivery, and how many were under
// way at once, overall and per job.
type receiver struct {
	*httptest.Server
	answer func(d delivery, w http.ResponseWriter)

	mu         sync.Mutex
	deliveries []delivery
	now, most  int
	running    map[string]int // job id -> deliveries of it under way
	twice      []string       // jobs delivered while a delivery of them was under way
}

func newReceiver(t *testing.T, answer func(d delivery, w http.ResponseWriter)) *receiver {
	rc := &receiver{answer: answer, running: map[string]int{}}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		d := delivery{header: r.Header.Clone(), raw: raw, done: r.Context().Done()}
		if err := json.Unmarshal(raw, &d.job); err != nil {
			t.Errorf("a delivery's body is not a job: %v: %s", err, raw)
		}
		rc.mu.Lock()
		rc.deliveries = append(rc.deliveries, d)
		rc.now++
		rc.most = max(rc.most, rc.now)
		if rc.running[d.job.ID]++; rc.running[d.job.ID] > 1 {
			rc.twice = append(rc.twice, d.job.ID)
		}
		rc.mu.Unlock()
		defer func() {
			rc.mu.Lock()
			rc.now--
			rc.running[d.job.ID]--
			rc.mu.Unlock()
		}()
		rc.answer(d, w)
	}))
	t.Cleanup(rc.Close)
	return rc
}

// overlaps are the most deliveries under way at once, and the jobs
// delivered while a delivery of them was under way.
func (rc *receiver) overlaps() (most int, twice []string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.most, append([]string(nil), rc.twice...)
}

func (rc *receiver) got() []delivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]delivery(nil), rc.deliveries...)
}

// until waits up to 10 s for cond, failing the test with what otherwise.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s: %s", what)
		}
	}
}

// wantStateSoon waits up to 10 s for job id of q to be in state.
func (h *harness) wantStateSoon(t *testing.T, q, id, state string) {
	t.Helper()
	until(t, id+" "+state, func() bool { return h.get(t, q, id).State == state })
}

func putPush(t *testing.T, h *harness, q, body string) pushView {
	t.Helper()
	return must[pushView](t, h.do(t, "PUT", "/queues/"+q+"/push", body), http.StatusOK)
}

// Without EMQ_PUSH_ALLOW every target is refused, naming the variable.
func TestPushNeedsAnAllowList(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		p := wantProblem(t, h.do(t, "PUT", "/queues/"+q+"/push", `{"url":"http://127.0.0.1:9/"}`), http.StatusConflict, "EMQSTATE")
		if !strings.Contains(p.Detail, "EMQ_PUSH_ALLOW") {
			t.Errorf("detail %q does not name EMQ_PUSH_ALLOW", p.Detail)
		}
		wantProblem(t, h.do(t, "GET", "/queues/"+q+"/push", nil), http.StatusNotFound, "EMQGONE")
	})
}

// A target is put with its defaults, read back without its secret, and
// taken away; bad ones are refused naming their field.
func TestPushTargetContract(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		r := h.do(t, "PUT", "/queues/"+q+"/push", `{"url":"http://127.0.0.1:9/jobs","secret":"`+testSecret+`"}`)
		put := must[pushView](t, r, http.StatusOK)
		if put.URL != "http://127.0.0.1:9/jobs" || put.TimeoutMs != 30000 || put.Concurrency != 10 || put.LeaseMs != 60000 ||
			!put.SecretSet || put.UpdatedAt == "" || put.RecentErrors == nil || len(put.RecentErrors) != 0 {
			t.Fatalf("put answered %+v", put)
		}
		got := h.do(t, "GET", "/queues/"+q+"/push", nil)
		for _, body := range []string{r.String(), got.String()} {
			if strings.Contains(body, "MfKQ9r8GKYqrTwjUPD8") {
				t.Fatalf("an answer shows the secret: %s", body)
			}
		}
		if read := must[pushView](t, got, http.StatusOK); read.URL != put.URL || read.UpdatedAt != put.UpdatedAt || !read.SecretSet {
			t.Fatalf("read back %+v, put %+v", read, put)
		}
		replaced := putPush(t, h, q, `{"url":"http://127.0.0.1:9/v2","timeout_ms":1000,"concurrency":3,"lease_ms":5000}`)
		if replaced.URL != "http://127.0.0.1:9/v2" || replaced.TimeoutMs != 1000 || replaced.Concurrency != 3 ||
			replaced.LeaseMs != 5000 || replaced.SecretSet {
			t.Fatalf("replaced %+v: a put replaces the target whole, its secret too", replaced)
		}
		kinds := ""
		for _, e := range h.streamEntries(t, q) {
			kinds += e["kind"] + " "
			for _, v := range e {
				if strings.Contains(v, "MfKQ9r8GKYqrTwjUPD8") {
					t.Fatalf("an event shows the secret: %v", e)
				}
			}
		}
		if must[map[string]int](t, h.do(t, "DELETE", "/queues/"+q+"/push", nil), http.StatusOK)["removed"] != 1 {
			t.Fatal("delete did not answer removed 1")
		}
		wantProblem(t, h.do(t, "GET", "/queues/"+q+"/push", nil), http.StatusNotFound, "EMQGONE")
		wantProblem(t, h.do(t, "DELETE", "/queues/"+q+"/push", nil), http.StatusNotFound, "EMQGONE")
		for _, e := range h.streamEntries(t, q) {
			kinds += e["kind"] + " "
		}
		if !strings.Contains(kinds, "push_set") || !strings.Contains(kinds, "push_deleted") {
			t.Errorf("events %q, want push_set and push_deleted", kinds)
		}

		for _, bad := range []struct{ body, field string }{
			{`{"url":"http://example.com/jobs"}`, "url"},
			{`{"url":"ftp://127.0.0.1/jobs"}`, "url"},
			{`{"url":"http://user:pass@127.0.0.1/jobs"}`, "url"},
			{`{"url":"http://127.0.0.1:9/","timeout_ms":1000,"lease_ms":1000}`, "lease_ms"},
			{`{"url":"http://127.0.0.1:9/","timeout_ms":50}`, "timeout_ms"},
			{`{"url":"http://127.0.0.1:9/","concurrency":0}`, "concurrency"},
			{`{"url":"http://127.0.0.1:9/","secret":"hunter2"}`, "secret"},
			{`{"url":"http://127.0.0.1:9/","secret":"whsec_c2hvcnQ="}`, "secret"},
			{`{}`, "url"},
		} {
			p := wantProblem(t, h.do(t, "PUT", "/queues/"+q+"/push", bad.body), http.StatusBadRequest, "EMQINVALID")
			wantField(t, p, bad.field)
		}
		wantProblem(t, h.do(t, "GET", "/queues/"+q+"/push", nil), http.StatusNotFound, "EMQGONE")
	}, withPush("127.0.0.1"))
}

// Each job is POSTed once, signed: the receiver verifies the signature
// with the Standard Webhooks library, and its JSON answer becomes the
// job's result.
func TestPushDeliversSigned(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		wh, err := standardwebhooks.NewWebhook(testSecret)
		if err != nil {
			t.Fatal(err)
		}
		rc := newReceiver(t, func(d delivery, w http.ResponseWriter) {
			if err := wh.Verify(d.raw, d.header); err != nil {
				t.Errorf("signature of %s: %v", d.job.ID, err)
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			fmt.Fprintf(w, `{"sent": %q}`, d.job.ID)
		})
		const n = 20
		for i := range n {
			h.enqueue(t, q, fmt.Sprintf(`{"id":"mail-%d","payload":{"n":%d}}`, i, i))
		}
		putPush(t, h, q, `{"url":"`+rc.URL+`/hook","concurrency":4,"secret":"`+testSecret+`"}`)
		until(t, "every job completed", func() bool { return h.queueOf(t, q).Counts["completed"] == n })
		seen := map[string]bool{}
		for _, d := range rc.got() {
			if seen[d.job.ID] {
				t.Errorf("%s delivered twice", d.job.ID)
			}
			seen[d.job.ID] = true
			if want := q + ":" + d.job.ID + ":" + strconv.FormatInt(d.job.Token, 10); d.header.Get("webhook-id") != want || d.job.Token == 0 {
				t.Errorf("webhook-id %q, want %q", d.header.Get("webhook-id"), want)
			}
			if d.job.State != "active" || d.job.Queue != q || d.header.Get("Content-Type") != "application/json" {
				t.Errorf("delivery %+v, headers %v", d.job, d.header)
			}
		}
		if len(seen) != n {
			t.Fatalf("%d jobs delivered, want %d", len(seen), n)
		}
		if j := h.get(t, q, "mail-7"); j.State != "completed" || string(j.Result) != `{"sent":"mail-7"}` {
			t.Fatalf("mail-7: %+v (result %s)", j, j.Result)
		}
		if most, twice := rc.overlaps(); most > 4 || len(twice) > 0 {
			t.Errorf("%d deliveries at once, over the concurrency of 4; delivered while under way: %v", most, twice)
		}
		// A delivery is counted after its complete answers, so the last
		// ones may be counted a moment after the queue shows them completed.
		var delivered, timed float64
		until(t, "every delivery counted in the metrics", func() bool {
			fams := h.scrapeMetrics(t)
			delivered = metricSeries(fams, "emq_push_deliveries_total")["outcome=completed,queue="+q]
			timed = metricSeries(fams, "emq_push_delivery_duration_seconds")["queue="+q]
			return delivered >= n && timed >= n
		})
		if delivered != n || timed != n {
			t.Errorf("emq_push_deliveries_total{outcome=completed} = %v, duration count %v, want %d", delivered, timed, n)
		}
	}, withPush("127.0.0.1"), withMetrics())
}

// A 202 leaves the job to the receiver, which reports with the token over
// the worker routes; the concurrency counts the jobs it holds, across
// replicas. A receiver whose lease lapsed is stale: its late complete is
// refused and the job goes out again.
func TestPushAcceptedReportsLater(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		rc := newReceiver(t, func(d delivery, w http.ResponseWriter) { w.WriteHeader(http.StatusAccepted) })
		for i := range 5 {
			h.enqueue(t, q, fmt.Sprintf(`{"id":"long-%d","payload":{}}`, i))
		}
		putPush(t, h, q, `{"url":"`+rc.URL+`","concurrency":2,"timeout_ms":1000,"lease_ms":60000}`)
		until(t, "two deliveries", func() bool { return len(rc.got()) == 2 })
		time.Sleep(300 * time.Millisecond) // three deliverer passes: no third job starts
		if got := rc.got(); len(got) != 2 || h.queueOf(t, q).Counts["active"] != 2 {
			t.Fatalf("%d deliveries with 2 jobs held, want 2", len(got))
		}
		first := rc.got()[0].job
		r := h.do(t, "POST", "/queues/"+q+"/jobs/"+first.ID+"/complete", fmt.Sprintf(`{"token":%d,"result":{"done":true}}`, first.Token))
		if j := must[jobView](t, r, http.StatusOK); j.State != "completed" {
			t.Fatalf("the receiver's complete: %+v", j)
		}
		until(t, "a third delivery once a job finished", func() bool { return len(rc.got()) == 3 })

		// A short lease that lapses: the sweep takes the job back and it is
		// delivered again; the first holder's complete is stale.
		putPush(t, h, q, `{"url":"`+rc.URL+`","concurrency":10,"timeout_ms":100,"lease_ms":1100}`)
		until(t, "every job delivered", func() bool { return len(rc.got()) >= 5 })
		late := rc.got()[4].job
		time.Sleep(1200 * time.Millisecond)
		h.sweepUntil(t, q, `{}`, late.ID)
		until(t, "the swept job delivered again", func() bool {
			for _, d := range rc.got()[5:] {
				if d.job.ID == late.ID {
					return true
				}
			}
			return false
		})
		r = h.do(t, "POST", "/queues/"+q+"/jobs/"+late.ID+"/complete", fmt.Sprintf(`{"token":%d}`, late.Token))
		wantProblem(t, r, http.StatusConflict, "EMQSTALE")
		if _, twice := rc.overlaps(); len(twice) != 0 {
			t.Errorf("delivered while under way: %v", twice)
		}
	}, withPush("127.0.0.1"))
}

// A failing, busy, hanging or absent receiver fails the attempt, with
// last_error saying why; Retry-After sets the retry; the target's recent
// errors list them.
func TestPushFailures(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		rc := newReceiver(t, func(d delivery, w http.ResponseWriter) {
			switch d.job.ID {
			case "boom":
				http.Error(w, "something\nbroke", http.StatusInternalServerError)
			case "busy":
				w.Header().Set("Retry-After", "3")
				w.WriteHeader(http.StatusServiceUnavailable)
			case "hang":
				time.Sleep(time.Second)
			case "moved":
				http.Redirect(w, &http.Request{}, "http://example.com/", http.StatusFound)
			}
		})
		down, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		downURL := "http://" + down.Addr().String() + "/"
		down.Close()

		cases := []struct{ id, url, lastError string }{
			{"boom", rc.URL, "HTTP 500: something broke"},
			{"busy", rc.URL, "HTTP 503"},
			{"hang", rc.URL, "timeout: no answer within 200 ms"},
			{"moved", rc.URL, "HTTP 302"},
			{"down", downURL, "unreachable: "},
		}
		for _, c := range cases {
			q := redistest.Queue(t) + "-" + c.id
			h.enqueue(t, q, `{"id":"`+c.id+`","payload":{},"max_attempts":2,"backoff":{"type":"fixed","delay_ms":60000}}`)
			putPush(t, h, q, `{"url":"`+c.url+`","timeout_ms":200,"lease_ms":5000}`)
			var j jobView
			until(t, c.id+" failed once", func() bool { j = h.get(t, q, c.id); return j.Attempts == 1 && j.State == "delayed" })
			if !strings.HasPrefix(j.LastError, c.lastError) {
				t.Errorf("%s: last_error %q, want %q...", c.id, j.LastError, c.lastError)
			}
			retry := parseStamp(t, j.RunAt).Sub(parseStamp(t, j.StartedAt))
			if want := map[bool]time.Duration{true: 3 * time.Second, false: time.Minute}[c.id == "busy"]; retry < want || retry > want+2*time.Second {
				t.Errorf("%s: retried %v after its start, want about %v", c.id, retry, want)
			}
			outcome := map[string]string{"boom": "failed", "busy": "failed", "moved": "failed", "hang": "timeout", "down": "unreachable"}[c.id]
			until(t, c.id+" counted as "+outcome, func() bool {
				return metricSeries(h.scrapeMetrics(t), "emq_push_deliveries_total")["outcome="+outcome+",queue="+q] == 1
			})
			target := must[pushView](t, h.do(t, "GET", "/queues/"+q+"/push", nil), http.StatusOK)
			if len(target.RecentErrors) != 1 || target.RecentErrors[0].JobID != c.id || target.RecentErrors[0].Attempt != 1 ||
				!strings.HasPrefix(target.RecentErrors[0].Error, c.lastError) {
				t.Errorf("%s: recent errors %+v", c.id, target.RecentErrors)
			}
		}
	}, withPush("127.0.0.1"), withMetrics())
}

// The secret is in no log line, the service's or the deliverer's, even at
// debug level; the target's put is audited with its url and that it signs.
func TestPushSecretIsNeverLogged(t *testing.T) {
	t.Parallel()
	var logs lockedBuffer
	h := newHarness(t, redistest.Client(t), withPush("127.0.0.1"), withConfig(func(c *emqhttp.Config) {
		c.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}))
	q := redistest.Queue(t)
	rc := newReceiver(t, func(d delivery, w http.ResponseWriter) {
		if d.job.ID == "bad" {
			w.WriteHeader(http.StatusBadGateway)
		}
	})
	h.enqueue(t, q, `{"id":"good","payload":{}}`)
	h.enqueue(t, q, `{"id":"bad","payload":{},"max_attempts":1}`)
	putPush(t, h, q, `{"url":"`+rc.URL+`","secret":"`+testSecret+`"}`)
	h.wantStateSoon(t, q, "good", "completed")
	h.wantStateSoon(t, q, "bad", "dead")
	must[map[string]int](t, h.do(t, "DELETE", "/queues/"+q+"/push", nil), http.StatusOK)

	audited := false
	for _, rec := range logs.records(t) {
		line, _ := json.Marshal(rec)
		if strings.Contains(string(line), strings.TrimPrefix(testSecret, "whsec_")[:16]) {
			t.Errorf("a log line shows the secret: %s", line)
		}
		if rec["action"] == "put_push" {
			audited = rec["url"] == rc.URL && rec["signed"] == true && rec["queue"] == q
		}
	}
	if !audited {
		t.Error("the put of the target was not audited with its url and signed: true")
	}
}

// An answer that comes after the job left its attempt (removed while the
// receiver worked) changes nothing, and is counted late.
func TestPushLateAnswerChangesNothing(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		release := make(chan struct{})
		rc := newReceiver(t, func(d delivery, w http.ResponseWriter) { <-release })
		h.enqueue(t, q, `{"id":"gone-soon","payload":{}}`)
		putPush(t, h, q, `{"url":"`+rc.URL+`","timeout_ms":10000}`)
		until(t, "the delivery under way", func() bool { return len(rc.got()) == 1 })
		must[map[string]int](t, h.do(t, "DELETE", "/queues/"+q+"/jobs/gone-soon?force=true", nil), http.StatusOK)
		close(release)
		until(t, "the late answer counted", func() bool {
			return metricSeries(h.scrapeMetrics(t), "emq_push_deliveries_total")["outcome=late,queue="+q] == 1
		})
		wantProblem(t, h.do(t, "GET", "/queues/"+q+"/jobs/gone-soon", nil), http.StatusNotFound, "EMQGONE")
	}, withPush("127.0.0.1"), withMetrics())
}

// A job whose own timeout_ms is shorter than the target's is never left in
// a POST past its lease: the delivery gives up first and fails the attempt
// as a timeout, so the sweep never hands the job to a second delivery
// while the first is open.
func TestPushHonoursAJobsTimeout(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		rc := newReceiver(t, func(d delivery, w http.ResponseWriter) {
			select { // slower than the job may run; it stops when the service hangs up
			case <-time.After(2 * time.Second):
			case <-d.done:
			}
		})
		stop := make(chan struct{})
		swept := make(chan struct{})
		go func() { // the reaper's sweeps, every 50 ms
			defer close(swept)
			for {
				select {
				case <-stop:
					return
				case <-time.After(50 * time.Millisecond):
					h.do(t, "POST", "/queues/"+q+"/sweep", `{}`)
				}
			}
		}()
		defer func() { close(stop); <-swept }()
		h.enqueue(t, q, `{"id":"quick","payload":{},"timeout_ms":400,"max_attempts":3,"backoff":{"type":"fixed","delay_ms":0}}`)
		putPush(t, h, q, `{"url":"`+rc.URL+`","timeout_ms":5000}`)
		var j jobView
		until(t, "the job dead after three timed-out attempts", func() bool { j = h.get(t, q, "quick"); return j.State == "dead" })
		if !strings.HasPrefix(j.LastError, "timeout") || j.Stalled != 0 || j.Attempts != 3 {
			t.Errorf("dead job %+v, want last_error timeout, 3 attempts, no stall", j)
		}
		if _, twice := rc.overlaps(); len(twice) > 0 {
			t.Errorf("delivered while a delivery of it was under way: %v", twice)
		}
	}, withPush("127.0.0.1"))
}
