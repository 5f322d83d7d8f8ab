package lease

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/lua"
)

// NewJob is one job to enqueue. The service validates it first; Enqueue
// fills the defaults.
type NewJob struct {
	ID          string // empty: a time-ordered UUIDv7 is made
	Payload     json.RawMessage
	Priority    int
	Delay       time.Duration
	RunAt       time.Time // not zero: when it runs, on Redis's clock, instead of Delay (pending once passed)
	MaxAttempts int       // 0: the queue's default, or DefaultMaxAttempts
	Backoff     *Backoff
	Group       string // "": none (docs/design.md#flow-control)
	// Admission and lifetime options (docs/design.md#admission-and-lifetimes);
	// zero values are none.
	Dedupe    Dedupe
	ExpiresIn time.Duration // not started by created_at + ExpiresIn: cancelled, "expired"
	Timeout   time.Duration // the total time one attempt may run
	// Traceparent is the producer's W3C traceparent, kept with the job and
	// handed to its worker (docs/design.md#traces); "": none. The caller
	// checks it (telemetry.ValidTraceparent).
	Traceparent string
	// DependsOn are the ids of the jobs of the queue (or of the same
	// enqueue) it waits for, in state waiting, until each has completed
	// (docs/design.md#batches-and-dependencies); CheckDependencies checks
	// them. RunOnFailure: it runs when one dies or is cancelled, rather
	// than be cancelled.
	DependsOn    []string
	RunOnFailure bool
	// PriorityNamed says the enqueue named Priority, even 0. What an
	// enqueue does not name (Priority 0 not named, MaxAttempts 0, Backoff
	// nil, ExpiresIn 0, Timeout 0) the queue's job defaults fill in, in the
	// script (docs/design.md#job-defaults).
	PriorityNamed bool
}

// Dedupe modes.
const (
	DedupeUntilDone = "until_done"
	DedupeThrottle  = "throttle"
	DedupeDebounce  = "debounce"
)

// Dedupe is a job's dedupe key: while the job holding Key counts under
// Mode, an enqueue with the key answers that job instead of making one.
// Window is the throttle's ttl, or the debounce's longest wait after the
// first enqueue (0: no bound).
type Dedupe struct {
	Key    string // "": none
	Mode   string
	Window time.Duration
}

// Backoff is the retry delay after a failed attempt: Delay, doubled per
// attempt when Exponential, capped at MaxDelay.
type Backoff struct {
	Exponential bool
	Delay       time.Duration
	MaxDelay    time.Duration
}

// DefaultMaxBackoff caps a job's backoff when its enqueue names no cap.
const DefaultMaxBackoff = time.Hour

// DefaultBackoffDelay is the first retry's delay of a backoff that names
// none, and of a job with no backoff (lua/lifecycle.lua's DEFAULT_BACKOFF).
const DefaultBackoffDelay = time.Second

// NewBackoff is the backoff an enqueue asks for, capped at maxDelay, or
// when that is nil at DefaultMaxBackoff, or at delay when it is longer: the
// default cap never shortens a fixed delay.
func NewBackoff(exponential bool, delay time.Duration, maxDelay *time.Duration) *Backoff {
	b := &Backoff{Exponential: exponential, Delay: delay, MaxDelay: max(DefaultMaxBackoff, delay)}
	if maxDelay != nil {
		b.MaxDelay = *maxDelay
	}
	return b
}

// String is the form the fail script reads, "type:delay_ms:max_delay_ms".
func (b Backoff) String() string {
	kind := "fixed"
	if b.Exponential {
		kind = "exponential"
	}
	return fmt.Sprintf("%s:%d:%d", kind, millis(b.Delay), millis(b.MaxDelay))
}

// Enqueued is the outcome of enqueueing one job: the job, and whether it is
// new (false: a job with that id existed and is returned untouched, or a
// job holding its dedupe key answered, updated for a debounce).
type Enqueued struct {
	Job     job.Job
	Created bool
}

// Enqueue adds jobs to queue in one atomic step, in order, and returns them
// in the same order. Enqueueing an id that exists adds nothing and returns
// the existing job.
func (s *Service) Enqueue(ctx context.Context, queue string, jobs []NewJob) ([]Enqueued, error) {
	out, _, err := s.enqueue(ctx, queue, jobs, nil)
	return out, err
}

// BatchReply is what an enqueue into a batch answers of it: the batch's
// fields as lua/batches.lua's batches.reply gives them (package batch reads
// them), and whether the batch existed already (then no job was added).
type BatchReply struct {
	Fields  []any
	Existed bool
}

