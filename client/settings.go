package client

import (
	"context"
	"net/http"
	"time"
)

// QueueSettings are a queue's settings, put whole (SetSettings): its flow
// control limits (docs/flow-control.md), the defaults its jobs get, and how
// long it keeps its finished jobs. A zero or nil field is none.
type QueueSettings struct {
	// Concurrency is the most of the queue's jobs active at once, across
	// every worker and service replica; 0: no limit.
	Concurrency int
	// RateLimit bounds the claims that start, for the whole queue.
	RateLimit *RateLimit
	// GroupConcurrency is the most active jobs per group; 0: no limit.
	GroupConcurrency int
	// GroupRateLimit bounds the claims that start, per group.
	GroupRateLimit *RateLimit
	// GroupFIFO runs at most one job per group at a time, in order
	// (group_order "fifo").
	GroupFIFO bool
	// JobDefaults are what an enqueue that does not name them gets.
	JobDefaults *JobDefaults
	// Retention is how many finished jobs the queue keeps, and how long;
	// nil keeps the service's defaults.
	Retention *Retention
}

// RateLimit is at most Limit claims starting in any Window, on the Redis
// server's clock.
type RateLimit struct {
	Limit  int
	Window time.Duration
}

// JobDefaults are what an enqueue into the queue (one, a batch, a
// schedule's tick) gets for what it does not name; a zero or nil field is
// no default (the service's own holds). A job that names a field keeps its
// own value; EnqueueRequest's Priority 0 names none (the service's API
// takes an explicit priority 0 as named).
type JobDefaults struct {
	MaxAttempts int      // 1 to 1000
	Backoff     *Backoff // answered with its Delay and MaxDelay filled in
	Priority    *int     // 0 to 9
	Timeout     time.Duration
	ExpiresIn   time.Duration // not given to a job with DependsOn
}

// Retention is how a queue keeps its finished jobs, by state; a nil Keep
// keeps the service's default: completed the newest EMQ_KEEP_COMPLETED
// (10,000 unless set), dead and cancelled all. Jobs beyond a rule are
// deleted, oldest first, rows and all: a few as jobs finish, the rest by
// the service's reaper, which also deletes those that age out of an idle
// queue.
type Retention struct {
	Completed, Dead, Cancelled *Keep
}

// Keep keeps the newest Count jobs (0: any number) that finished within
// MaxAge (0: however long ago, to the millisecond); Keep{} keeps all.
type Keep struct {
	Count  int
	MaxAge time.Duration
}

// settingsBody is QueueSettings as the API reads and answers them.
type settingsBody struct {
	Concurrency      int              `json:"concurrency,omitempty"`
	RateLimit        *rateLimitBody   `json:"rate_limit,omitempty"`
	GroupConcurrency int              `json:"group_concurrency,omitempty"`
	GroupRateLimit   *rateLimitBody   `json:"group_rate_limit,omitempty"`
	GroupOrder       string           `json:"group_order,omitempty"`
	JobDefaults      *jobDefaultsBody `json:"job_defaults,omitempty"`
	Retention        *retentionBody   `json:"retention,omitempty"`
}

type rateLimitBody struct {
	Limit    int   `json:"limit"`
	WindowMs int64 `json:"window_ms"`
}

type jobDefaultsBody struct {
	MaxAttempts int          `json:"max_attempts,omitempty"`
	Backoff     *backoffBody `json:"backoff,omitempty"`
	Priority    *int         `json:"priority,omitempty"`
	TimeoutMs   *int64       `json:"timeout_ms,omitempty"`
	ExpiresInMs *int64       `json:"expires_in_ms,omitempty"`
}

type retentionBody struct {
	Completed *keepBody `json:"completed,omitempty"`
	Dead      *keepBody `json:"dead,omitempty"`
	Cancelled *keepBody `json:"cancelled,omitempty"`
}

type keepBody struct {
	Count int    `json:"count,omitempty"`
	AgeMs *int64 `json:"age_ms,omitempty"`
}

// Settings returns queue's settings; a queue that never had any has none.
// It takes a reader key.
func (c *Client) Settings(ctx context.Context, queue string) (QueueSettings, error) {
	var out settingsBody
	_, err := c.do(ctx, http.MethodGet, queuePath(queue, "/settings"), nil, &out)
	return out.settings(), err
}

// SetSettings replaces queue's settings whole (what s leaves out is none)
// and returns them as the service keeps them. Limits hold from the next
// claim, job defaults from the next enqueue, retention from the next
// finish, on every service replica. It takes an admin key; invalid
// settings are ErrInvalid and change nothing.
func (c *Client) SetSettings(ctx context.Context, queue string, s QueueSettings) (QueueSettings, error) {
	var out settingsBody
	_, err := c.do(ctx, http.MethodPut, queuePath(queue, "/settings"), s.body(), &out)
	return out.settings(), err
}

func (s QueueSettings) body() settingsBody {
	b := settingsBody{Concurrency: s.Concurrency, RateLimit: s.RateLimit.body(), GroupConcurrency: s.GroupConcurrency,
		GroupRateLimit: s.GroupRateLimit.body()}
	if s.GroupFIFO {
		b.GroupOrder = "fifo"
	}
	if d := s.JobDefaults; d != nil {
		b.JobDefaults = &jobDefaultsBody{MaxAttempts: d.MaxAttempts, Backoff: d.Backoff.body(), Priority: d.Priority,
			TimeoutMs: millisIfSet(d.Timeout), ExpiresInMs: millisIfSet(d.ExpiresIn)}
	}
	if r := s.Retention; r != nil {
		b.Retention = &retentionBody{Completed: r.Completed.body(), Dead: r.Dead.body(), Cancelled: r.Cancelled.body()}
	}
	return b
}

func (b settingsBody) settings() QueueSettings {
	s := QueueSettings{Concurrency: b.Concurrency, RateLimit: b.RateLimit.rateLimit(), GroupConcurrency: b.GroupConcurrency,
		GroupRateLimit: b.GroupRateLimit.rateLimit(), GroupFIFO: b.GroupOrder == "fifo"}
	if d := b.JobDefaults; d != nil {
		s.JobDefaults = &JobDefaults{MaxAttempts: d.MaxAttempts, Backoff: d.Backoff.backoff(), Priority: d.Priority,
			Timeout: duration(d.TimeoutMs), ExpiresIn: duration(d.ExpiresInMs)}
	}
	if r := b.Retention; r != nil {
		s.Retention = &Retention{Completed: r.Completed.keep(), Dead: r.Dead.keep(), Cancelled: r.Cancelled.keep()}
	}
	return s
}

func (r *RateLimit) body() *rateLimitBody {
	if r == nil {
		return nil
	}
	return &rateLimitBody{Limit: r.Limit, WindowMs: millis(r.Window)}
}

func (r *rateLimitBody) rateLimit() *RateLimit {
	if r == nil {
		return nil
	}
	return &RateLimit{Limit: r.Limit, Window: time.Duration(r.WindowMs) * time.Millisecond}
}

func (k *Keep) body() *keepBody {
	if k == nil {
		return nil
	}
	return &keepBody{Count: k.Count, AgeMs: millisIfSet(k.MaxAge)}
}

func (k *keepBody) keep() *Keep {
	if k == nil {
		return nil
	}
	return &Keep{Count: k.Count, MaxAge: duration(k.AgeMs)}
}

// duration is ms milliseconds; 0 for nil.
func duration(ms *int64) time.Duration {
	if ms == nil {
		return 0
	}
	return time.Duration(*ms) * time.Millisecond
}
