// Package batch is echo_mq's batches (docs/design.md#batches-and-dependencies):
// a group of jobs enqueued together whose end is known, and one callback
// job enqueued when every job of it has ended. The Service creates, fills,
// commits and reads batches through the enqueue and batch scripts; the
// counting is done by the scripts that end jobs (lua/batches.lua), and
// every replica runs a Dispatcher that enqueues the callbacks owed.
package batch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/lease"
	"github.com/echo-mq/echo_mq/lua"
)

// The states of a batch.
const (
	StateOpen    = "open"    // jobs may be added; never done before its commit
	StateRunning = "running" // committed, some job has not ended
	StateDone    = "done"    // every job ended
)

// When a batch's callback is enqueued.
const (
	WhenComplete = "complete" // once every job ended, however
	WhenSuccess  = "success"  // only when every job completed
)

// CallbackPrefix starts a callback job's id: "batch:<batch id>".
const CallbackPrefix = "batch:"

// Callback is the job a batch enqueues once it is done: on Queue ("": the
// batch's), with Payload (nil: none) beside the batch's summary. When ""
// is a batch created without one: it enqueues nothing.
type Callback struct {
	Queue   string
	Payload json.RawMessage
	When    string // WhenComplete, WhenSuccess, or "" for none
}

// Batch is one batch as it is now.
type Batch struct {
	ID, Queue string
	State     string
	Total     int64
	// Counts are its jobs by state: pending, active, delayed and waiting
	// read from the jobs now; completed, dead and cancelled counted as
	// they ended.
	Counts        map[string]int64
	Success       bool // done, and every job completed
	Callback      Callback
	CallbackJobID string // "" until its callback is enqueued
	CreatedAt     time.Time
	FinishedAt    time.Time
}

// ErrNotFound means there is no such batch (or it expired): a
// job.ErrGone, so that the API answers it 404 EMQGONE. Service's errors
// name the batch (notFound); errors.Is(err, ErrNotFound) holds for them.
var ErrNotFound error = &job.GoneError{What: "batch"}

// notFound is ErrNotFound naming batch id of queue.
func notFound(queue, id string) error {
	return &job.GoneError{What: "batch", Queue: queue, Name: id}
}

// Enqueuer enqueues jobs, and jobs into a batch, and admits a queue to
// the registry of queues (*lease.Service).
type Enqueuer interface {
	Enqueue(ctx context.Context, queue string, jobs []lease.NewJob) ([]lease.Enqueued, error)
	EnqueueBatch(ctx context.Context, queue string, jobs []lease.NewJob, join lua.BatchJoin) ([]lease.Enqueued, lease.BatchReply, error)
	Admit(ctx context.Context, queue string) (bool, error)
	Withdraw(ctx context.Context, queue string) error
}

// Service manages the batches of every queue under one key prefix.
type Service struct {
	rdb     redis.UniversalClient
	prefix  string
	leases  Enqueuer
	scripts *lua.Runner
}

// NewService returns a Service for the keys under prefix; its jobs are
// enqueued through leases.
func NewService(rdb redis.UniversalClient, prefix string, leases Enqueuer) *Service {
	return &Service{rdb: rdb, prefix: prefix, leases: leases, scripts: lua.NewRunner(rdb)}
}

func (s *Service) queue(name string) keyspace.Queue { return keyspace.NewQueue(s.prefix, name) }

// Create makes batch id of queue with jobs (each gets batch_id), open for
// more when open, and returns it with the jobs as enqueued. A batch that
// exists already is returned as it is, created false, and no job is added.
// A queue it names that is new (the batch's, its callback's) must have a
// place in the registry (keyspace.ErrQuota).
func (s *Service) Create(ctx context.Context, queue, id string, jobs []lease.NewJob, open bool, cb Callback) (Batch, []lease.Enqueued, bool, error) {
	join := lua.BatchJoin{ID: id, New: true, Open: open,
		Callback: lua.BatchCallback{Queue: cb.Queue, Payload: string(cb.Payload), When: cb.When}}
	added := false
	if cb.Queue != "" && cb.Queue != queue {
		// Its callback's queue takes its place now, not when the
		// callback is due: then it could only be retried.
		var err error
		if added, err = s.leases.Admit(ctx, cb.Queue); err != nil {
			return Batch{}, nil, false, err
		}
	}
	out, reply, err := s.leases.EnqueueBatch(ctx, queue, jobs, join)
	if err != nil {
		if added { // a refused create leaves nothing behind
			_ = s.leases.Withdraw(context.WithoutCancel(ctx), cb.Queue)
		}
		return Batch{}, nil, false, err
	}
	// The dispatchers look at the queue from now on. A callback owed
	// before this (a job ended at once) waits in the queue's batches_due
	// until they do; a create answered with an error is retried, and the
	// retry (answered with the batch) adds the queue too.
	if err := s.rdb.SAdd(ctx, keyspace.BatchesKey(s.prefix), queue).Err(); err != nil {
		return Batch{}, nil, false, err
	}
	b, err := parse(queue, reply.Fields)
	if err == nil {
		b, err = s.withLive(ctx, b)
	}
	if err != nil {
		return Batch{}, nil, false, err
	}
	return b, out, !reply.Existed, nil
}

// Add enqueues jobs into open batch id of queue. Its answer reads no job
// (an open batch is filled by many adds, and each would read them all):
// its Counts hold the ended jobs only; Get reads the others. Errors:
// ErrNotFound; job.ErrState when it is committed.
func (s *Service) Add(ctx context.Context, queue, id string, jobs []lease.NewJob) (Batch, []lease.Enqueued, error) {
	out, reply, err := s.leases.EnqueueBatch(ctx, queue, jobs, lua.BatchJoin{ID: id})
	if err != nil {
		return Batch{}, nil, notFoundOf(err, queue, id)
	}
	b, err := parse(queue, reply.Fields)
	return b, out, err
}

