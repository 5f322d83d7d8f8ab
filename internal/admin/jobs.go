package admin

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/cursor"
	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/lua"
)

// Get returns job id of queue, or job.ErrGone. An active job's lease is
// its score in the active set, read with the row (docs/design.md#fencing).
func (s *Service) Get(ctx context.Context, queue, id string) (job.Job, error) {
	q := keyspace.NewQueue(s.prefix, queue)
	var hash *redis.MapStringStringCmd
	var lease *redis.FloatCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		hash = p.HGetAll(ctx, q.Job(id))
		lease = p.ZScore(ctx, q.Set(job.StateActive), id)
		return nil
	})
	row, herr := hash.Result()
	if herr != nil {
		return job.Job{}, herr
	}
	if err != nil && !errors.Is(err, redis.Nil) {
		return job.Job{}, err
	}
	if len(row) == 0 {
		return job.Job{}, fmt.Errorf("%w: %s", job.ErrGone, id)
	}
	j, err := job.FromHash(queue, id, row)
	if ms, lerr := lease.Result(); lerr == nil && j.State == job.StateActive {
		j.LeaseExpiresAt = job.Millis(int64(ms))
	}
	return j, err
}

// Remove deletes job id of queue. An active job is removed only with force;
// its holder's next call is then answered job.ErrGone. Errors: job.ErrGone,
// job.ErrState (active without force).
func (s *Service) Remove(ctx context.Context, queue, id string, force bool, by Actor) error {
	_, err := s.run(ctx, queue, lua.RemoveArgs{ID: id, Force: force, By: by})
	return err
}

// Retry sends a dead or cancelled job back to pending with a fresh attempt
// budget and its stalled count reset. Errors: job.ErrGone, job.ErrState.
func (s *Service) Retry(ctx context.Context, queue, id string, by Actor) (job.Job, error) {
	reply, err := s.run(ctx, queue, lua.RetryArgs{ID: id, By: by})
	if err != nil {
		return job.Job{}, err
	}
	return job.Parse(queue, reply)
}

// Promote makes a delayed job pending now. Errors: job.ErrGone, job.ErrState.
func (s *Service) Promote(ctx context.Context, queue, id string, by Actor) (job.Job, error) {
	reply, err := s.run(ctx, queue, lua.PromoteArgs{ID: id, By: by})
	if err != nil {
		return job.Job{}, err
	}
	return job.Parse(queue, reply)
}

// run runs a script call on queue and turns its error replies into the
// job package's errors.
func (s *Service) run(ctx context.Context, queue string, c interface{ Call(keyspace.Queue) lua.Call }) (any, error) {
	return s.scripts.Reply(ctx, c.Call(keyspace.NewQueue(s.prefix, queue)))
}

// Page is one page of a listing, and the cursor of the next ("": none).
type Page struct {
	Jobs []job.Job
	Next string
}

// newestFirst are the states listed newest first; the others are listed in
// the order they will be claimed (pending), expire (active) or come due
// (delayed).
var newestFirst = map[string]bool{job.StateCompleted: true, job.StateDead: true, job.StateCancelled: true}

// List reads a page of up to limit jobs of queue in state, after the cursor from
// ("" for the first page). Cursors are stable: across pages no job is given
// twice or skipped while other jobs come and go. Errors: ErrCursor.
func (s *Service) List(ctx context.Context, queue, state, from string, limit int) (Page, error) {
	score, after, ok := cursor.Decode(from)
	if !ok {
		return Page{}, fmt.Errorf("%w: %q", ErrCursor, from)
	}
	got, err := s.run(ctx, queue, lua.ListArgs{State: state, Descending: newestFirst[state],
		Score: score, ID: after, Limit: limit})
	if err != nil {
		return Page{}, err
	}
	reply, _ := got.([]any)
	if len(reply) != 3 {
		return Page{}, fmt.Errorf("list: unexpected reply of %d items", len(reply))
	}
	jobs, err := job.ParseList(queue, reply[2])
	if err != nil {
		return Page{}, err
	}
	nextScore, _ := reply[0].(string)
	nextID, _ := reply[1].(string)
	return Page{Jobs: jobs, Next: cursor.Encode(nextScore, nextID)}, nil
}
