package lua

import (
	"strconv"
	"strings"

	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/internal/keyspace"
)

// Call is one run of a script: its KEYS, in the order its header gives
// their roles, and its ARGV. Each script's XxxArgs below builds it; they are
// the one place that knows a script's ARGV order.
type Call struct {
	script *Script
	keys   []string
	args   []any
	queue  keyspace.Queue
}

// Keys are the call's KEYS.
func (c Call) Keys() []string { return c.keys }

// Args are the call's ARGV.
func (c Call) Args() []any { return c.args }

// Script is the script the call runs.
func (c Call) Script() *Script { return c.script }

// call builds a call of s on queue q: KEYS from its header's roles (job
// is the row of id, rows those of rows, set the state's set), ARGV the key
// base and wake channel, then args.
func (s *Script) call(q keyspace.Queue, id, state string, rows []string, args ...any) Call {
	keys := make([]string, 0, len(s.roles)+len(rows))
	for _, role := range s.roles {
		switch role {
		case "meta":
			keys = append(keys, q.Meta())
		case "events":
			keys = append(keys, q.Events())
		case "job":
			keys = append(keys, q.Job(id))
		case "logs":
			keys = append(keys, q.Logs(id))
		case "reaper":
			keys = append(keys, q.ReaperTurn())
		case "schedules":
			keys = append(keys, q.Schedules())
		case "schedule_names":
			keys = append(keys, q.ScheduleNames())
		case "schedule_due":
			keys = append(keys, q.ScheduleDue())
		case "stats":
			keys = append(keys, q.Stats())
		case "due": // a Cluster's is its slot's (Runner.keysOf)
			keys = append(keys, keyspace.DueKey(q.Prefix()))
		case "set":
			keys = append(keys, q.Set(state))
		case "rows":
			for _, row := range rows {
				keys = append(keys, q.Job(row))
			}
		default: // a state's set
			keys = append(keys, q.Set(role))
		}
	}
	return Call{script: s, keys: keys, args: append([]any{q.Base(), q.WakeChannel()}, args...), queue: q}
}

// Actor is who asked for an operator's change, for its event.
type Actor struct{ Name, Role string }

// NewJob is one job of enqueue.lua, its defaults already left out: an
// empty MaxAttempts or Backoff is the default, an empty Group none, zero
// options none.
type NewJob struct {
	ID, Payload          string
	Priority             int
	DelayMS              int64
	MaxAttempts, Backoff string
	Group                string
	Dedupe               Dedupe
	ExpiresInMS          int64
	TimeoutMS            int64
	Traceparent          string // "": none
	// RunAtMS, when not 0, is when the job runs, ms since the epoch on the
	// server's clock: the script makes it DelayMS from its now (pending
	// when it has passed). DelayMS is then 0.
	RunAtMS int64
	// DependsOn are the ids of the jobs it waits for (lua/batches.lua);
	// RunOnFailure makes it run when one of them dies or is cancelled
	// rather than be cancelled.
	DependsOn    []string
	RunOnFailure bool
	// PriorityNamed says the enqueue named Priority, even 0: the queue's
	// default priority (lua/newjobs.lua's job_defaults) replaces only a
	// priority 0 not named.
	PriorityNamed bool
}

// BatchJoin names the batch an enqueue's new jobs join (lua/batches.lua):
// a new one (New, with its Open flag and Callback), or an open one.
type BatchJoin struct {
	ID       string
	New      bool
	Open     bool
	Callback BatchCallback
}

// BatchCallback is a batch's callback: its queue ("": the batch's), its
// payload (JSON text, "": none) and When ("complete" or "success").
type BatchCallback struct {
	Queue, Payload, When string
}

// Dedupe is a job's dedupe key (lua/admission.lua): Key "" for none; Mode
// "until_done", "throttle" or "debounce"; WindowMS the throttle's ttl_ms
// or the debounce's max_wait_ms, 0 for none.
type Dedupe struct {
	Key, Mode string
	WindowMS  int64
}

