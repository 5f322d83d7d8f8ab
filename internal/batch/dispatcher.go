package batch

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/lease"
	"github.com/echo-mq/echo_mq/lua"
)

// Defaults of a Dispatcher.
const (
	// DefaultInterval is how often a dispatcher looks for owed callbacks:
	// a callback is enqueued within about this long of its batch's end.
	DefaultInterval = 250 * time.Millisecond
	// DefaultHold is how long a dispatcher has a batch it took before
	// another may take it (the first one stopped between the two steps).
	DefaultHold = 30 * time.Second
	// takeStep is how many owed callbacks one take reads.
	takeStep = 100
)

// DispatcherConfig configures a Dispatcher; zero fields take the defaults.
type DispatcherConfig struct {
	Interval time.Duration // DefaultInterval
	Hold     time.Duration // DefaultHold
	// Encode is a done batch's callback payload: {"batch": ..., "payload":
	// ...} in the API's form (internal/http).
	Encode func(Batch) (json.RawMessage, error)
	Logger *slog.Logger
	// OnCallback, when set, is told of each callback job enqueued (for
	// metrics), with its queue.
	OnCallback func(queue string)
}

// Dispatcher enqueues the callbacks that done batches owe. Every service
// replica runs one. A callback is two steps: the take (lua/batch_take.lua)
// holds the batch for Hold, the enqueue of job "batch:<id>" on the
// callback's queue (any queue, on any Cluster node) is idempotent on its
// id, and the ack (lua/batch_ack.lua) ends the debt. A replica that stops
// between them leaves the batch to be taken again once the hold lapses,
// and the second enqueue finds the first job: one callback job, whatever
// stops when.
type Dispatcher struct {
	svc    *Service
	config DispatcherConfig
}

// NewDispatcher returns a Dispatcher of svc's batches.
func (s *Service) NewDispatcher(config DispatcherConfig) *Dispatcher {
	config.Interval = cmp.Or(config.Interval, DefaultInterval)
	config.Hold = cmp.Or(config.Hold, DefaultHold)
	if config.Logger == nil {
		config.Logger = slog.New(slog.DiscardHandler)
	}
	return &Dispatcher{svc: s, config: config}
}

// Run enqueues owed callbacks until ctx ends.
func (d *Dispatcher) Run(ctx context.Context) {
	tick := time.NewTicker(d.config.Interval)
	defer tick.Stop()
	for {
		if _, err := d.Once(ctx); err != nil && ctx.Err() == nil {
			d.config.Logger.Warn("Batch callbacks failed; trying again", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// Once enqueues the callbacks owed now, of every queue of
// <prefix>:batches, and returns how many it enqueued. A create whose
// process stopped after its script but before it listed its queue there
// is listed by the reaper once a callback of the queue is owed (the due
// index: docs/design.md#the-sweep), so no round reads every queue.
func (d *Dispatcher) Once(ctx context.Context) (int, error) {
	key := keyspace.BatchesKey(d.svc.prefix)
	queues, err := d.svc.rdb.SMembers(ctx, key).Result()
	if err != nil || len(queues) == 0 {
		return 0, err
	}
	// One round trip says which queues owe any: most owe none.
	owed := make([]*redis.IntCmd, len(queues))
	if _, err := d.svc.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, q := range queues {
			owed[i] = p.ZCard(ctx, d.svc.queue(q).Base()+"batches_due")
		}
		return nil
	}); err != nil {
		return 0, err
	}
	sent := 0
	var firstErr error
	for i, q := range queues {
		if owed[i].Val() == 0 {
			continue
		}
		n, err := d.queue(ctx, q)
		sent += n
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("queue %s: %w", q, err)
		}
	}
	return sent, firstErr
}

// queue enqueues the callbacks queue's batches owe now.
func (d *Dispatcher) queue(ctx context.Context, queue string) (int, error) {
	reply, err := d.svc.scripts.Reply(ctx, lua.BatchTakeArgs{ForMS: d.config.Hold.Milliseconds(), Limit: takeStep}.Call(d.svc.queue(queue)))
	if err != nil {
		return 0, err
	}
	taken, _ := reply.([]any)
	sent := 0
	for _, item := range taken {
		fields, _ := item.([]any)
		b, err := parse(queue, fields)
		if err != nil {
			return sent, err
		}
		if err := d.callback(ctx, b); err != nil {
			return sent, err
		}
		sent++
	}
	return sent, nil
}

// callback enqueues done batch b's callback job and acknowledges it.
func (d *Dispatcher) callback(ctx context.Context, b Batch) error {
	payload, err := d.config.Encode(b)
	if err != nil {
		return err
	}
	target := cmp.Or(b.Callback.Queue, b.Queue)
	// The other id first: a take after one that chose it and stopped
	// before its ack must find that job, even if batch:<id> is free by now.
	id, other := CallbackPrefix+b.ID, otherCallbackID(b)
	taken, err := d.svc.rdb.Exists(ctx, keyspace.NewQueue(d.svc.prefix, target).Job(other)).Result()
	if err != nil {
		return err
	}
	if taken == 1 {
		id = other
	}
	out, err := d.svc.leases.Enqueue(ctx, target, []lease.NewJob{{ID: id, Payload: payload}})
	if err == nil && !out[0].Created && !callbackOf(out[0].Job, b) {
		// Another batch's callback has the id: one of the same id on
		// another queue calling back to this one, or an earlier batch of
		// this id whose callback job is still kept.
		id = other
		out, err = d.svc.leases.Enqueue(ctx, target, []lease.NewJob{{ID: id, Payload: payload}})
	}
	if err != nil {
		return err
	}
	if out[0].Created && d.config.OnCallback != nil {
		d.config.OnCallback(target)
	}
	if _, err := d.svc.scripts.Reply(ctx, lua.BatchAckArgs{ID: b.ID, CallbackJobID: id}.Call(d.svc.queue(b.Queue))); err != nil {
		return err
	}
	d.config.Logger.Info("Batch done: callback enqueued", "queue", b.Queue, "batch", b.ID,
		"callback_queue", target, "success", b.Success)
	return nil
}

// callbackOf reports whether j is batch b's callback job: its payload's
// batch is b (queue, id and creation time).
func callbackOf(j job.Job, b Batch) bool {
	var p struct {
		Batch struct {
			ID        string    `json:"id"`
			Queue     string    `json:"queue"`
			CreatedAt time.Time `json:"created_at"`
		} `json:"batch"`
	}
	return json.Unmarshal(j.Payload, &p) == nil && p.Batch.ID == b.ID && p.Batch.Queue == b.Queue &&
		p.Batch.CreatedAt.UnixMilli() == b.CreatedAt.UnixMilli()
}

// otherCallbackID is batch b's callback job's id when batch:<id> is
// another batch's: "batch:" and 40 hex digits of a hash of the batch's
// queue, id and creation time, a job id no other batch has.
func otherCallbackID(b Batch) string {
	sum := sha256.Sum256([]byte(b.Queue + "\x00" + b.ID + "\x00" + strconv.FormatInt(b.CreatedAt.UnixMilli(), 10)))
	return CallbackPrefix + hex.EncodeToString(sum[:20])
}
