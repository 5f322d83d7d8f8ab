package http

import (
	"context"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/admin"
	"github.com/echo-mq/echo_mq/internal/auth"
	"github.com/echo-mq/echo_mq/internal/events"
	"github.com/echo-mq/echo_mq/internal/lease"
	"github.com/echo-mq/echo_mq/internal/redistest"
	"github.com/echo-mq/echo_mq/internal/scheduler"
	"github.com/echo-mq/echo_mq/internal/stall"
	"github.com/echo-mq/echo_mq/internal/wake"
)

var testKeys = map[auth.Role]string{
	auth.Reader: "reader-key-0123456789",
	auth.Worker: "worker-key-0123456789",
	auth.Admin:  "admin-key-01234567890",
}

// keyedHandler is the API with the three test keys configured.
func keyedHandler(t *testing.T) (http.Handler, string) {
	t.Helper()
	prefix := "emqa-" + redistest.Queue(t)
	return keyedWith(t, prefix, nil), prefix
}

// keyedWith is the API with the three test keys configured, under prefix,
// with its Config changed by tweak.
func keyedWith(t *testing.T, prefix string, tweak func(*Config)) http.Handler {
	t.Helper()
	rdb := redistest.Client(t)
	kr, err := auth.ParseKeys("reader:" + testKeys[auth.Reader] + ",worker:" + testKeys[auth.Worker] + ",admin:" + testKeys[auth.Admin])
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{
		Leases: lease.NewService(rdb, prefix), Admin: admin.NewService(rdb, prefix), Schedules: scheduler.NewService(rdb, prefix),
		Sweeper: stall.NewService(rdb, prefix), Waiters: wake.NewHub(rdb, prefix, nil),
		Events: events.NewLog(rdb, prefix), Keys: kr, Replays: auth.NewRedisReplays(rdb),
		MetricsHandler: textMetrics, MetricsRole: auth.Reader,
	}
	if tweak != nil {
		tweak(&cfg)
	}
	return NewHandler(cfg)
}

// send makes one request, and checks it and its answer against
// api/openapi.yaml; one that streams (events) is cut after a second.
func send(tb testing.TB, h http.Handler, method, path, key string, body string) *httptest.ResponseRecorder {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req := httptest.NewRequestWithContext(ctx, method, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	CheckContract(tb, req, []byte(body), rec.Code, rec.Header(), rec.Body.Bytes())
	return rec
}

// TestEveryRouteChecksItsRole tries every route of the API with no key, a
// wrong key and each role's key: 401 without a valid key, 403 below the
// route's role, and never either from its role up.
func TestEveryRouteChecksItsRole(t *testing.T) {
	t.Parallel()
	h, _ := keyedHandler(t)
	routes := append((&server{}).apiRoutes(), route{method: "GET", pattern: "/metrics", role: auth.Reader})
	tried := 0
	for _, rt := range routes {
		path := strings.NewReplacer("{queue}", "q-"+strconv.Itoa(tried), "{id}", "j1").Replace(rt.pattern)
		if strings.HasSuffix(path, "/cancellation") {
			path += "?token=1"
		}
		for _, key := range []string{"", "not-a-key-not-a-key"} {
			rec := send(t, h, rt.method, path, key, "{}")
			if rec.Code != http.StatusUnauthorized || !strings.Contains(rec.Body.String(), "EMQUNAUTHORIZED") ||
				rec.Header().Get("WWW-Authenticate") == "" {
				t.Errorf("%s %s with key %q: %d %s, want 401 EMQUNAUTHORIZED with WWW-Authenticate", rt.method, rt.pattern, key, rec.Code, rec.Body)
			}
			tried++
		}
		for role, key := range testKeys {
			rec := send(t, h, rt.method, path, key, "{}")
			tried++
			switch refused := rec.Code == http.StatusUnauthorized || rec.Code == http.StatusForbidden; {
			case role < rt.role && (rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "EMQFORBIDDEN")):
				t.Errorf("%s %s as %v: %d, want 403 EMQFORBIDDEN", rt.method, rt.pattern, role, rec.Code)
			case role >= rt.role && refused:
				t.Errorf("%s %s as %v: %d %s, want it let through", rt.method, rt.pattern, role, rec.Code, rec.Body)
			}
		}
	}
	for _, open := range []string{"/healthz", "/openapi.yaml"} {
		if rec := send(t, h, "GET", open, "", ""); rec.Code != http.StatusOK {
			t.Errorf("GET %s without a key: %d, want 200", open, rec.Code)
		}
	}
	t.Logf("%d requests tried across %d routes", tried, len(routes))
}

