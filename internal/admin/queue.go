package admin

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/rediserr"
	"github.com/echo-mq/echo_mq/lua"
)

// States lists a job's states in the order counts are shown.
var States = []string{
	job.StatePending, job.StateActive, job.StateDelayed, job.StateWaiting,
	job.StateCompleted, job.StateDead, job.StateCancelled,
}

// StepSize bounds the jobs one drain or obliterate step deletes, so that no
// single Redis call blocks the server for long.
const StepSize = 1000

// QueueInfo is a queue's name, paused flag and how many jobs it holds in
// each state.
type QueueInfo struct {
	Name   string
	Paused bool
	Counts map[string]int64
	Push   bool // it has a push target (internal/push)
}

// Queue reads one queue's counts in O(1): one ZCARD per state. A queue
// nobody used is all zeros.
func (s *Service) Queue(ctx context.Context, queue string) (QueueInfo, error) {
	infos, err := s.queueInfos(ctx, []string{queue})
	if err != nil {
		return QueueInfo{}, err
	}
	return infos[0], nil
}

// Queues reads a page of up to limit known queues whose names start with
// prefix ("" for all), in name order, after cursor ("" for the first
// page), and the cursor of the next page: "" on the last. The cursor is
// the page's last name; one that no queue could have is refused with
// ErrCursor. A page costs O(log N + limit), however many queues there are.
func (s *Service) Queues(ctx context.Context, prefix, cursor string, limit int) ([]QueueInfo, string, error) {
	if cursor != "" && !keyspace.ValidQueueName(cursor) {
		return nil, "", fmt.Errorf("%w: %q", ErrCursor, cursor)
	}
	names, more, err := s.queues.Page(ctx, prefix, cursor, limit)
	if err != nil {
		return nil, "", err
	}
	infos, err := s.queueInfos(ctx, names)
	if err != nil || !more {
		return infos, "", err
	}
	return infos, names[len(names)-1], nil
}

// FirstQueues reads up to n known queues with their counts, the first by
// name, page by page (fewer when there are fewer). Metrics use it to
// bound a scrape's cost.
func (s *Service) FirstQueues(ctx context.Context, n int) ([]QueueInfo, error) {
	var out []QueueInfo
	cursor := ""
	for len(out) < n {
		infos, next, err := s.Queues(ctx, "", cursor, min(n-len(out), 1000))
		if err != nil {
			return nil, err
		}
		out = append(out, infos...)
		if next == "" {
			break
		}
		cursor = next
	}
	return out, nil
}

// queueInfos reads the counts of queues in one pipeline.
func (s *Service) queueInfos(ctx context.Context, names []string) ([]QueueInfo, error) {
	type pending struct {
		paused *redis.StringCmd
		push   *redis.IntCmd
		counts []*redis.IntCmd
	}
	cmds := make([]pending, len(names))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, name := range names {
			q := keyspace.NewQueue(s.prefix, name)
			cmds[i].paused = p.HGet(ctx, q.Meta(), "paused")
			cmds[i].push = p.Exists(ctx, q.Push())
			for _, state := range States {
				cmds[i].counts = append(cmds[i].counts, p.ZCard(ctx, q.Set(state)))
			}
		}
		return nil
	})
	if err != nil && err != redis.Nil {
		return nil, err
	}
	infos := make([]QueueInfo, len(names))
	for i, name := range names {
		infos[i] = QueueInfo{Name: name, Paused: cmds[i].paused.Val() == "1", Push: cmds[i].push.Val() == 1,
			Counts: map[string]int64{}}
		for j, state := range States {
			infos[i].Counts[state] = cmds[i].counts[j].Val()
		}
	}
	return infos, nil
}

// SetPaused pauses (or resumes) a queue's claims and answers its info.
// Active jobs go on: they can still extend, complete and fail. A queue
// that is not known yet must have a place (keyspace.ErrQuota).
func (s *Service) SetPaused(ctx context.Context, queue string, paused bool, by Actor) (QueueInfo, error) {
	added, err := s.queues.Admit(ctx, queue)
	if err != nil {
		return QueueInfo{}, err
	}
	if _, err := s.run(ctx, queue, lua.PauseArgs{Paused: paused, By: by}); err != nil {
		s.withdrawIf(ctx, queue, added, err)
		return QueueInfo{}, err
	}
	return s.Queue(ctx, queue)
}

// withdrawIf gives back the place in the registry Admit added queue for
// (added) when the write it was for failed (err), so that a refused
// request leaves nothing behind.
func (s *Service) withdrawIf(ctx context.Context, queue string, added bool, err error) {
	if added && err != nil {
		_ = s.queues.Withdraw(context.WithoutCancel(ctx), queue)
	}
}

// Drain removes a queue's pending and delayed jobs, in bounded steps, and
// answers how many it removed. Active jobs are left to finish. Once begun it
// runs to the end even if the caller goes away, so that no drain stops half
// done without its event.
func (s *Service) Drain(ctx context.Context, queue string, by Actor) (int, error) {
	ctx = context.WithoutCancel(ctx)
	total := 0
	for {
		reply, err := s.run(ctx, queue, lua.DrainArgs{Limit: StepSize, RemovedBefore: total, By: by})
		if err != nil {
			return total, err
		}
		n, _ := reply.(int64)
		total += int(n)
		if n < StepSize {
			return total, nil
		}
	}
}

// Obliterate deletes a queue and every key of it, in bounded steps, and
// answers how many jobs it deleted. With jobs active it refuses with
// job.ErrState unless force; forced, the holders' next calls are answered
// job.ErrGone. Once begun it runs to the end even if the caller goes away,
// and jobs claimed between its steps are deleted too.
func (s *Service) Obliterate(ctx context.Context, queue string, force bool) (int, error) {
	ctx = context.WithoutCancel(ctx)
	q := keyspace.NewQueue(s.prefix, queue)
	total := 0
	for {
		reply, err := s.scripts.Run(ctx, lua.ObliterateArgs{Limit: StepSize, Force: force}.Call(q)).Int64Slice()
		if err != nil {
			return total, rediserr.Script(err)
		}
		total += int(reply[1])
		if reply[0] == 1 {
			break
		}
		force = true // once deleting has begun, jobs claimed meanwhile go too
	}
	if err := s.queues.Forget(ctx, queue); err != nil {
		return total, err
	}
	// Its batches are gone: the dispatchers need not look at it (a batch
	// made meanwhile adds it again, after its script).
	if err := s.rdb.SRem(ctx, keyspace.BatchesKey(s.prefix), queue).Err(); err != nil {
		return total, err
	}
	// An enqueue that raced the last step made the queue anew: keep it known.
	if exists, err := s.rdb.Exists(ctx, q.Meta()).Result(); err != nil || exists == 0 {
		return total, err
	}
	return total, s.queues.Remember(ctx, queue, true)
}
