package http

import (
	"net/http"

	"github.com/echo-mq/echo_mq/internal/stall"
)

// SweepRequest bounds a sweep.
type SweepRequest struct {
	// The stall count at which a job is dead-lettered; 0 or absent: the
	// service's EMQ_MAX_STALLED (default 2).
	MaxStalled int `json:"max_stalled,omitempty" validate:"min=0,max=1000" example:"2"`
	// How many lapsed jobs to take at most; 0 or absent: 1000.
	Limit int `json:"limit,omitempty" validate:"min=0,max=10000" example:"1000"`
} // @name SweepRequest

// SweepResponse lists the ids the sweep moved, by where they went.
type SweepResponse struct {
	Recovered []string `json:"recovered" binding:"required"`
	Dead      []string `json:"dead" binding:"required"`
	Cancelled []string `json:"cancelled" binding:"required"`
	// Jobs whose attempt reached its timeout_ms and failed with
	// last_error "timeout", waiting for another attempt (delayed or
	// pending); those at max_attempts are in dead.
	Retried []string `json:"retried" binding:"required"`
} // @name SweepResponse

// handleSweep godoc
//
//	@Summary		Sweep stalled jobs
//	@Description	Takes the active jobs whose lease has lapsed on the Redis server's clock (up to limit). Each one's stalled count goes up by one: a job whose cancel was requested is cancelled; one that reached max_stalled is dead-lettered (last_error "stalled"); any other goes back to the front of pending. The background reaper runs this for every queue; this route runs it now.
//	@ID				sweepQueue
//	@Tags			operator
//	@Security		BearerAuth
//	@Security		Signature
//	@Accept			json
//	@Param			queue	path	string			true	"queue name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Param			sweep	body	SweepRequest	false	"max_stalled and limit"
//	@Produce		application/problem+json
//	@Failure		400	{object}	Problem	"EMQINVALID"
//	@Failure		403	{object}	Problem	"EMQFORBIDDEN: the key's role may not do this"
//	@Produce		json
//	@Success		200	{object}	SweepResponse
//	@Router			/queues/{queue}/sweep [post]
func (s *server) handleSweep(w http.ResponseWriter, r *http.Request) {
	queue, err := queueParam(r)
	var req SweepRequest
	if err == nil {
		err = s.decode(r, &req)
	}
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	if req.MaxStalled == 0 {
		req.MaxStalled = s.cfg.MaxStalled
	}
	swept, err := s.sweeper.Sweep(r.Context(), queue, stall.SweepParams{MaxStalled: req.MaxStalled, Limit: req.Limit})
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	if s.cfg.Metrics != nil {
		s.cfg.Metrics.Swept(queue, len(swept.Recovered), len(swept.Dead), len(swept.Cancelled))
		s.cfg.Metrics.Reaped(queue, "timed_out", len(swept.Retried))
	}
	writeJSON(w, http.StatusOK, SweepResponse{Recovered: swept.Recovered, Dead: swept.Dead, Cancelled: swept.Cancelled, Retried: swept.Retried})
}