// hasOptions reports whether j has an admission option.
func (j NewJob) hasOptions() bool {
	return j.Dedupe.Key != "" || j.ExpiresInMS != 0 || j.TimeoutMS != 0
}

// later reports whether the call may make work for the reaper (a job's
// delay, expiry or dedupe window, a batch's callback: lua/due.lua), or
// makes a queue, so that it declares the due index (EnqueueLater).
func (a EnqueueArgs) later() bool {
	if a.NewQueue || a.Batch != nil { // a batch done at once owes its callback
		return true
	}
	for _, j := range a.Jobs {
		if j.DelayMS > 0 || j.RunAtMS != 0 || j.hasOptions() {
			return true
		}
	}
	return false
}

// blank is "" for zero, else n: an option's absent form in ARGV.
func blank(n int64) any {
	if n == 0 {
		return ""
	}
	return n
}

// EnqueueArgs are enqueue.lua's arguments: the jobs, and the batch they
// join (nil: none).
type EnqueueArgs struct {
	Jobs  []NewJob
	Batch *BatchJoin
	// NewQueue says the queue is new to the service's registry: the call
	// declares the due index (EnqueueLater), so that a queue it makes is
	// settled a while later (lua/due.lua).
	NewQueue bool
}

// Call is the call of enqueue.lua on q.
func (a EnqueueArgs) Call(q keyspace.Queue) Call {
	ids := make([]string, len(a.Jobs))
	args := make([]any, 0, 2+6*len(a.Jobs))
	args = append(args, len(a.Jobs))
	// Groups, options and traceparents only for the jobs that have them,
	// so that a plain job pays nothing per job for them.
	var groups, options, traces, deps, runs, zeros []any
	for i, j := range a.Jobs {
		ids[i] = j.ID
		args = append(args, j.ID, j.Payload, j.Priority, j.DelayMS, j.MaxAttempts, j.Backoff)
		if j.Group != "" {
			groups = append(groups, i, j.Group)
		}
		if j.hasOptions() {
			d := j.Dedupe
			options = append(options, i, d.Key, d.Mode, blank(d.WindowMS), blank(j.ExpiresInMS), blank(j.TimeoutMS))
		}
		if j.Traceparent != "" {
			traces = append(traces, i, j.Traceparent)
		}
		if j.RunAtMS != 0 {
			runs = append(runs, i, j.RunAtMS)
		}
		if j.PriorityNamed && j.Priority == 0 {
			zeros = append(zeros, i)
		}
		if len(j.DependsOn) > 0 {
			deps = append(deps, i, job.OnDependencyFailure(j.RunOnFailure), len(j.DependsOn))
			for _, d := range j.DependsOn {
				deps = append(deps, d)
			}
		}
	}
	args = append(append(args, len(groups)/2), groups...)
	args = append(append(args, len(options)/6), options...)
	// The tagged sections only when a job has one: a plain call sends
	// nothing for them.
	if len(traces) > 0 {
		args = append(append(args, "t", len(traces)/2), traces...)
	}
	if len(runs) > 0 {
		args = append(append(args, "r", len(runs)/2), runs...)
	}
	if len(zeros) > 0 { // priority 0 named: the queue's default does not replace it
		args = append(append(args, "n", len(zeros)), zeros...)
	}
	if len(deps) > 0 {
		n := 0
		for _, j := range a.Jobs {
			if len(j.DependsOn) > 0 {
				n++
			}
		}
		args = append(append(args, "d", n), deps...)
	}
	if b := a.Batch; b != nil {
		mode := "add"
		if b.New {
			mode = "new"
		}
		args = append(args, "b", b.ID, mode, flag(b.Open), b.Callback.Queue, b.Callback.Payload, b.Callback.When)
	}
	if a.later() {
		return EnqueueLater.call(q, "", "", ids, args...)
	}
	return Enqueue.call(q, "", "", ids, args...)
}

// ClaimArgs are claim.lua's arguments, and the claim-next ones of the
// complete scripts (Count 0: claim nothing).
type ClaimArgs struct {
	Count   int // at most tokenRoom / 10 (token.go)
	LeaseMS int64
	Worker  string
	// MaxActive, when not 0, caps the queue's active jobs: a push
	// delivery's claim (lua/push.lua). A worker's claim sends no ARGV for it.
	MaxActive int
}

