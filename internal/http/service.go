package http

import (
	"crypto/sha256"
	"encoding/base64"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"

	"github.com/go-chi/chi/v5"
	swaggerFiles "github.com/swaggo/files/v2"
	httpSwagger "github.com/swaggo/http-swagger/v2"

	"github.com/echo-mq/echo_mq/api"
)

func registerServiceRoutes(r chi.Router, s *server) {
	r.Get("/healthz", s.handleHealthz)
	r.Get("/readyz", s.handleReadyz)
	r.Get("/openapi.yaml", handleOpenAPI)
	toDocs := func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/docs/index.html", http.StatusFound)
	}
	r.Get("/docs", toDocs)
	r.Get("/docs/", toDocs)
	r.Get("/docs/*", swaggerUI())
	if s.cfg.MetricsHandler != nil {
		r.With(s.authorize(s.cfg.MetricsRole)).Get("/metrics", s.handleMetrics)
	}
}

// handleMetrics godoc
//
//	@Summary		Prometheus metrics
//	@Description	The service's metrics in the Prometheus text exposition format: requests, transitions and queue depths (docs/operating.md, Metrics). A reader key may read them when keys are set (EMQ_METRICS=open opens them to all); EMQ_METRICS=off serves no such route.
//	@ID				metrics
//	@Tags			service
//	@Security		BearerAuth
//	@Security		Signature
//	@Produce		application/problem+json
//	@Failure		404	{object}	Problem	"EMQNOTFOUND: EMQ_METRICS=off"
//	@Produce		text/plain
//	@Success		200	{string}	string	"the text exposition"
//	@Router			/metrics [get]
func (s *server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	s.cfg.MetricsHandler.ServeHTTP(w, r)
}

// swaggerUI serves Swagger UI from the binary, pointed at /openapi.yaml,
// with the strict headers the dashboard has (docsHeaders). Anything but its
// page and assets is an ordinary 404 problem.
func swaggerUI() http.HandlerFunc {
	ui := httpSwagger.Handler(httpSwagger.URL("/openapi.yaml"))
	csp := docsPolicy(ui)
	return func(w http.ResponseWriter, r *http.Request) {
		name := chi.URLParam(r, "*")
		if _, err := fs.Stat(swaggerFiles.FS, name); name != "index.html" && err != nil {
			notFound(w, r)
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		if r.Method == http.MethodHead { // the library answers GET only; net/http drops the body
			r = r.Clone(r.Context())
			r.Method = http.MethodGet
		}
		ui(w, r)
	}
}

// inlineScript finds the scripts of a page written in it (not loaded by
// src).
var inlineScript = regexp.MustCompile(`(?s)<script>(.*?)</script>`)

// docsPolicy is the Content-Security-Policy of Swagger UI's pages: its own
// files and origin only, no frames, and of inline scripts only the one its
// index page carries, allowed by its hash (computed from the page ui
// serves, so that an upgrade of the library cannot silently break the
// page). Swagger UI sets style attributes as it renders, so inline styles
// are allowed: a style cannot run code.
func docsPolicy(ui http.HandlerFunc) string {
	rec := httptest.NewRecorder()
	ui(rec, httptest.NewRequest(http.MethodGet, "/docs/index.html", nil))
	scripts := ""
	for _, m := range inlineScript.FindAllSubmatch(rec.Body.Bytes(), -1) {
		sum := sha256.Sum256(m[1])
		scripts += " 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
	}
	return "default-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; " +
		"script-src 'self'" + scripts + "; object-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
}

// Health is the answer of the health routes.
type Health struct {
	Status string `json:"status" binding:"required" example:"ok"`
	// The Redis master the service writes to, on /readyz of a service
	// that follows Redis Sentinel (EMQ_REDIS_URL=redis+sentinel://...):
	// it changes with a failover.
	RedisMaster string `json:"redis_master,omitempty" example:"10.0.0.7:6379"`
} // @name Health

// handleHealthz godoc
//
//	@Summary	Liveness
//	@Description	200 while the process is up, whether or not Redis answers.
//	@ID			healthz
//	@Tags		service
//	@Produce	application/problem+json
//	@Failure	500	{object}	Problem	"EMQINTERNAL: a bug, logged with the request id"
//	@Produce	json
//	@Success	200	{object}	Health
//	@Router		/healthz [get]
func (s *server) handleHealthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, Health{Status: "ok"})
}

// handleReadyz godoc
//
//	@Summary	Readiness
//	@Description	200 when Redis answers, 503 EMQUNAVAILABLE when it does not. Under Redis Sentinel the answer names the master in use (redis_master).
//	@ID			readyz
//	@Tags		service
//	@Produce	application/problem+json
//	@Failure	500	{object}	Problem	"EMQINTERNAL: a bug, logged with the request id"
//	@Failure	503	{object}	Problem	"EMQUNAVAILABLE"
//	@Header	503	{integer}	Retry-After	"seconds to wait before trying again"
//	@Produce	json
//	@Success	200	{object}	Health
//	@Router		/readyz [get]
func (s *server) handleReadyz(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Ready != nil {
		if err := s.cfg.Ready(r.Context()); err != nil {
			s.log.Warn("Not ready: Redis does not answer", "error", err)
			w.Header().Set("Retry-After", retryAfterSecond)
			writeProblemBody(w, problemAt(r, CodeUnavailable, "Redis does not answer"))
			return
		}
	}
	health := Health{Status: "ok"}
	if s.cfg.RedisMaster != nil {
		health.RedisMaster = s.cfg.RedisMaster()
	}
	writeJSON(w, http.StatusOK, health)
}

// handleOpenAPI serves the API's OpenAPI 3.1 spec, embedded in the binary.
func handleOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/yaml")
	_, _ = w.Write(api.Spec)
}