// EnqueueBatch is Enqueue into the batch join names: a new one, or an open
// one (docs/design.md#batches-and-dependencies). A new batch whose id
// exists is answered as it is, and no job is added.
func (s *Service) EnqueueBatch(ctx context.Context, queue string, jobs []NewJob, join lua.BatchJoin) ([]Enqueued, BatchReply, error) {
	return s.enqueue(ctx, queue, jobs, &join)
}

func (s *Service) enqueue(ctx context.Context, queue string, jobs []NewJob, join *lua.BatchJoin) ([]Enqueued, BatchReply, error) {
	args := lua.EnqueueArgs{Jobs: make([]lua.NewJob, len(jobs)), Batch: join}
	for i, nj := range jobs {
		args.Jobs[i] = ScriptJob(nj)
	}
	// The queue takes its place in the registry before anything of it is
	// written: past the limit a new one is refused (keyspace.ErrQuota); a
	// refused enqueue gives back the place it took.
	added, err := s.queues.Admit(ctx, queue)
	if err != nil {
		return nil, BatchReply{}, err
	}
	args.NewQueue = added // settled a while later: its events compacted (lua/due.lua)
	reply, err := s.run(ctx, queue, args)
	if err != nil {
		if added {
			_ = s.queues.Withdraw(context.WithoutCancel(ctx), queue)
		}
		return nil, BatchReply{}, err
	}
	top, err := replyList(reply, -2)
	if err != nil {
		return nil, BatchReply{}, err
	}
	var batch BatchReply
	if join != nil {
		if len(top) < 3 {
			return nil, BatchReply{}, fmt.Errorf("enqueue reply: no batch")
		}
		batch.Fields, _ = top[2].([]any)
		batch.Existed = len(top) > 3
		if batch.Existed {
			return nil, batch, nil
		}
	}
	// A queue new to Redis is added to the registry at once, even if
	// Admit took it for known (another replica obliterated it meanwhile).
	if err := s.queues.Remember(ctx, queue, top[0] == int64(1)); err != nil {
		return nil, BatchReply{}, err
	}
	items, err := replyList(top[1], len(jobs))
	if err != nil {
		return nil, BatchReply{}, err
	}
	out := make([]Enqueued, len(items))
	for i, item := range items {
		pair, err := replyList(item, 2)
		if err != nil {
			return nil, BatchReply{}, err
		}
		j, err := job.Parse(queue, pair[1])
		if err != nil {
			return nil, BatchReply{}, err
		}
		out[i] = Enqueued{Job: j, Created: pair[0] == int64(1)}
	}
	return out, batch, nil
}

// Admit takes queue's place in the registry of queues before a write
// that names it (a batch's callback queue), or refuses it with
// keyspace.ErrQuota when it is new and the registry is full; it answers
// whether it added queue, for Withdraw.
func (s *Service) Admit(ctx context.Context, queue string) (bool, error) {
	return s.queues.Admit(ctx, queue)
}

// Withdraw gives back the place Admit added queue for, when the write it
// was for failed and the queue has no keys.
func (s *Service) Withdraw(ctx context.Context, queue string) error {
	return s.queues.Withdraw(ctx, queue)
}

// ScriptJob is nj as the scripts that enqueue take it (enqueue.lua, and
// schedule_fire.lua for a tick's job), defaults filled in: an empty ID
// becomes a time-ordered UUIDv7.
func ScriptJob(nj NewJob) lua.NewJob {
	if nj.ID == "" {
		nj.ID = uuid.Must(uuid.NewV7()).String()
	}
	maxAttempts := "" // none named: the queue's default, or DefaultMaxAttempts, not stored
	if nj.MaxAttempts != 0 {
		maxAttempts = strconv.Itoa(nj.MaxAttempts)
	}
	backoff := ""
	if nj.Backoff != nil {
		backoff = nj.Backoff.String()
	}
	return lua.NewJob{ID: nj.ID, Payload: string(nj.Payload), Priority: nj.Priority,
		DelayMS: millis(nj.Delay), MaxAttempts: maxAttempts, Backoff: backoff, Group: nj.Group,
		Dedupe:      lua.Dedupe{Key: nj.Dedupe.Key, Mode: nj.Dedupe.Mode, WindowMS: millis(nj.Dedupe.Window)},
		ExpiresInMS: millis(nj.ExpiresIn), TimeoutMS: millis(nj.Timeout), Traceparent: nj.Traceparent,
		DependsOn: nj.DependsOn, RunOnFailure: nj.RunOnFailure, RunAtMS: runAtMS(nj.RunAt),
		PriorityNamed: nj.PriorityNamed}
}

// runAtMS is a job's run time as the enqueue script takes it: ms since the
// epoch, 0 for none (the zero time; the epoch itself has passed, and a
// job with no run time and no delay is pending alike).
func runAtMS(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}