// Call is the call of claim.lua on q.
func (a ClaimArgs) Call(q keyspace.Queue) Call {
	args := a.appendTo(make([]any, 0, 5))
	if a.MaxActive != 0 {
		args = append(args, a.MaxActive)
	}
	return Claim.call(q, "", "", nil, args...)
}

// appendTo appends a's ARGV in the scripts that lease jobs (claim.lua, and
// the claim-next of complete.lua and complete_batch.lua) to args: count,
// lease_ms, worker and the call's first fencing token, drawn here
// (firstToken) and nowhere else; "" when nothing is to be claimed.
func (a ClaimArgs) appendTo(args []any) []any {
	var first any = ""
	if a.Count > 0 {
		first = firstToken()
	}
	return append(args, a.Count, a.LeaseMS, a.Worker, first)
}

// ExtendArgs are extend.lua's arguments.
type ExtendArgs struct {
	ID       string
	Token    int64
	LeaseMS  int64
	Progress []byte // nil: none
}

// Call is the call of extend.lua on q.
func (a ExtendArgs) Call(q keyspace.Queue) Call {
	has, text := optional(a.Progress)
	return Extend.call(q, a.ID, "", nil, a.ID, a.Token, a.LeaseMS, has, text)
}

// CancellationArgs are cancellation.lua's arguments.
type CancellationArgs struct {
	ID    string
	Token int64
}

// Call is the call of cancellation.lua on q.
func (a CancellationArgs) Call(q keyspace.Queue) Call {
	return Cancellation.call(q, a.ID, "", nil, a.ID, a.Token)
}

// CompleteArgs are complete.lua's arguments.
type CompleteArgs struct {
	ID     string
	Token  int64
	Result []byte // nil: none
	Next   ClaimArgs
	Keep   int // completed jobs the queue keeps, 0: all
}

// Call is the call of complete.lua on q.
func (a CompleteArgs) Call(q keyspace.Queue) Call {
	has, text := optional(a.Result)
	args := a.Next.appendTo(append(make([]any, 0, 9), a.ID, a.Token, has, text))
	return Complete.call(q, a.ID, "", nil, append(args, a.Keep)...)
}

// Completion is one job of complete_batch.lua.
type Completion struct {
	ID     string
	Token  int64
	Result []byte // nil: none
}

// CompleteBatchArgs are complete_batch.lua's arguments.
type CompleteBatchArgs struct {
	Jobs []Completion
	Next ClaimArgs
	Keep int
}

// Call is the call of complete_batch.lua on q.
func (a CompleteBatchArgs) Call(q keyspace.Queue) Call {
	ids := make([]string, len(a.Jobs))
	args := make([]any, 0, 6+4*len(a.Jobs))
	args = append(args, len(a.Jobs))
	for i, c := range a.Jobs {
		ids[i] = c.ID
		has, text := optional(c.Result)
		args = append(args, c.ID, c.Token, has, text)
	}
	args = append(a.Next.appendTo(args), a.Keep)
	return CompleteBatch.call(q, "", "", ids, args...)
}

// FailArgs are fail.lua's arguments.
type FailArgs struct {
	ID        string
	Token     int64
	Error     string
	RetryInMS int64 // -1: the job's backoff
	Fatal     bool
}

// Call is the call of fail.lua on q.
func (a FailArgs) Call(q keyspace.Queue) Call {
	return Fail.call(q, a.ID, "", nil, a.ID, a.Token, a.Error, a.RetryInMS, flag(a.Fatal))
}

// SnoozeArgs are snooze.lua's arguments.
type SnoozeArgs struct {
	ID      string
	Token   int64
	DelayMS int64
}

// Call is the call of snooze.lua on q.
func (a SnoozeArgs) Call(q keyspace.Queue) Call {
	return Snooze.call(q, a.ID, "", nil, a.ID, a.Token, a.DelayMS)
}

// CancelArgs are cancel.lua's arguments.
type CancelArgs struct {
	ID     string
	Token  int64 // 0: whichever attempt
	Reason string
}

