package http_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

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

// TestAmbiguousJSONIsRefused: a body that a gateway in front could read
// otherwise than the service (docs/design.md#hostile-clients) is 400
// EMQINVALID naming the field, and changes nothing. That is invalid UTF-8,
// raw or as an escaped lone surrogate, a member name twice in one object,
// and a field name spelled with other case, at any depth, payloads
// included, on every route that takes a body (the hot ones among them).
func TestAmbiguousJSONIsRefused(t *testing.T) {
	t.Parallel()
	const enqueue, batch, claim, job = "/queues/Q/jobs", "/queues/Q/jobs/batch", "/queues/Q/claim", "/queues/Q/jobs/held"
	post := func(name, path, body, field string) refusal {
		return refusal{name: name, method: "POST", path: path, body: body, status: 400, code: "EMQINVALID", field: field}
	}
	cases := []refusal{
		post("invalid UTF-8 in a payload", enqueue, "{\"payload\":\"\xff\xfe\"}", "payload"),
		post("invalid UTF-8 deep in a payload", enqueue, "{\"payload\":{\"to\":[\"ok\",\"\xc3(\"]}}", "payload.to[1]"),
		post("invalid UTF-8 in a member name of a payload", enqueue, "{\"payload\":{\"\xff\":1}}", "payload"),
		post("invalid UTF-8 in a dedupe key", enqueue, "{\"payload\":1,\"dedupe\":{\"key\":\"k\xff\",\"mode\":\"until_done\"}}", "dedupe.key"),
		post("an escaped lone surrogate in a payload", enqueue, `{"payload":"\ud800"}`, "payload"),
		post("an escaped lone low surrogate deep in a payload", enqueue, `{"payload":{"a":"x\udc00y"}}`, "payload.a"),
		post("invalid UTF-8 in a job of a batch", batch, "{\"jobs\":[{\"payload\":1},{\"payload\":\"\xff\"}]}", "jobs[1].payload"),
		post("invalid UTF-8 in a claim's worker", claim, "{\"worker\":\"w\xff\"}", "worker"),
		post("a surrogate encoded as UTF-8 in a result", job+"/complete", "{\"token\":1,\"result\":\"\xed\xa0\x80\"}", "result"),
		post("invalid UTF-8 in progress", job+"/lease", "{\"token\":1,\"lease_ms\":1000,\"progress\":[\"\x80\"]}", "progress[0]"),
		post("invalid UTF-8 in a fail's error", job+"/fail", "{\"token\":1,\"error\":\"boom \xff\"}", "error"),
		post("invalid UTF-8 in a cancel's reason", job+"/cancel", "{\"reason\":\"\xfe\"}", "reason"),
		post("invalid UTF-8 in a batch complete's result", "/queues/Q/complete", "{\"jobs\":[{\"id\":\"held\",\"token\":1,\"result\":\"\xff\"}]}", "jobs[0].result"),

		post("payload twice", enqueue, `{"payload":1,"payload":{"evil":1}}`, "payload"),
		post("id twice", enqueue, `{"id":"a","id":"b","payload":1}`, "id"),
		post("a member twice inside a payload", enqueue, `{"payload":{"user":{"role":"x","role":"admin"}}}`, "payload.user.role"),
		post("jobs twice", batch, `{"jobs":[{"payload":1}],"jobs":[{"payload":2}]}`, "jobs"),
		post("a member twice in a job of a batch", batch, `{"jobs":[{"payload":1},{"payload":{"k":1,"k":2}}]}`, "jobs[1].payload.k"),
		post("token twice", job+"/complete", `{"token":1,"token":1}`, "token"),
		post("a member twice in a result", job+"/complete", `{"token":1,"result":{"a":1,"a":1}}`, "result.a"),
		post("count twice", claim, `{"count":1,"count":100}`, "count"),
		post("reason twice", job+"/cancel", `{"reason":"a","reason":"b"}`, "reason"),

		post("Payload", enqueue, `{"Payload":2}`, "Payload"),
		post("ID", enqueue, `{"ID":"x","payload":1}`, "ID"),
		post("backoff's Type", enqueue, `{"payload":1,"backoff":{"Type":"fixed","delay_ms":1}}`, "backoff.Type"),
		post("Jobs", batch, `{"Jobs":[{"payload":1}]}`, "Jobs"),
		post("Token", job+"/complete", `{"Token":1}`, "Token"),
		post("COUNT", claim, `{"COUNT":2}`, "COUNT"),
	}
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "held", "waiting")
		// The cases name token 1 for the holder's token (in any case): use
		// the real one, so that each is refused for its ambiguity alone.
		holder := fmt.Sprintf(`"$1":%d`, h.claimOne(t, q, "held", 30_000).Token)
		withToken := make([]refusal, len(cases))
		for i, c := range cases {
			c.body = anyCaseTokenOne.ReplaceAllString(c.body, holder)
			withToken[i] = c
		}
		runRefusals(t, h, q, withToken)
		p := wantProblem(t, h.do(t, "POST", jobsPath(q), `{"Payload":2}`), 400, "EMQINVALID")
		if len(p.Errors) != 1 || !strings.Contains(p.Errors[0].Message, `"payload"`) {
			t.Errorf("Payload answered %+v, want the field named as the spec spells it", p.Errors)
		}
	})
}

var anyCaseTokenOne = regexp.MustCompile(`"((?i)token)":1\b`)

// TestUnambiguousJSONIsAccepted: the strict reading refuses nothing that
// reads one way: any character, raw or escaped, a surrogate pair, member
// names that differ only by case inside a payload, and one name in two
// objects. Each comes back as it was sent, and every answer is UTF-8.
func TestUnambiguousJSONIsAccepted(t *testing.T) {
	t.Parallel()
	const payload = `{"name":"Ada é 日本","emoji":"\ud83d\ude00","raw":"😀","Name":1,"NAME":2,` +
		`"a":{"x":1},"b":{"x":[{"x":2}]},"nul":"\u0000","ls":"\u2028","esc":"\u00e9"}`
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		created := h.enqueue(t, q, `{"id":"j","payload":`+payload+`}`)
		if string(created.Payload) != payload {
			t.Errorf("payload answered %s, want %s as sent", created.Payload, payload)
		}
		r := h.do(t, "POST", "/queues/"+q+"/claim", `{"worker":"wörker ✓"}`)
		held := must[jobList](t, r, 200).Jobs
		if len(held) != 1 || string(held[0].Payload) != payload || !utf8.Valid(r.Body) {
			t.Fatalf("claim answered %s, want j with its payload as sent", r)
		}
		result := `{"é":"\ud834\udd1e","E":1,"e":2}`
		r = h.do(t, "POST", jobPath(q, "j", "complete"), fmt.Sprintf(`{"token":%d,"result":%s}`, held[0].Token, result))
		if done := must[jobView](t, r, 200); string(done.Result) != result || !utf8.Valid(r.Body) {
			t.Fatalf("complete answered %s, want the result as sent", r)
		}
		if got := h.get(t, q, "j"); string(got.Payload) != payload || string(got.Result) != result {
			t.Errorf("GET answered payload %s, result %s; want them as sent", got.Payload, got.Result)
		}
	})
}
