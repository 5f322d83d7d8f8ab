package http

import (
	"net/http"

	"github.com/echo-mq/echo_mq/internal/history"
)

// QueueStats is a queue's last minutes and its latency now.
type QueueStats struct {
	Queue string `json:"queue" example:"emails"`
	// OldestPendingAgeMs is the queue's latency: how long the pending job
	// that has waited longest has been claimable, ms; 0 when none is
	// pending.
	OldestPendingAgeMs int64 `json:"oldest_pending_age_ms" format:"int64" minimum:"0" example:"1250"`
	// Minutes are one entry per minute of the range, oldest first; the
	// last is the current minute, still filling.
	Minutes []StatsMinute `json:"minutes"`
}

// StatsMinute is what happened in a queue in one minute, on the Redis
// server's clock.
type StatsMinute struct {
	At        string `json:"at" format:"date-time" example:"2026-12-01T10:00:00.000Z"`
	Enqueued  int64  `json:"enqueued" format:"int64" minimum:"0" example:"10"`
	Started   int64  `json:"started" format:"int64" minimum:"0" example:"9"`
	Completed int64  `json:"completed" format:"int64" minimum:"0" example:"8"`
	// Failed counts failed attempts that were retried: a worker's fail, a
	// timeout, a stall.
	Failed    int64 `json:"failed" format:"int64" minimum:"0" example:"1"`
	Dead      int64 `json:"dead" format:"int64" minimum:"0" example:"0"`
	Cancelled int64 `json:"cancelled" format:"int64" minimum:"0" example:"0"`
	// WaitMsMean is the mean wait of the jobs that started in the minute,
	// from when each became claimable; 0 when none started.
	WaitMsMean float64 `json:"wait_ms_mean" minimum:"0" example:"12.5"`
	// RunMsMean is the mean time of the attempts that ended in the minute
	// on their holder's complete or fail; 0 when none did.
	RunMsMean float64 `json:"run_ms_mean" minimum:"0" example:"230.1"`
}

// handleQueueStats godoc
//
//	@Summary		A queue's history and latency
//	@Description	What happened in the queue minute by minute, oldest first, one entry per minute of the range (zeros where nothing happened; the last is the current minute, still filling), kept 24 hours and written by the scripts on the Redis server's clock, so every replica answers the same. oldest_pending_age_ms is the queue's latency now.
//	@ID				getQueueStats
//	@Tags			operator
//	@Security		BearerAuth
//	@Security		Signature
//	@Param			queue	path	string	true	"queue name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Param			minutes	query	int		false	"how many minutes, up to now"	minimum(1)	maximum(1440)	default(60)
//	@Produce		application/problem+json
//	@Failure		400	{object}	Problem	"EMQINVALID"
//	@Failure		403	{object}	Problem	"EMQFORBIDDEN: the key's role may not do this"
//	@Produce		json
//	@Success		200	{object}	QueueStats
//	@Router			/queues/{queue}/stats [get]
func (s *server) handleQueueStats(w http.ResponseWriter, r *http.Request) {
	queue, err := queueParam(r)
	minutes := 0
	if err == nil {
		minutes, err = intQuery(r, "minutes", 60, history.MaxMinutes)
	}
	var st history.Stats
	if err == nil {
		st, err = s.cfg.History.Read(r.Context(), queue, minutes)
	}
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, queueStatsOf(st))
}

func queueStatsOf(st history.Stats) QueueStats {
	out := QueueStats{Queue: st.Queue, OldestPendingAgeMs: st.OldestPendingAge.Milliseconds(),
		Minutes: make([]StatsMinute, len(st.Minutes))}
	for i, m := range st.Minutes {
		out.Minutes[i] = StatsMinute{At: stamp(m.At), Enqueued: m.Enqueued, Started: m.Started, Completed: m.Completed,
			Failed: m.Failed, Dead: m.Dead, Cancelled: m.Cancelled, WaitMsMean: m.WaitMean, RunMsMean: m.RunMean}
	}
	return out
}