// Call is the call of cancel.lua on q.
func (a CancelArgs) Call(q keyspace.Queue) Call {
	token := ""
	if a.Token != 0 {
		token = strconv.FormatInt(a.Token, 10)
	}
	return Cancel.call(q, a.ID, "", nil, a.ID, token, a.Reason)
}

// SweepArgs are sweep.lua's arguments.
type SweepArgs struct{ MaxStalled, Limit int }

// Call is the call of sweep.lua on q.
func (a SweepArgs) Call(q keyspace.Queue) Call {
	return Sweep.call(q, "", "", nil, a.MaxStalled, a.Limit)
}

// ExpireArgs are expire.lua's arguments.
type ExpireArgs struct{ Limit int }

// Call is the call of expire.lua on q.
func (a ExpireArgs) Call(q keyspace.Queue) Call {
	return Expire.call(q, "", "", nil, a.Limit)
}

// PromoteDueArgs are promote_due.lua's arguments.
type PromoteDueArgs struct{ Limit int }

// Call is the call of promote_due.lua on q.
func (a PromoteDueArgs) Call(q keyspace.Queue) Call {
	return PromoteDue.call(q, "", "", nil, a.Limit)
}

// SettleArgs are settle.lua's arguments.
type SettleArgs struct {
	MaxAgeMS int64 // events older are trimmed; an empty queue is forgotten this long after its last
	// Keep is how many completed jobs a queue keeps when its settings name
	// no completed retention (EMQ_KEEP_COMPLETED; 0 all).
	Keep int
}

// Call is the call of settle.lua on q.
func (a SettleArgs) Call(q keyspace.Queue) Call {
	return Settle.call(q, "", "", nil, a.MaxAgeMS, a.Keep)
}

// TrimArgs are trim.lua's arguments.
type TrimArgs struct {
	Keep  int // as SettleArgs' Keep
	Limit int // jobs per call
}

// Call is the call of trim.lua on q.
func (a TrimArgs) Call(q keyspace.Queue) Call {
	return Trim.call(q, "", "", nil, a.Keep, a.Limit)
}

// RemoveArgs are remove.lua's arguments.
type RemoveArgs struct {
	ID    string
	Force bool
	By    Actor
}

// Call is the call of remove.lua on q.
func (a RemoveArgs) Call(q keyspace.Queue) Call {
	return Remove.call(q, a.ID, "", nil, a.ID, flag(a.Force), a.By.Name, a.By.Role)
}

// PauseArgs are pause.lua's arguments.
type PauseArgs struct {
	Paused bool
	By     Actor
}

// Call is the call of pause.lua on q.
func (a PauseArgs) Call(q keyspace.Queue) Call {
	return Pause.call(q, "", "", nil, flag(a.Paused), a.By.Name, a.By.Role)
}

// DrainArgs are drain.lua's arguments.
type DrainArgs struct {
	Limit, RemovedBefore int
	By                   Actor
}

// Call is the call of drain.lua on q.
func (a DrainArgs) Call(q keyspace.Queue) Call {
	return Drain.call(q, "", "", nil, a.Limit, a.RemovedBefore, a.By.Name, a.By.Role)
}

// ObliterateArgs are obliterate.lua's arguments.
type ObliterateArgs struct {
	Limit int
	Force bool
}

// Call is the call of obliterate.lua on q.
func (a ObliterateArgs) Call(q keyspace.Queue) Call {
	return Obliterate.call(q, "", "", nil, a.Limit, flag(a.Force))
}

// RetryArgs are retry.lua's arguments.
type RetryArgs struct {
	ID string
	By Actor
}

// Call is the call of retry.lua on q.
func (a RetryArgs) Call(q keyspace.Queue) Call {
	return Retry.call(q, a.ID, "", nil, a.ID, a.By.Name, a.By.Role)
}

// PromoteArgs are promote.lua's arguments.
type PromoteArgs struct {
	ID string
	By Actor
}

