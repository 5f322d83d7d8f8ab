// Package admin is echo_mq's operator plane: reading and managing jobs and
// queues outside a worker's lease. This first part reads and removes jobs;
// the queue verbs (pause, drain, listings) join it.
package admin

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/lua"
)

// Service runs the operator plane for every queue under one key prefix.
type Service struct {
	rdb    redis.UniversalClient
	prefix string
}

// NewService returns a Service for the keys under prefix.
func NewService(rdb redis.UniversalClient, prefix string) *Service {
	return &Service{rdb: rdb, prefix: prefix}
}

// Get returns job id of queue, or job.ErrGone.
func (s *Service) Get(ctx context.Context, queue, id string) (job.Job, error) {
	row, err := s.rdb.HGetAll(ctx, keyspace.NewQueue(s.prefix, queue).Job(id)).Result()
	if err != nil {
		return job.Job{}, err
	}
	if len(row) == 0 {
		return job.Job{}, job.ErrGone
	}
	return job.FromHash(queue, id, row)
}

// Remove deletes job id of queue. An active job is removed only with force;
// its holder's next call is then answered job.ErrGone. Errors: job.ErrGone,
// job.ErrState (active without force).
func (s *Service) Remove(ctx context.Context, queue, id string, force bool) error {
	q := keyspace.NewQueue(s.prefix, queue)
	force01 := "0"
	if force {
		force01 = "1"
	}
	err := lua.Remove.Run(ctx, s.rdb, q.ScriptKeysWithJob(id), q.ScriptArgs(id, force01)...).Err()
	return job.ScriptError(err)
}
