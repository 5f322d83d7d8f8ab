package client

import (
	"context"
	"net/http"
	"strconv"
	"time"
)

// QueueStats is a queue's last minutes and its latency now, as Stats
// answers them.
type QueueStats struct {
	Queue string
	// OldestPendingAge is the queue's latency: how long the pending job
	// that has waited longest has been claimable, in whole milliseconds;
	// 0 when none is pending.
	OldestPendingAge time.Duration
	// Minutes are one entry per minute of the range, oldest first; the
	// last is the current minute, still filling.
	Minutes []StatsMinute
}

// StatsMinute is what happened in a queue in one minute, on the Redis
// server's clock.
type StatsMinute struct {
	// At is the minute's start.
	At        time.Time
	Enqueued  int64
	Started   int64
	Completed int64
	// Failed counts failed attempts that were retried: a worker's fail, a
	// timeout, a stall.
	Failed    int64
	Dead      int64
	Cancelled int64
	// WaitMean is the mean wait of the jobs that started in the minute,
	// from when each became claimable; 0 when none started.
	WaitMean time.Duration
	// RunMean is the mean time of the attempts that ended in the minute on
	// their holder's complete or fail; 0 when none did.
	RunMean time.Duration
}

// statsBody is a QueueStats as the API answers it.
type statsBody struct {
	Queue              string            `json:"queue"`
	OldestPendingAgeMs int64             `json:"oldest_pending_age_ms"`
	Minutes            []statsMinuteBody `json:"minutes"`
}

type statsMinuteBody struct {
	At         time.Time `json:"at"`
	Enqueued   int64     `json:"enqueued"`
	Started    int64     `json:"started"`
	Completed  int64     `json:"completed"`
	Failed     int64     `json:"failed"`
	Dead       int64     `json:"dead"`
	Cancelled  int64     `json:"cancelled"`
	WaitMsMean float64   `json:"wait_ms_mean"`
	RunMsMean  float64   `json:"run_ms_mean"`
}

func (b statsBody) stats() QueueStats {
	s := QueueStats{Queue: b.Queue, OldestPendingAge: time.Duration(b.OldestPendingAgeMs) * time.Millisecond,
		Minutes: make([]StatsMinute, len(b.Minutes))}
	for i, m := range b.Minutes {
		s.Minutes[i] = StatsMinute{At: m.At, Enqueued: m.Enqueued, Started: m.Started, Completed: m.Completed,
			Failed: m.Failed, Dead: m.Dead, Cancelled: m.Cancelled,
			WaitMean: fromMillis(m.WaitMsMean), RunMean: fromMillis(m.RunMsMean)}
	}
	return s
}

// fromMillis is ms milliseconds, to the nanosecond.
func fromMillis(ms float64) time.Duration {
	return time.Duration(ms * float64(time.Millisecond))
}

// Stats returns what happened in queue over its last minutes (1 to 1440,
// up to now; 0: the service's default, 60), minute by minute, and its
// latency now. The history is kept 24 hours and written on the Redis
// server's clock, so every service replica answers the same; a minute in
// which nothing happened is all zeros, and a queue that never had a job
// answers zeros throughout. minutes out of range is ErrInvalid on the
// field "minutes". Any role may read it.
func (c *Client) Stats(ctx context.Context, queue string, minutes int) (QueueStats, error) {
	path := queuePath(queue, "/stats")
	if minutes != 0 {
		path += "?minutes=" + strconv.Itoa(minutes)
	}
	var out statsBody
	_, err := c.do(ctx, http.MethodGet, path, nil, &out)
	return out.stats(), err
}
