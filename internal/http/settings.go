package http

import (
	"time"

	"github.com/echo-mq/echo_mq/internal/flow"
	"github.com/echo-mq/echo_mq/internal/lease"
)

// JobDefaults are what an enqueue into the queue (one, batch, or a
// schedule's tick) gets for a field it does not name, validated as an
// enqueue's; a job that names a field keeps its own value. An absent field
// is no default: the service's own holds.
type JobDefaults struct {
	// How many claims a job may have; the service's default is 3.
	MaxAttempts *int `json:"max_attempts,omitempty" validate:"omitnil,min=1,max=1000" example:"5"`
	// The retry delay after a failed attempt; the service's default is
	// exponential from 1000 ms, capped at one hour. Answered with its
	// delay_ms and max_delay_ms filled in.
	Backoff *BackoffRequest `json:"backoff,omitempty"`
	// 0 to 9, lower first; the service's default is 0. A job whose enqueue
	// names priority 0 keeps 0.
	Priority *int `json:"priority,omitempty" validate:"omitnil,min=0,max=9" example:"5"`
	// The total time one attempt may run, in ms.
	TimeoutMs *int64 `json:"timeout_ms,omitempty" format:"int64" validate:"omitnil,min=100,max=86400000" example:"30000"`
	// A job not started within this many ms of its enqueue ends cancelled,
	// "expired"; not given to a job with depends_on.
	ExpiresInMs *int64 `json:"expires_in_ms,omitempty" format:"int64" validate:"omitnil,min=1,max=31536000000" example:"600000"`
} // @name JobDefaults

// Retention is how many finished jobs the queue keeps, and how long, by
// state; an absent state keeps the service's default: completed the
// newest EMQ_KEEP_COMPLETED (default 10,000), dead and cancelled every
// one. Jobs beyond a rule are deleted oldest first,
// rows and all: a few as each job finishes, the rest by the reaper, which
// also deletes the jobs that age out of an idle queue.
type Retention struct {
	Completed *RetentionRule `json:"completed,omitempty"`
	Dead      *RetentionRule `json:"dead,omitempty"`
	Cancelled *RetentionRule `json:"cancelled,omitempty"`
} // @name Retention

// RetentionRule keeps a state's newest count jobs that finished within
// age_ms; an absent (or 0) limit is none, so {} keeps every one.
type RetentionRule struct {
	// The newest this many are kept; absent or 0: any number.
	Count *int `json:"count,omitempty" validate:"omitnil,min=0,max=100000000" example:"1000"`
	// Jobs that finished more than this many ms ago are deleted; absent or
	// 0: however long ago (at most 10 years).
	AgeMs *int64 `json:"age_ms,omitempty" format:"int64" validate:"omitnil,min=0,max=315360000000" example:"604800000"`
} // @name RetentionRule

// jobDefaults is the flow.JobDefaults d asks for: a backoff as an enqueue
// would take it (its delay and cap filled in).
func (d *JobDefaults) jobDefaults() flow.JobDefaults {
	if d == nil {
		return flow.JobDefaults{}
	}
	out := flow.JobDefaults{MaxAttempts: d.MaxAttempts, Priority: d.Priority, TimeoutMS: d.TimeoutMs, ExpiresInMS: d.ExpiresInMs}
	if b := d.Backoff; b != nil {
		nb := lease.NewBackoff(b.Type == "exponential", b.delay(), maybeMS(b.MaxDelayMs))
		out.Backoff = &flow.Backoff{Exponential: nb.Exponential, DelayMS: nb.Delay.Milliseconds(), MaxDelayMS: nb.MaxDelay.Milliseconds()}
	}
	return out
}

// jobDefaultsOf is the API view of d; nil for none.
func jobDefaultsOf(d flow.JobDefaults) *JobDefaults {
	if d.None() {
		return nil
	}
	out := &JobDefaults{MaxAttempts: d.MaxAttempts, Priority: d.Priority, TimeoutMs: d.TimeoutMS, ExpiresInMs: d.ExpiresInMS}
	if b := d.Backoff; b != nil {
		kind := "fixed"
		if b.Exponential {
			kind = "exponential"
		}
		out.Backoff = &BackoffRequest{Type: kind, DelayMs: &b.DelayMS, MaxDelayMs: &b.MaxDelayMS}
	}
	return out
}

// retention is the flow.Retention r asks for.
func (r *Retention) retention() flow.Retention {
	if r == nil {
		return flow.Retention{}
	}
	return flow.Retention{Completed: r.Completed.keep(), Dead: r.Dead.keep(), Cancelled: r.Cancelled.keep()}
}

// keep is the flow.Keep r asks for; nil for none.
func (r *RetentionRule) keep() *flow.Keep {
	if r == nil {
		return nil
	}
	k := &flow.Keep{}
	if r.Count != nil {
		k.Count = *r.Count
	}
	if r.AgeMs != nil {
		k.AgeMS = *r.AgeMs
	}
	return k
}

// retentionOf is the API view of r: the states it names; nil for none.
func retentionOf(r flow.Retention) *Retention {
	if r.None() {
		return nil
	}
	return &Retention{Completed: ruleOf(r.Completed), Dead: ruleOf(r.Dead), Cancelled: ruleOf(r.Cancelled)}
}

// ruleOf is the API view of k, its limits of 0 left out.
func ruleOf(k *flow.Keep) *RetentionRule {
	if k == nil {
		return nil
	}
	r := &RetentionRule{}
	if k.Count > 0 {
		r.Count = &k.Count
	}
	if k.AgeMS > 0 {
		r.AgeMs = &k.AgeMS
	}
	return r
}

// maybeMS is v ms as a duration, nil for nil.
func maybeMS(v *int64) *time.Duration {
	if v == nil {
		return nil
	}
	d := ms(*v)
	return &d
}