// Call is the call of promote.lua on q.
func (a PromoteArgs) Call(q keyspace.Queue) Call {
	return Promote.call(q, a.ID, "", nil, a.ID, a.By.Name, a.By.Role)
}

// RetryAllArgs are retry_all.lua's arguments: retry up to Limit jobs of
// State ("dead" or "cancelled"), oldest finished first.
type RetryAllArgs struct {
	State string
	Limit int
	By    Actor
}

// Call is the call of retry_all.lua on q.
func (a RetryAllArgs) Call(q keyspace.Queue) Call {
	return RetryAll.call(q, "", a.State, nil, a.State, a.Limit, a.By.Name, a.By.Role)
}

// PromoteAllArgs are promote_all.lua's arguments: promote up to Limit
// delayed jobs, earliest run-at first.
type PromoteAllArgs struct {
	Limit int
	By    Actor
}

// Call is the call of promote_all.lua on q.
func (a PromoteAllArgs) Call(q keyspace.Queue) Call {
	return PromoteAll.call(q, "", "", nil, a.Limit, a.By.Name, a.By.Role)
}

// CleanArgs are clean.lua's arguments: delete up to Limit jobs of State
// ("completed", "dead" or "cancelled") that finished more than
// OlderThanMS ago (0: all of them), oldest first.
type CleanArgs struct {
	State       string
	OlderThanMS int64
	Limit       int
	By          Actor
}

// Call is the call of clean.lua on q.
func (a CleanArgs) Call(q keyspace.Queue) Call {
	return Clean.call(q, "", a.State, nil, a.State, a.OlderThanMS, a.Limit, a.By.Name, a.By.Role)
}

// UpdateArgs are update.lua's arguments: what an operator changes of a
// job that has not started. A nil field keeps what the job has.
type UpdateArgs struct {
	ID       string
	Payload  *string // JSON text
	Priority *int
	// DelayMS (from the server's now) or RunAtMS (ms since the epoch) is
	// when the job runs; at most one of them is set.
	DelayMS, RunAtMS *int64
	By               Actor
}

// Call is the call of update.lua on q.
func (a UpdateArgs) Call(q keyspace.Queue) Call {
	replace, payload := "0", ""
	if a.Payload != nil {
		replace, payload = "1", *a.Payload
	}
	priority := ""
	if a.Priority != nil {
		priority = strconv.Itoa(*a.Priority)
	}
	var when, at any = "", ""
	switch {
	case a.DelayMS != nil:
		when, at = "delay", *a.DelayMS
	case a.RunAtMS != nil:
		when, at = "at", *a.RunAtMS
	}
	return Update.call(q, a.ID, "", nil, a.ID, replace, payload, priority, when, at, a.By.Name, a.By.Role)
}

// ListArgs are list.lua's arguments.
type ListArgs struct {
	State      string
	Descending bool
	Score, ID  string // the cursor: "" for the first page
	Limit      int
}

// Call is the call of list.lua on q.
func (a ListArgs) Call(q keyspace.Queue) Call {
	order := "asc"
	if a.Descending {
		order = "desc"
	}
	return List.call(q, "", a.State, nil, order, a.Score, a.ID, a.Limit)
}

// SettingsArgs are settings.lua's arguments: the settings in the form
// flow.lua keeps them ("" for none) and as JSON, for the event.
type SettingsArgs struct {
	Encoded, JSON string
	By            Actor
	// Defaults and Retention are the job defaults and the retention in
	// the forms the scripts keep ("" none): internal/flow's
	// JobDefaults.Encode and Retention.Encode.
	Defaults, Retention string
}

// Call is the call of settings.lua on q.
func (a SettingsArgs) Call(q keyspace.Queue) Call {
	return Settings.call(q, "", "", nil, a.Encoded, a.JSON, a.By.Name, a.By.Role, a.Defaults, a.Retention)
}

// GroupPauseArgs are group_pause.lua's arguments.
type GroupPauseArgs struct {
	Group  string
	Paused bool
	By     Actor
}

// Call is the call of group_pause.lua on q.
func (a GroupPauseArgs) Call(q keyspace.Queue) Call {
	return GroupPause.call(q, "", "", nil, a.Group, flag(a.Paused), a.By.Name, a.By.Role)
}

