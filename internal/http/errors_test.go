package http_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/admin"
	emqhttp "github.com/echo-mq/echo_mq/internal/http"
	"github.com/echo-mq/echo_mq/internal/lease"
	"github.com/echo-mq/echo_mq/internal/redistest"
	"github.com/echo-mq/echo_mq/internal/scheduler"
	"github.com/echo-mq/echo_mq/internal/stall"
	"github.com/echo-mq/echo_mq/internal/wake"
)

func TestUnknownRouteAndMethod(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		for _, tc := range []struct {
			method, path string
			status       int
			code         string
		}{
			{"GET", "/nope", 404, "EMQNOTFOUND"},
			{"POST", "/queues/" + q + "/nope", 404, "EMQNOTFOUND"},
			{"GET", "/queues/" + q + "/jobs/a/nope", 404, "EMQNOTFOUND"},
			{"GET", "/queues/" + q + "/claim", 405, "EMQMETHOD"},
			{"PUT", "/queues/" + q + "/jobs/a", 405, "EMQMETHOD"},
			{"DELETE", "/healthz", 405, "EMQMETHOD"},
			{"GET", "/queues/" + q + "/jobs/a/complete", 405, "EMQMETHOD"},
		} {
			before := h.snapshot(t)
			wantProblem(t, h.do(t, tc.method, tc.path, nil), tc.status, tc.code)
			h.unchanged(t, before, tc.method+" "+tc.path)
		}
	})
}

// brokenLeaser is the real worker plane with an Enqueue that panics and a
// Claim that fails with an error no table knows (a bug, not Redis).
type brokenLeaser struct{ *lease.Service }

func (brokenLeaser) Enqueue(context.Context, string, []lease.NewJob) ([]lease.Enqueued, error) {
	panic("boom: a secret detail")
}

func (brokenLeaser) Claim(context.Context, string, lease.ClaimParams) (lease.Claimed, error) {
	return lease.Claimed{}, errors.New("unexpected script reply: a secret detail")
}

func TestInternalErrorIsProblem(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		for _, r := range []reply{
			h.do(t, "POST", jobsPath(q), `{"payload":1}`),
			h.do(t, "POST", "/queues/"+q+"/claim", `{}`),
		} {
			p := wantProblem(t, r, 500, "EMQINTERNAL")
			if p.Detail != "internal error" || strings.Contains(string(r.Body), "secret") {
				t.Errorf("got %s, want detail \"internal error\" and nothing of the cause", r.Body)
			}
		}
		wantProblem(t, h.do(t, "GET", jobPath(q, "a"), nil), 404, "EMQGONE")
	}, withConfig(func(c *emqhttp.Config) {
		c.Leases = brokenLeaser{c.Leases.(*lease.Service)}
	}))
}

// downHandler is the real router over real services whose Redis is down:
// a client of a loopback port that nothing listens on.
func downHandler(t *testing.T) *harness {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { rdb.Close() })
	const prefix = "emqt-down"
	logger := slog.New(slog.DiscardHandler)
	return &harness{rdb: rdb, prefix: prefix, handler: emqhttp.NewHandler(emqhttp.Config{
		Leases:    lease.NewService(rdb, prefix),
		Admin:     admin.NewService(rdb, prefix),
		Schedules: scheduler.NewService(rdb, prefix),
		Sweeper:   stall.NewService(rdb, prefix),
		Waiters:   wake.NewHub(rdb, prefix, logger),
		Ready:     func(ctx context.Context) error { return rdb.Ping(ctx).Err() },
		Logger:    logger,
	})}
}

func TestRedisDown(t *testing.T) {
	t.Parallel()
	h := downHandler(t)
	for _, tc := range []struct{ method, path, body string }{
		{"POST", "/queues/q/jobs", `{"payload":1}`},
		{"POST", "/queues/q/jobs/batch", `{"jobs":[{"payload":1}]}`},
		{"POST", "/queues/q/claim", `{}`},
		{"POST", "/queues/q/claim", `{"wait_ms":5000}`},
		{"POST", "/queues/q/jobs/a/lease", `{"token":1,"lease_ms":1000}`},
		{"POST", "/queues/q/jobs/a/complete", `{"token":1,"claim":{"count":1}}`},
		{"POST", "/queues/q/complete", `{"jobs":[{"id":"a","token":1}]}`},
		{"POST", "/queues/q/jobs/a/fail", `{"token":1,"error":"x"}`},
		{"GET", "/queues/q/jobs/a/cancellation?token=1", ``},
		{"POST", "/queues/q/jobs/a/cancel", `{}`},
		{"GET", "/queues/q/jobs/a", ``},
		{"DELETE", "/queues/q/jobs/a", ``},
		{"POST", "/queues/q/sweep", `{}`},
		{"GET", "/readyz", ``},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			t.Parallel()
			var body any
			if tc.body != "" {
				body = tc.body
			}
			r := h.do(t, tc.method, tc.path, body)
			wantProblem(t, r, http.StatusServiceUnavailable, "EMQUNAVAILABLE")
			if r.Header.Get("Retry-After") == "" {
				t.Errorf("got %s with no Retry-After header", r)
			}
		})
	}
	if r := h.do(t, "GET", "/healthz", nil); r.Status != 200 {
		t.Errorf("GET /healthz with Redis down got %s, want 200", r)
	}
}

func TestServiceRoutes(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		for _, path := range []string{"/healthz", "/readyz"} {
			r := h.do(t, "GET", path, nil)
			if got := must[map[string]string](t, r, 200); got["status"] != "ok" {
				t.Errorf("GET %s got %s, want 200 {\"status\":\"ok\"}", path, r)
			}
		}
		spec := h.do(t, "GET", "/openapi.yaml", nil)
		if spec.Status != 200 || !strings.Contains(string(spec.Body), "openapi: 3.1") ||
			!strings.Contains(spec.Header.Get("Content-Type"), "yaml") {
			t.Errorf("GET /openapi.yaml got %d %q, want 200 YAML with openapi: 3.1", spec.Status, spec.Header.Get("Content-Type"))
		}
		for _, route := range []string{"/queues/{queue}/claim:", "/queues/{queue}/jobs/{id}/lease:"} {
			if !strings.Contains(string(spec.Body), route) {
				t.Errorf("the spec lacks %s", route)
			}
		}
		docs := h.do(t, "GET", "/docs", nil)
		if docs.Status/100 != 3 || docs.Header.Get("Location") != "/docs/index.html" {
			t.Errorf("GET /docs got %d to %q, want a redirect to /docs/index.html", docs.Status, docs.Header.Get("Location"))
		}
		page := h.do(t, "GET", "/docs/index.html", nil)
		if page.Status != 200 || !strings.HasPrefix(page.Header.Get("Content-Type"), "text/html") ||
			!strings.Contains(strings.ToLower(string(page.Body)), "<html") {
			t.Errorf("GET /docs/index.html got %d %q, want an HTML page", page.Status, page.Header.Get("Content-Type"))
		}
	})
}
