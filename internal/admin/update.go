package admin

import (
	"context"
	"encoding/json"
	"time"

	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/lua"
)

// Change is what an operator changes of a job that has not started: a nil
// field keeps what the job has. At most one of Delay and RunAt is set.
type Change struct {
	Payload  json.RawMessage // JSON text, validated; "null" for JSON null
	Priority *int
	Delay    *time.Duration // from the Redis server's now
	RunAt    *time.Time     // on the Redis server's clock
}

// Update changes a pending, delayed or waiting job (lua/update.lua): its
// payload, its priority (a pending job keeps its place among the jobs of
// its new priority), when it runs (a run time to come delays it, one that
// has come makes a delayed job pending; a waiting job runs then once its
// dependencies have ended). It answers the job as it is after the change.
// Errors: job.ErrGone, job.ErrState (active or finished).
func (s *Service) Update(ctx context.Context, queue, id string, c Change, by Actor) (job.Job, error) {
	args := lua.UpdateArgs{ID: id, Priority: c.Priority, By: by}
	if c.Payload != nil {
		text := string(c.Payload)
		args.Payload = &text
	}
	if c.Delay != nil {
		ms := c.Delay.Milliseconds()
		args.DelayMS = &ms
	}
	if c.RunAt != nil {
		ms := c.RunAt.UnixMilli()
		args.RunAtMS = &ms
	}
	reply, err := s.run(ctx, queue, args)
	if err != nil {
		return job.Job{}, err
	}
	return job.Parse(queue, reply)
}