// GroupsArgs are groups.lua's arguments.
type GroupsArgs struct {
	Cursor string // "" for the first page
	Limit  int
}

// Call is the call of groups.lua on q.
func (a GroupsArgs) Call(q keyspace.Queue) Call {
	return Groups.call(q, "", "", nil, a.Cursor, a.Limit)
}

// SchedulePutArgs are schedule_put.lua's arguments.
type SchedulePutArgs struct {
	Name       string
	Definition string // JSON
	Next       int64  // the next tick, ms since the epoch; 0: none
	Paused     bool
	By         Actor
}

// Call is the call of schedule_put.lua on q.
func (a SchedulePutArgs) Call(q keyspace.Queue) Call {
	return SchedulePut.call(q, "", "", nil, a.Name, a.Definition, tick(a.Next), flag(a.Paused), a.By.Name, a.By.Role)
}

// SchedulePauseArgs are schedule_pause.lua's arguments: on resume, the
// next tick computed from the schedule at Version.
type SchedulePauseArgs struct {
	Name    string
	Paused  bool
	Next    int64 // ms; 0: none
	Version string
	By      Actor
}

// Call is the call of schedule_pause.lua on q.
func (a SchedulePauseArgs) Call(q keyspace.Queue) Call {
	return SchedulePause.call(q, "", "", nil, a.Name, flag(a.Paused), tick(a.Next), a.Version, a.By.Name, a.By.Role)
}

// ScheduleDeleteArgs are schedule_delete.lua's arguments.
type ScheduleDeleteArgs struct {
	Name string
	By   Actor
}

// Call is the call of schedule_delete.lua on q.
func (a ScheduleDeleteArgs) Call(q keyspace.Queue) Call {
	return ScheduleDelete.call(q, "", "", nil, a.Name, a.By.Name, a.By.Role)
}

// ScheduleDueArgs are schedule_due.lua's arguments.
type ScheduleDueArgs struct{ Limit int }

// Call is the call of schedule_due.lua on q.
func (a ScheduleDueArgs) Call(q keyspace.Queue) Call {
	return ScheduleDue.call(q, "", "", nil, a.Limit)
}

// PushPutArgs are push_put.lua's arguments: a target, or (URL "") none.
type PushPutArgs struct {
	URL                string
	TimeoutMS, LeaseMS int64
	Concurrency        int
	Secret             string
	Headers            string // a JSON object; "" for none
	By                 Actor
}

// Call is the call of push_put.lua on q.
func (a PushPutArgs) Call(q keyspace.Queue) Call {
	if a.URL == "" {
		return PushPut.call(q, "", "", nil, "", "", "", "", "", a.By.Name, a.By.Role, "")
	}
	return PushPut.call(q, "", "", nil, a.URL, a.TimeoutMS, a.Concurrency, a.LeaseMS, a.Secret, a.By.Name, a.By.Role, a.Headers)
}

// ScheduleListArgs are schedule_list.lua's arguments: one schedule by
// Name, or a page after Cursor.
type ScheduleListArgs struct {
	Name, Cursor string
	Limit        int
}

// Call is the call of schedule_list.lua on q.
func (a ScheduleListArgs) Call(q keyspace.Queue) Call {
	return ScheduleList.call(q, "", "", nil, a.Name, a.Cursor, a.Limit)
}

// Fire is one fire of schedule_fire.lua: a schedule's planned ticks, or
// (Tick 0) a run now.
type Fire struct {
	Name, Version string
	Tick          int64    // the next tick the fire was planned for, ms; 0: a run now
	IDs           []string // the jobs to enqueue, oldest tick first; none: only missed ticks
	Next          int64    // the tick after them, ms; 0: none
	Missed        int
	OverlapSkip   bool
	Job           NewJob // the template: its ID, DelayMS and Dedupe are not used
}

// ScheduleFireArgs are schedule_fire.lua's arguments.
type ScheduleFireArgs struct{ Fires []Fire }