func TestOpenMetricsNeedNoKey(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	kr, err := auth.ParseKeys("admin:" + testKeys[auth.Admin])
	if err != nil {
		t.Fatal(err)
	}
	metrics := func(role auth.Role) int {
		h := NewHandler(Config{Keys: kr, Ready: func(context.Context) error { return rdb.Ping(context.Background()).Err() },
			MetricsHandler: textMetrics, MetricsRole: role})
		return send(t, h, "GET", "/metrics", "", "").Code
	}
	if got := metrics(auth.Open); got != http.StatusOK {
		t.Errorf("open /metrics without a key: %d, want 200", got)
	}
	if got := metrics(auth.Reader); got != http.StatusUnauthorized {
		t.Errorf("/metrics for readers without a key: %d, want 401", got)
	}
}

func TestASignedRequestIsAcceptedOnce(t *testing.T) {
	t.Parallel()
	h, _ := keyedHandler(t)
	body := `{"id":"hook-1","payload":{"event":"push"}}`
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	signed := func(target, body string) string {
		req := auth.Request{Method: "POST", Target: target, Body: []byte(body)}
		return "sha256=" + hex.EncodeToString(auth.Sign([]byte(testKeys[auth.Worker]), ts, req))
	}
	sig := signed("/queues/hooks/jobs", body)
	post := func(sig string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "/queues/hooks/jobs", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-EMQ-Timestamp", ts)
		req.Header.Set("X-EMQ-Signature", sig)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		CheckContract(t, req, []byte(body), rec.Code, rec.Header(), rec.Body.Bytes())
		return rec
	}
	if rec := post(sig); rec.Code != http.StatusCreated {
		t.Fatalf("a signed enqueue: %d %s, want 201", rec.Code, rec.Body)
	}
	if rec := post(sig); rec.Code != http.StatusUnauthorized {
		t.Fatalf("the same signed request again: %d, want 401 (a replay)", rec.Code)
	}
	if rec := post(signed("/queues/hooks/jobs", `{}`)); rec.Code != http.StatusUnauthorized {
		t.Fatalf("a signature of another body: %d, want 401", rec.Code)
	}
	if rec := post(signed("/queues/other/jobs", body)); rec.Code != http.StatusUnauthorized {
		t.Fatalf("a signature for another route: %d, want 401", rec.Code)
	}
}

func TestOperatorEventsNameTheKey(t *testing.T) {
	t.Parallel()
	h, prefix := keyedHandler(t)
	if rec := send(t, h, "POST", "/queues/audited/pause", testKeys[auth.Admin], ""); rec.Code != http.StatusOK {
		t.Fatalf("pause: %d %s", rec.Code, rec.Body)
	}
	entries, err := redistest.Client(t).XRange(context.Background(), prefix+":{audited}:events", "-", "+").Result()
	if err != nil || len(entries) != 1 {
		t.Fatalf("events %v (%v), want one paused", entries, err)
	}
	// The keyring names its keys by role and place (reader, worker, admin):
	// never by anything computed from the secret, which a reader could test
	// guesses against.
	if v := entries[0].Values; v["kind"] != "paused" || v["actor"] != "admin-3" || v["role"] != "admin" {
		t.Fatalf("event %v, want paused by actor admin-3 (the admin key's name), role admin", v)
	}
}

// textMetrics stands in for the Prometheus handler: a text exposition.
var textMetrics = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, _ = w.Write([]byte("# no metrics in this test\n"))
})
