package lease

import (
	"context"
	"time"

	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/lua"
)

// ClaimParams says how many jobs to claim and for how long.
type ClaimParams struct {
	Count  int           // 0: 1
	Lease  time.Duration // 0: DefaultLease
	Worker string        // optional, recorded on the job
	// MaxActive, when not 0, caps the queue's active jobs, everyone's: a
	// push delivery's claim (internal/push) takes no more than leave at
	// most MaxActive active.
	MaxActive int
}

func (p ClaimParams) args() lua.ClaimArgs {
	if p.Count == 0 {
		p.Count = 1
	}
	if p.Lease == 0 {
		p.Lease = DefaultLease
	}
	return lua.ClaimArgs{Count: p.Count, LeaseMS: millis(p.Lease), Worker: p.Worker, MaxActive: p.MaxActive}
}

// Claimed is the outcome of a claim: the jobs, each with its Token, and how
// long until the earliest delayed job comes due, on the server's clock (-1
// when none is delayed), so that a long-polling claimer knows when to look
// again. When a flow control limit cut the claim short, Held names it
// (flow.HeldConcurrency, ...) and RetryAfter says when a claim could go
// on; else Held is "" and RetryAfter -1.
type Claimed struct {
	Jobs       []job.Job
	DueIn      time.Duration
	Held       string
	RetryAfter time.Duration
}

// Claim leases up to p.Count jobs of queue, priority first and FIFO within a
// priority, after moving due delayed jobs to pending. A paused or empty
// queue gives no jobs.
func (s *Service) Claim(ctx context.Context, queue string, p ClaimParams) (Claimed, error) {
	reply, err := s.run(ctx, queue, p.args())
	if err != nil {
		s.giveBack(ctx, queue, reply, err)
		return Claimed{}, err
	}
	items, err := replyList(reply, -2)
	if err != nil {
		return Claimed{}, err
	}
	jobs, err := job.ParseList(queue, items[1])
	if err != nil {
		return Claimed{}, err
	}
	s.observeStarts(queue, jobs)
	dueIn, _ := items[0].(int64)
	c := Claimed{Jobs: jobs, DueIn: time.Duration(dueIn) * time.Millisecond, RetryAfter: -1}
	if len(items) == 4 { // under flow control (lua/claim.lua)
		c.Held, _ = items[3].(string)
		if retry, _ := items[2].(int64); c.Held != "" {
			c.RetryAfter = time.Duration(retry) * time.Millisecond
		}
	}
	return c, nil
}
