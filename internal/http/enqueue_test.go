package http_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/redistest"
)

var stampRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$`)

func TestEnqueueNewThenExisting(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		r := h.do(t, "POST", jobsPath(q), `{"id":"order-1","payload":{"n":1}}`)
		first := must[jobView](t, r, http.StatusCreated)
		if first.ID != "order-1" || first.Queue != q || first.State != "pending" ||
			first.Priority != 0 || first.Attempts != 0 || first.MaxAttempts != 3 || first.Stalled != 0 {
			t.Errorf("got %+v, want pending order-1 of %s with the defaults", first, q)
		}
		if !stampRE.MatchString(first.CreatedAt) {
			t.Errorf("created_at = %q, want RFC 3339 UTC with milliseconds", first.CreatedAt)
		}
		if strings.Contains(string(r.Body), `"token"`) {
			t.Errorf("enqueue answer %s shows a token", r.Body)
		}

		again := h.do(t, "POST", jobsPath(q), `{"id":"order-1","payload":{"n":2},"priority":5}`)
		second := must[jobView](t, again, http.StatusOK)
		sameJSON(t, "payload of the repeat", second.Payload, []byte(`{"n":1}`))
		if second.CreatedAt != first.CreatedAt || second.Priority != 0 {
			t.Errorf("repeat got %+v, want the first job untouched %+v", second, first)
		}
		if n := h.rdb.ZCard(context.Background(), h.key(q, "pending")).Val(); n != 1 {
			t.Errorf("pending holds %d jobs, want 1", n)
		}
	})
}

func TestEnqueueServerID(t *testing.T) {
	t.Parallel()
	uuid7 := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		a := h.enqueue(t, q, `{"payload":1}`)
		b := h.enqueue(t, q, `{"payload":2}`)
		for _, id := range []string{a.ID, b.ID} {
			if !uuid7.MatchString(id) {
				t.Errorf("server id %q is not a UUIDv7", id)
			}
		}
		if a.ID >= b.ID {
			t.Errorf("server ids %q then %q, want time-ordered", a.ID, b.ID)
		}
		h.wantState(t, q, b.ID, "pending")
	})
}

func TestEnqueuePayloadKeptExactly(t *testing.T) {
	t.Parallel()
	payloads := map[string]string{
		"20-digit integer": `12345678901234567890`,
		"big numbers":      `{"big":12345678901234567890,"neg":-98765432109876543210,"frac":0.10000000000000000555,"exp":1E+400}`,
		"nested":           `{"a":{"b":[1,{"c":null},[true,false]],"d":"x"},"e":[]}`,
		"unicode":          `{"s":"héllo, 世界 🎉 \u00e9 \"q\" \\ \n","k\u00e9y":"<&>"}`,
		"string":           `"just a string"`,
		"spaced":           " {\n \"a\" : [ 1 , 2 ] \t}\n",
	}
	forEachBackend(t, func(t *testing.T, h *harness) {
		for name, payload := range payloads {
			q := redistest.Queue(t)
			r := h.do(t, "POST", jobsPath(q), `{"id":"p","payload":`+payload+`}`)
			created := must[jobView](t, r, http.StatusCreated)
			sameJSON(t, name+": enqueue answer", created.Payload, []byte(payload))
			sameJSON(t, name+": GET", h.get(t, q, "p").Payload, []byte(payload))
			sameJSON(t, name+": claim", h.claimOne(t, q, "p", 1000).Payload, []byte(payload))
			if strings.Contains(payload, "12345678901234567890") && !strings.Contains(string(r.Body), "12345678901234567890") {
				t.Errorf("%s: answer %s lost the digits of 12345678901234567890", name, r.Body)
			}
		}
	})
}

func TestEnqueueOptions(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		j := h.enqueue(t, q, `{"id":"d","payload":{},"priority":9,"delay_ms":60000,"max_attempts":7,
			"backoff":{"type":"fixed","delay_ms":500,"max_delay_ms":500}}`)
		if j.State != "delayed" || j.Priority != 9 || j.MaxAttempts != 7 {
			t.Errorf("got %+v, want delayed, priority 9, max_attempts 7", j)
		}
		runAt, created := parseStamp(t, j.RunAt), parseStamp(t, j.CreatedAt)
		if d := runAt.Sub(created); d != 60*time.Second {
			t.Errorf("run_at - created_at = %v, want 60s", d)
		}
		h.wantState(t, q, "d", "delayed")
		if jobs := h.claim(t, q, nil); len(jobs) != 0 {
			t.Errorf("claim got %v before the delay passed, want none", ids(jobs))
		}
	})
}

func TestEnqueueBatch(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "old")
		body := `{"jobs":[{"id":"b1","payload":1},{"id":"old","payload":"new"},{"payload":3},{"id":"b1","payload":4},{"id":"b2","payload":5,"priority":1}]}`
		got := must[jobList](t, h.do(t, "POST", jobsPath(q)+"/batch", body), http.StatusOK).Jobs
		if len(got) != 5 {
			t.Fatalf("got %d jobs, want 5 in order", len(got))
		}
		if got[0].ID != "b1" || got[1].ID != "old" || got[2].ID == "" || got[3].ID != "b1" || got[4].ID != "b2" {
			t.Errorf("got ids %v, want b1, old, <server id>, b1, b2", ids(got))
		}
		sameJSON(t, "existing job's payload", got[1].Payload, []byte(`{"id":"old"}`))
		sameJSON(t, "repeated id's payload", got[3].Payload, []byte(`1`))
		sameJSON(t, "server id job's payload", got[2].Payload, []byte(`3`))
		if n := h.rdb.ZCard(context.Background(), h.key(q, "pending")).Val(); n != 4 {
			t.Errorf("pending holds %d jobs, want 4 (old, b1, b2 and one server id)", n)
		}
		claimed := h.claim(t, q, `{"count":10}`)
		if want := []string{"old", "b1", got[2].ID, "b2"}; fmt.Sprint(ids(claimed)) != fmt.Sprint(want) {
			t.Errorf("claim order %v, want %v", ids(claimed), want)
		}
	})
}

func TestEnqueueBatchOfMax(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		got := must[jobList](t, h.do(t, "POST", jobsPath(q)+"/batch", batchBody(1000)), http.StatusOK).Jobs
		if len(got) != 1000 || got[0].ID != "j0" || got[999].ID != "j999" {
			t.Fatalf("got %d jobs, want 1000 from j0 to j999", len(got))
		}
		if n := h.rdb.ZCard(context.Background(), h.key(q, "pending")).Val(); n != 1000 {
			t.Errorf("pending holds %d jobs, want 1000", n)
		}
	})
}

// batchBody is an enqueue batch of n jobs j0, j1, ...
func batchBody(n int) string {
	jobs := make([]string, n)
	for i := range jobs {
		jobs[i] = fmt.Sprintf(`{"id":"j%d","payload":%d}`, i, i)
	}
	return `{"jobs":[` + strings.Join(jobs, ",") + `]}`
}

func TestEnqueueAcceptsTheLimits(t *testing.T) {
	t.Parallel()
	queue := strings.Repeat("Az09._-", 15)[:100]
	id := strings.Repeat("Az09._:-", 16)
	forEachBackend(t, func(t *testing.T, h *harness) {
		for _, ct := range []string{"application/json; charset=utf-8", "application/vnd.emq+json"} {
			r := h.send(t, "POST", jobsPath(queue), ct, []byte(`{"id":"`+id+`","payload":{"k":"v"}}`))
			if r.Status != http.StatusCreated && r.Status != http.StatusOK {
				t.Errorf("enqueue as %s on a 100-char queue with a 128-char id got %s, want 201 or 200", ct, r)
			}
		}
		if j := h.get(t, queue, id); j.ID != id || j.Queue != queue {
			t.Errorf("GET got %+v, want job %s of %s", j, id, queue)
		}
		h.claimOne(t, queue, id, 1000)
	})
}

// TestEnqueueDefaultValueLimit: a payload of 1 MiB is kept, one byte more
// is refused, with the service's default limits.
func TestEnqueueDefaultValueLimit(t *testing.T) {
	t.Parallel()
	payload := `"` + strings.Repeat("x", 1<<20-2) + `"` // 1 MiB of JSON
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		j := h.enqueue(t, q, `{"id":"max","payload":`+payload+`}`)
		if len(j.Payload) != 1<<20 {
			t.Errorf("payload came back with %d bytes, want %d", len(j.Payload), 1<<20)
		}
		before := h.snapshot(t)
		r := h.do(t, "POST", jobsPath(q), `{"id":"over","payload":"x`+payload[1:]+`}`)
		wantProblem(t, r, http.StatusRequestEntityTooLarge, "EMQTOOLARGE")
		h.unchanged(t, before, "a payload over 1 MiB")
	})
}
