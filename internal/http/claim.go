package http

import (
	"net/http"
	"time"

	"github.com/echo-mq/echo_mq/internal/flow"
	"github.com/echo-mq/echo_mq/internal/lease"
	"github.com/echo-mq/echo_mq/internal/rediserr"
)

// ClaimRequest asks for jobs, waiting up to wait_ms for one to come.
//
// Defaults are said in the descriptions, not as "default": openapi-typescript
// makes a property with a default required in its types.
type ClaimRequest struct {
	// How long each claimed job is leased, in ms; default 30000.
	LeaseMs *int64 `json:"lease_ms,omitempty" format:"int64" validate:"omitnil,min=100,max=86400000" example:"30000"`
	// How many jobs to claim at most; default 1.
	Count *int `json:"count,omitempty" validate:"omitnil,min=1,max=100" example:"1"`
	// How long to wait for a job when none is pending, in ms; default 0
	// (answer at once).
	WaitMs int64 `json:"wait_ms,omitempty" format:"int64" validate:"min=0,max=30000" example:"10000"`
	// The worker's name, kept on each claimed job (for operators).
	Worker string `json:"worker,omitempty" validate:"max=200" example:"worker-1"`
} // @name ClaimRequest

// ClaimResponse is the jobs a claim leased, each with its token, and, when
// a flow control limit of the queue let fewer than count start, which
// limit and when a claim could start one.
type ClaimResponse struct {
	Jobs []Job `json:"jobs" binding:"required"`
	// In how many ms a claim could start a job, when a limit held this one
	// back (a long poll waits for it by itself). Absent when none did.
	RetryAfterMs int64 `json:"retry_after_ms,omitempty" format:"int64" example:"250"`
	// The limit that held the claim back ("paused": the queue is paused
	// and jobs wait behind the pause). Absent when none did.
	HeldBy string `json:"held_by,omitempty" enums:"paused,concurrency,rate_limit,group_concurrency,group_rate_limit,group_order,group_paused" example:"rate_limit"`
} // @name ClaimResponse

// handleClaim godoc
//
//	@Summary		Claim jobs
//	@Description	Leases up to count jobs (priority first, FIFO within a priority), each with its token. Due delayed jobs are moved to pending first. With wait_ms, a claim that finds nothing waits (long poll) and answers as soon as a job comes, or with an empty list when wait_ms passes. A paused queue answers an empty list. Under the queue's flow control settings a claim takes turns over the groups and answers only the jobs the limits let start; when that is fewer than count it says which limit held it back (held_by) and when a claim could start one (retry_after_ms), and a long poll waits until then or until a slot frees. A service replica lets at most EMQ_MAX_WAITERS claims wait at once (503 EMQBUSY past it) and, when API keys are configured, at most EMQ_MAX_WAITERS_PER_KEY of them of one key (429 EMQBUSY past it); a claim without wait_ms is never refused for either.
//	@ID				claimJobs
//	@Tags			worker
//	@Security		BearerAuth
//	@Security		Signature
//	@Accept			json
//	@Param			queue	path	string			true	"queue name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Param			claim	body	ClaimRequest	false	"lease, count, wait"
//	@Produce		application/problem+json
//	@Failure		400	{object}	Problem	"EMQINVALID"
//	@Failure		403	{object}	Problem	"EMQFORBIDDEN: the key's role may not do this"
//	@Failure		429	{object}	Problem	"EMQBUSY: this key has its share of waiting claims (EMQ_MAX_WAITERS_PER_KEY)"
//	@Header		429	{integer}	Retry-After	"seconds to wait before trying again"
//	@Failure		503	{object}	Problem	"EMQUNAVAILABLE, or EMQBUSY: too many claims are waiting (EMQ_MAX_WAITERS)"
//	@Header		503	{integer}	Retry-After	"seconds to wait before trying again"
//	@Produce		json
//	@Success		200	{object}	ClaimResponse	"the claimed jobs, with their tokens; empty when none"
//	@Router			/queues/{queue}/claim [post]
func (s *server) handleClaim(w http.ResponseWriter, r *http.Request) {
	queue, err := queueParam(r)
	var req ClaimRequest
	if err == nil {
		err = s.decode(r, &req)
	}
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	p := lease.ClaimParams{Worker: req.Worker}
	if req.Count != nil {
		p.Count = *req.Count
	}
	if req.LeaseMs != nil {
		p.Lease = ms(*req.LeaseMs)
	}
	if req.WaitMs > 0 {
		release, err := s.holdWaiter(r)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		defer release()
	}
	claimed, err := s.claimWaiting(r, queue, p, ms(req.WaitMs))
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	s.transition(queue, "claimed", len(claimed.Jobs))
	if claimed.Held != "" && s.cfg.Metrics != nil {
		s.cfg.Metrics.ClaimHeld(queue, claimed.Held)
	}
	writeClaimed(w, claimed)
}

