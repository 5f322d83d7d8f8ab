package http

import (
	"io/fs"
	"net/http"

	"github.com/go-chi/chi/v5"
	swaggerFiles "github.com/swaggo/files/v2"
	httpSwagger "github.com/swaggo/http-swagger/v2"

	"github.com/echo-mq/echo_mq/api"
)

func registerServiceRoutes(r chi.Router, s *server) {
	r.Get("/healthz", s.handleHealthz)
	r.Get("/readyz", s.handleReadyz)
	r.Get("/openapi.yaml", handleOpenAPI)
	r.Get("/docs", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/docs/index.html", http.StatusFound)
	})
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

// swaggerUI serves Swagger UI from the binary, pointed at /openapi.yaml.
// Anything but its page and assets is an ordinary 404 problem.
func swaggerUI() http.HandlerFunc {
	ui := httpSwagger.Handler(httpSwagger.URL("/openapi.yaml"))
	return func(w http.ResponseWriter, r *http.Request) {
		name := chi.URLParam(r, "*")
		if _, err := fs.Stat(swaggerFiles.FS, name); name != "index.html" && err != nil {
			notFound(w, r)
			return
		}
		ui(w, r)
	}
}

// Health is the answer of the health routes.
type Health struct {
	Status string `json:"status" binding:"required" example:"ok"`
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
//	@Description	200 when Redis answers, 503 EMQUNAVAILABLE when it does not.
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
			writeProblemBody(w, newProblem(CodeUnavailable, "Redis does not answer"))
			return
		}
	}
	writeJSON(w, http.StatusOK, Health{Status: "ok"})
}

// handleOpenAPI serves the API's OpenAPI 3.1 spec, embedded in the binary.
func handleOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/yaml")
	_, _ = w.Write(api.Spec)
}
