package client

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// JobUpdate is what UpdateJob changes of a job that has not started: a
// field left zero (nil) keeps what the job has; at least one is set, and
// not both Delay and RunAt.
type JobUpdate struct {
	// Payload replaces the job's payload, sent as Enqueue sends one; nil
	// keeps it. To make it JSON null, pass json.RawMessage("null").
	Payload any
	// Priority, when not nil, is the job's new priority, 0 to 9: a pending
	// job takes its place among the jobs of that priority by the time it
	// was enqueued (BullMQ's changePriority).
	Priority *int
	// Delay, when not nil, makes the job run this long after now (the
	// service's clock): a delay to come makes a pending job delayed, 0
	// makes a delayed job pending now (BullMQ's changeDelay). For a waiting
	// job, it is when it runs once its dependencies have ended.
	Delay *time.Duration
	// RunAt, when not zero, makes the job run at that time instead, as
	// Delay does (a time passed is a Delay of 0).
	RunAt time.Time
}

// updateBody is a JobUpdate as the API reads it.
type updateBody struct {
	Payload  json.RawMessage `json:"payload,omitempty"`
	Priority *int            `json:"priority,omitempty"`
	DelayMs  *int64          `json:"delay_ms,omitempty"`
	RunAt    string          `json:"run_at,omitempty"`
}

func (u JobUpdate) body() (updateBody, error) {
	b := updateBody{Priority: u.Priority, RunAt: timeText(u.RunAt)}
	if u.Payload != nil {
		payload, err := payloadOf(u.Payload)
		if err != nil {
			return updateBody{}, err
		}
		b.Payload = payload
	}
	if u.Delay != nil {
		ms := millis(*u.Delay)
		b.DelayMs = &ms
	}
	return b, nil
}

// timeText is t as the API reads a time, RFC 3339 in UTC to the
// millisecond; "" for the zero time.
func timeText(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// UpdateJob changes a pending, delayed or waiting job of queue in one
// atomic step (PATCH /queues/{queue}/jobs/{id}, an admin key's) and
// returns it as changed. An active or finished job is ErrState and is not
// changed; no such job, ErrGone; an update that sets nothing, or both
// Delay and RunAt, ErrInvalid.
func (c *Client) UpdateJob(ctx context.Context, queue, id string, u JobUpdate) (Job, error) {
	body, err := u.body()
	if err != nil {
		return Job{}, err
	}
	var job Job
	_, err = c.do(ctx, http.MethodPatch, jobPath(queue, id, ""), body, &job)
	return job, err
}