// Commit closes open batch id of queue: it is done once every job of it
// has ended (at once, when every one has). A committed batch is answered
// as it is. Errors: ErrNotFound.
func (s *Service) Commit(ctx context.Context, queue, id string) (Batch, error) {
	reply, err := s.scripts.Reply(ctx, lua.BatchCommitArgs{ID: id}.Call(s.queue(queue)))
	if err != nil {
		return Batch{}, notFoundOf(err, queue, id)
	}
	fields, _ := reply.([]any)
	b, err := parse(queue, fields)
	if err != nil {
		return Batch{}, err
	}
	return s.withLive(ctx, b)
}

// notFoundOf is err, or ErrNotFound naming batch id of queue for a
// script's EMQGONE.
func notFoundOf(err error, queue, id string) error {
	if errors.Is(err, job.ErrGone) {
		return notFound(queue, id)
	}
	return err
}

// countsStep is how many job states Get reads per round trip.
const countsStep = 1000

// Get reads batch id of queue, with its live counts: the jobs not ended
// are read (a pipelined HGET of each one's state, countsStep at a time),
// so a read costs O(total) small reads, none of them a script. Create and
// Commit answer the same.
func (s *Service) Get(ctx context.Context, queue, id string) (Batch, error) {
	q := s.queue(queue)
	row, err := s.rdb.HGetAll(ctx, q.Batch(id)).Result()
	if err != nil {
		return Batch{}, err
	}
	if row["state"] == "" {
		return Batch{}, notFound(queue, id)
	}
	b, err := fromHash(queue, id, row)
	if err != nil {
		return Batch{}, err
	}
	return s.withLive(ctx, b)
}

// withLive adds to b the counts of its jobs that have not ended, read
// now; a done batch has none.
func (s *Service) withLive(ctx context.Context, b Batch) (Batch, error) {
	if b.State == StateDone {
		return b, nil
	}
	q := s.queue(b.Queue)
	var cursor uint64
	for {
		ids, next, err := s.rdb.SScan(ctx, q.BatchJobs(b.ID), cursor, "", countsStep).Result()
		if err != nil {
			return Batch{}, err
		}
		if err := s.countLive(ctx, q, b.ID, ids, b.Counts); err != nil {
			return Batch{}, err
		}
		if cursor = next; cursor == 0 {
			return b, nil
		}
	}
}

// countLive adds the jobs of ids that are batch batchID's and have not
// ended to counts, by state.
func (s *Service) countLive(ctx context.Context, q keyspace.Queue, batchID string, ids []string, counts map[string]int64) error {
	if len(ids) == 0 {
		return nil
	}
	cmds := make([]*redis.SliceCmd, len(ids))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.HMGet(ctx, q.Job(id), "state", "batch_id")
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, c := range cmds {
		// A job of the batch that was removed, and an id enqueued again
		// outside it, is not the batch's.
		v := c.Val()
		state, _ := v[0].(string)
		if in, _ := v[1].(string); in != batchID {
			continue
		}
		switch state {
		case job.StatePending, job.StateActive, job.StateDelayed, job.StateWaiting:
			counts[state]++
		}
	}
	return nil
}

// batchFields are lua/batches.lua's batches.FIELDS, in order, after the id.
var batchFields = []string{"state", "total", "completed", "dead", "cancelled", "success", "created_at",
	"finished_at", "callback_queue", "callback_payload", "callback_when", "callback_job_id"}

// parse reads a batch from a script's batch reply (lua/batches.lua's batches.reply): its id, then
// batchFields' values (nil where absent).
func parse(queue string, reply []any) (Batch, error) {
	if len(reply) != 1+len(batchFields) {
		return Batch{}, fmt.Errorf("batch reply: %d items, want %d", len(reply), 1+len(batchFields))
	}
	row := make(map[string]string, len(batchFields))
	for i, name := range batchFields {
		if v, ok := reply[i+1].(string); ok {
			row[name] = v
		}
	}
	id, _ := reply[0].(string)
	return fromHash(queue, id, row)
}

// fromHash reads a batch from its hash's fields.
func fromHash(queue, id string, row map[string]string) (Batch, error) {
	b := Batch{ID: id, Queue: queue, State: row["state"], Success: row["success"] == "1",
		CallbackJobID: row["callback_job_id"],
		Callback:      Callback{Queue: row["callback_queue"], When: row["callback_when"]},
		Counts: map[string]int64{job.StatePending: 0, job.StateActive: 0, job.StateDelayed: 0, job.StateWaiting: 0,
			job.StateCompleted: 0, job.StateDead: 0, job.StateCancelled: 0}}
	if p := row["callback_payload"]; p != "" {
		b.Callback.Payload = json.RawMessage(p)
	}
	var err error
	number := func(name string) int64 {
		n, e := strconv.ParseInt(row[name], 10, 64)
		if e != nil && row[name] != "" {
			err = fmt.Errorf("batch %s: field %s: %w", id, name, e)
		}
		return n
	}
	b.Total = number("total")
	for _, state := range []string{job.StateCompleted, job.StateDead, job.StateCancelled} {
		b.Counts[state] = number(state)
	}
	if ms := number("created_at"); ms != 0 {
		b.CreatedAt = job.Millis(ms)
	}
	if ms := number("finished_at"); ms != 0 {
		b.FinishedAt = job.Millis(ms)
	}
	return b, err
}
