package http_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	emqhttp "github.com/echo-mq/echo_mq/internal/http"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

// gatewayToken is a header value the tests look for wherever it must not be.
const gatewayToken = "gw-7f3a9c1e5b"

// headerNames is what PUT and GET /queues/{q}/push answer of the headers.
type headerNames struct {
	HeaderNames []string `json:"header_names"`
	UpdatedAt   string   `json:"updated_at"`
}

// TestPushHeaders: a target's headers go with every delivery, beside the
// signature, and are never answered back (header_names names them) nor
// put in an event.
func TestPushHeaders(t *testing.T) {
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
			}
		})
		body := `{"url":"` + rc.URL + `","secret":"` + testSecret + `",` +
			`"headers":{"Authorization":"Bearer ` + gatewayToken + `","x-gateway-key":"k 1\twith tab","X-Empty":""}}`
		put := h.do(t, "PUT", "/queues/"+q+"/push", body)
		got := h.do(t, "GET", "/queues/"+q+"/push", nil)
		for _, r := range []reply{put, got} {
			names := must[headerNames](t, r, http.StatusOK).HeaderNames
			if !slices.Equal(names, []string{"Authorization", "X-Empty", "X-Gateway-Key"}) {
				t.Errorf("header_names %q, want the three names, canonical and sorted", names)
			}
			if strings.Contains(r.String(), gatewayToken) || strings.Contains(r.String(), "with tab") {
				t.Errorf("an answer shows a header's value: %s", r)
			}
		}
		for i := range 3 {
			h.enqueue(t, q, fmt.Sprintf(`{"id":"h-%d","payload":{}}`, i))
		}
		until(t, "every job completed", func() bool { return h.queueOf(t, q).Counts["completed"] == 3 })
		for _, d := range rc.got() {
			if d.header.Get("Authorization") != "Bearer "+gatewayToken || d.header.Get("X-Gateway-Key") != "k 1\twith tab" ||
				d.header.Values("X-Empty") == nil || d.header.Get("Content-Type") != "application/json" ||
				d.header.Get("webhook-id") == "" {
				t.Errorf("delivery of %s carried %v", d.job.ID, d.header)
			}
		}
		for _, e := range h.streamEntries(t, q) {
			for _, v := range e {
				if strings.Contains(v, gatewayToken) {
					t.Fatalf("an event shows a header's value: %v", e)
				}
			}
		}
		replaced := must[headerNames](t, h.do(t, "PUT", "/queues/"+q+"/push", `{"url":"`+rc.URL+`"}`), http.StatusOK)
		if replaced.HeaderNames == nil || len(replaced.HeaderNames) != 0 {
			t.Errorf("a put without headers answered header_names %q, want [] (a put replaces the target whole)", replaced.HeaderNames)
		}
	}, withPush("127.0.0.1"))
}

// TestPushHeadersRefused: bad headers are 400 EMQINVALID naming headers,
// and write nothing: no target on a new queue, the old one kept whole.
func TestPushHeadersRefused(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q, fresh := redistest.Queue(t), redistest.Queue(t)+"-new"
		before := must[headerNames](t, h.do(t, "PUT", "/queues/"+q+"/push",
			`{"url":"http://127.0.0.1:9/","headers":{"Authorization":"Bearer a"}}`), http.StatusOK)
		many := map[string]string{}
		for i := range 21 {
			many[fmt.Sprintf("X-H%d", i)] = "v"
		}
		big := strings.Repeat("v", 4100)
		for _, headers := range []any{
			many,
			map[string]string{"Bad Name": "v"}, map[string]string{"": "v"}, map[string]string{"X(1)": "v"},
			map[string]string{"Host": "evil.example"}, map[string]string{"content-type": "text/plain"},
			map[string]string{"Content-Length": "1"}, map[string]string{"Transfer-Encoding": "chunked"},
			map[string]string{"Connection": "close"}, map[string]string{"TE": "trailers"},
			map[string]string{"Upgrade": "h2c"}, map[string]string{"Proxy-Authorization": "x"},
			map[string]string{"webhook-id": "forged"}, map[string]string{"Webhook-Signature": "v1,forged"},
			map[string]string{"User-Agent": "x"}, map[string]string{"traceparent": "00-x"},
			map[string]string{"X-A": "line\r\nInjected: 1"}, map[string]string{"X-A": "line\nbreak"},
			map[string]string{"X-A": "ünïcode"}, map[string]string{"X-A": "bell\a"},
			map[string]string{"X-A": "1", "x-a": "2"},
			map[string]string{"X-A": big, "X-B": big},
			map[string]int{"X-A": 1}, // named headers.X-A, as the decoder names a value's path
			[]string{"Authorization"},
		} {
			field := "headers"
			if _, ok := headers.(map[string]int); ok {
				field = "headers.X-A"
			}
			for _, queue := range []string{q, fresh} {
				body, _ := json.Marshal(map[string]any{"url": "http://127.0.0.1:9/", "headers": headers})
				p := wantProblem(t, h.do(t, "PUT", "/queues/"+queue+"/push", body), http.StatusBadRequest, "EMQINVALID")
				wantField(t, p, field)
			}
		}
		after := must[headerNames](t, h.do(t, "GET", "/queues/"+q+"/push", nil), http.StatusOK)
		if !slices.Equal(after.HeaderNames, []string{"Authorization"}) || after.UpdatedAt != before.UpdatedAt {
			t.Errorf("after the refusals %+v, want the target as it was, %+v", after, before)
		}
		wantProblem(t, h.do(t, "GET", "/queues/"+fresh+"/push", nil), http.StatusNotFound, "EMQGONE")
		if keys := h.keysOf(t, fresh, "*"); len(keys) != 0 {
			t.Errorf("refused puts on a new queue left keys: %v", keys)
		}
		if got := must[headerNames](t, h.do(t, "PUT", "/queues/"+q+"/push",
			map[string]any{"url": "http://127.0.0.1:9/", "headers": map[string]string{"X-A": big, "X-B": big[:3000]}}),
			http.StatusOK); len(got.HeaderNames) != 2 {
			t.Errorf("headers of 7,106 bytes were refused: %+v", got)
		}
	}, withPush("127.0.0.1"))
}

// TestPushHeadersAreNeverLogged: the audit of a put names the headers,
// never their values, and no log line shows one.
func TestPushHeadersAreNeverLogged(t *testing.T) {
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
	putPush(t, h, q, `{"url":"`+rc.URL+`","headers":{"Authorization":"Bearer `+gatewayToken+`"}}`)
	h.wantStateSoon(t, q, "good", "completed")
	h.wantStateSoon(t, q, "bad", "dead")
	audited := false
	for _, rec := range logs.records(t) {
		line, _ := json.Marshal(rec)
		if strings.Contains(string(line), gatewayToken) {
			t.Errorf("a log line shows a header's value: %s", line)
		}
		if rec["action"] == "put_push" {
			names, _ := rec["header_names"].([]any)
			audited = len(names) == 1 && names[0] == "Authorization"
		}
	}
	if !audited {
		t.Error("the put of the target was not audited with its header_names")
	}
}