// Call is the call of schedule_fire.lua on q.
func (a ScheduleFireArgs) Call(q keyspace.Queue) Call {
	var rows []string
	args := make([]any, 0, 1+14*len(a.Fires))
	args = append(args, len(a.Fires))
	for _, f := range a.Fires {
		rows = append(rows, f.IDs...)
		overlap := "allow"
		if f.OverlapSkip {
			overlap = "skip"
		}
		args = append(args, f.Name, f.Version, tick(f.Tick), strings.Join(f.IDs, ","), tick(f.Next), f.Missed, overlap,
			f.Job.Payload, f.Job.Priority, f.Job.MaxAttempts, f.Job.Backoff, f.Job.Group,
			blank(f.Job.ExpiresInMS), blank(f.Job.TimeoutMS))
	}
	return ScheduleFire.call(q, "", "", rows, args...)
}

// tick is a schedule script's tick argument: ms, or "" for none (0).
func tick(ms int64) string {
	if ms == 0 {
		return ""
	}
	return strconv.FormatInt(ms, 10)
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// optional is a script's (flag, text) pair for a value that may be absent.
func optional(v []byte) (string, string) {
	if v == nil {
		return "0", ""
	}
	return "1", string(v)
}

// StatsArgs are stats.lua's arguments.
type StatsArgs struct {
	Minutes int // the minutes of history to answer; 0: the latency alone
}

// Call is the call of stats.lua on q.
func (a StatsArgs) Call(q keyspace.Queue) Call {
	return Stats.call(q, "", "", nil, a.Minutes)
}

// BatchCommitArgs are batch_commit.lua's arguments.
type BatchCommitArgs struct{ ID string }

// Call is the call of batch_commit.lua on q.
func (a BatchCommitArgs) Call(q keyspace.Queue) Call {
	return BatchCommit.call(q, "", "", nil, a.ID)
}

// BatchTakeArgs are batch_take.lua's arguments: how long the taker has
// each batch, and at most how many.
type BatchTakeArgs struct {
	ForMS int64
	Limit int
}

// Call is the call of batch_take.lua on q.
func (a BatchTakeArgs) Call(q keyspace.Queue) Call {
	return BatchTake.call(q, "", "", nil, a.ForMS, a.Limit)
}

// BatchAckArgs are batch_ack.lua's arguments.
type BatchAckArgs struct{ ID, CallbackJobID string }

// Call is the call of batch_ack.lua on q.
func (a BatchAckArgs) Call(q keyspace.Queue) Call {
	return BatchAck.call(q, "", "", nil, a.ID, a.CallbackJobID)
}

// BatchListArgs are batch_list.lua's arguments: the page after the cursor
// (Score, ID: the last batch given; Score "" for the first page).
type BatchListArgs struct {
	Score, ID string
	Limit     int
}

// Call is the call of batch_list.lua on q.
func (a BatchListArgs) Call(q keyspace.Queue) Call {
	return BatchList.call(q, "", "", nil, a.Score, a.ID, a.Limit)
}

// LogAppendArgs are log_append.lua's arguments: the lines to append to
// job ID's log under Token, of which the job keeps the last Keep.
type LogAppendArgs struct {
	ID    string
	Token int64
	Keep  int
	Lines []string
}

// Call is the call of log_append.lua on q.
func (a LogAppendArgs) Call(q keyspace.Queue) Call {
	args := make([]any, 0, 3+len(a.Lines))
	args = append(args, a.ID, a.Token, a.Keep)
	for _, line := range a.Lines {
		args = append(args, line)
	}
	return LogAppend.call(q, a.ID, "", nil, args...)
}

// LogReadArgs are log_read.lua's arguments: up to Limit lines of job
// ID's log from line number From (nil: the oldest kept).
type LogReadArgs struct {
	ID    string
	From  *int64
	Limit int
}

// Call is the call of log_read.lua on q.
func (a LogReadArgs) Call(q keyspace.Queue) Call {
	from := ""
	if a.From != nil {
		from = strconv.FormatInt(*a.From, 10)
	}
	return LogRead.call(q, a.ID, "", nil, a.ID, from, a.Limit)
}