// errorRecheck is how long a long poll waits to look again when Redis,
// back from an outage, still refuses (go-redis retries a refused pool about
// once a second).
const errorRecheck = 250 * time.Millisecond

// claimWaiting claims, and when nothing is there waits up to wait for the
// wake hub to send it to claim again: a wake from the queue's wake channel
// (a job came, or a slot freed), or the end of what the hub knew (a delayed
// job comes due, a flow control limit lets a claim on, or the hub's trust
// in its knowledge runs out, see wake.TrustFor). A poll that comes to a
// queue the hub knows to be empty waits without a claim, and one whose
// wait passes answers without one. Waiting holds no Redis connection. It
// answers empty when wait passes, the client goes away or the service
// stops.
func (s *server) claimWaiting(r *http.Request, queue string, p lease.ClaimParams, wait time.Duration) (lease.Claimed, error) {
	deadline := time.Now().Add(wait)
	waiter := s.waiters.Poll(queue)
	defer waiter.Done()
	// A claim that will not wait looks at the queue whatever the hub
	// knows: the wake of a job enqueued a moment ago may still be on
	// its way.
	look, recheck := wait <= 0, time.Time{}
	if !look {
		look, recheck = waiter.Look()
	}
	for slept := false; ; look, recheck = waiter.Look() {
		if look {
			claimed, err := s.leases.Claim(r.Context(), queue, p)
			if err != nil && slept && rediserr.Unavailable(err) && time.Now().Add(errorRecheck).Before(deadline) {
				// The poll was waiting when Redis went away: it waits on
				// until Redis is back, rather than fail.
				if !s.sleep(r, nil, time.Now().Add(errorRecheck)) {
					return lease.Claimed{}, nil
				}
				continue
			}
			if err != nil {
				return claimed, err
			}
			waiter.Found(len(claimed.Jobs) >= max(p.Count, 1), holds(claimed))
			if len(claimed.Jobs) > 0 || !time.Now().Before(deadline) {
				return claimed, nil
			}
			continue // asleep at the next Look, or claims again for a wake that came meanwhile
		}
		if !time.Now().Before(deadline) {
			return lease.Claimed{}, nil
		}
		wakeAt := deadline
		if !recheck.IsZero() && recheck.Before(deadline) {
			wakeAt = recheck
		}
		if !s.sleep(r, waiter.C, wakeAt) {
			return lease.Claimed{}, nil
		}
		slept = true
	}
}

// holds is how long a claim's finding nothing (more) stays true at most as
// time goes: until the earliest delayed job comes due, or a flow control
// limit lets a claim on; -1 when neither is known. The queue's pause holds
// until its resume, which wakes the waiters. (A paused group is not
// trusted so: other groups held back with it wake a poll only while it
// claims, lua/flow.lua's wake_held.)
func holds(c lease.Claimed) time.Duration {
	retry := c.RetryAfter
	if c.Held == flow.HeldPaused {
		retry = -1
	}
	d := time.Duration(-1)
	for _, in := range []time.Duration{c.DueIn, retry} {
		if in >= 0 && (d < 0 || in < d) {
			d = in
		}
	}
	return d
}

// sleep waits until woken (nil: never) or wakeAt comes, and reports false
// instead when the client goes away or the service stops.
func (s *server) sleep(r *http.Request, woken <-chan struct{}, wakeAt time.Time) bool {
	timer := time.NewTimer(time.Until(wakeAt))
	defer timer.Stop()
	select {
	case <-woken:
		return true
	case <-timer.C:
		return true
	case <-r.Context().Done():
		return false
	case <-s.cfg.Stopping:
		return false
	}
}
