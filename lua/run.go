package lua

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/rediserr"
	"github.com/echo-mq/echo_mq/internal/telemetry"
)

// Processor is what runs a command and waits for its answer: a client, a
// cluster client or an autopipeliner (not a Pipeliner, whose Process only
// queues the command: Run could not see a missing function).
type Processor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

// Runner runs the scripts through one client. Where Redis has FUNCTION, a
// call is an FCALL of the library's function, which runs the script alone:
// the shared files ran once, when the library was loaded. A node without
// the library (a new one, a flushed one) answers that it has no such
// function; the call then runs as EVALSHA (EVAL after NOSCRIPT) and the
// Runner loads the library on every master. A store without FUNCTION
// (the embedded one, Redis 6), or a Redis user whose ACL lets it run EVAL
// but not FCALL or FUNCTION LOAD, is run with EVALSHA from its first answer
// on; a call that Redis over maxmemory refuses as an FCALL runs by EVALSHA.
type Runner struct {
	rdb          Processor
	cluster      bool      // the store is a Redis Cluster: one due index per slot
	loader       Processor // what loads the library: rdb, unless LoadThrough says
	lib          source
	noFunctions  atomic.Bool
	lastLoad     atomic.Int64 // unix ns of the last load
	loadInterval time.Duration
}

// NewRunner returns a Runner of the scripts through rdb.
func NewRunner(rdb Processor) *Runner {
	_, cluster := rdb.(*redis.ClusterClient)
	return &Runner{rdb: rdb, loader: rdb, lib: library, loadInterval: time.Second, cluster: cluster}
}

// LoadThrough has r load the library through c, and returns r: for a
// Runner that runs its calls through an autopipeliner, which sends a
// command that names no key to one node of a Cluster, c is the cluster
// client, which loads it on every master.
func (r *Runner) LoadThrough(c Processor) *Runner {
	r.loader = c
	if _, cluster := c.(*redis.ClusterClient); cluster {
		r.cluster = true
	}
	return r
}

// keysOf are c's KEYS as this Runner's store has them: on a Cluster the
// due index is the one of the queue's slot (internal/keyspace's due.go);
// on one node a script whose last KEYS is due goes without it, and finds
// the node's index by its name when it writes it (lua/due.lua): a claim or
// a complete, which rarely does, pays no argument for it.
func (r *Runner) keysOf(c Call) []string {
	switch {
	case c.script.due < 0:
		return c.keys
	case !r.cluster && c.script.due == len(c.keys)-1:
		return c.keys[:c.script.due]
	case !r.cluster:
		return c.keys
	}
	keys := slices.Clone(c.keys)
	keys[c.script.due] = keyspace.SlotDueKey(c.queue.Prefix(), c.queue.Name())
	return keys
}

// Run runs c and answers its reply. Neither form is resent by go-redis once
// it may have run. Its cluster client retries a command whose answer was
// lost (a timeout, a dropped connection) whatever MaxRetries says, and in a
// pipeline resends the whole batch, answered commands too. A script may
// have run when its answer is lost: a claim run twice leases jobs nobody
// holds, a retry run twice answers 409 after it succeeded. So a lost answer
// reaches the caller as an error (503 to the client, whose verbs are safe
// to repeat), on one node as on a Cluster. What Redis answers without
// running anything is still retried as go-redis does: redirects (MOVED,
// ASK, READONLY after a failover), a node that cannot be reached,
// CLUSTERDOWN, TRYAGAIN (also a script's own, which it gives before its
// first write: here.lua), LOADING.
//
// Inside a traced request or delivery, the call is a span of its own,
// "emq.script <name>" (telemetry.StartScript), marked failed when the call
// failed but not for a script's refusal; elsewhere it costs nothing.
func (r *Runner) Run(ctx context.Context, c Call) *redis.Cmd {
	ctx, end := telemetry.StartScript(ctx, strings.TrimSuffix(c.script.file, ".lua")) // a variant as its file: enqueue
	cmd := r.run(ctx, c)
	if err := cmd.Err(); rediserr.Refused(err) {
		end(nil) // a stale token, a job gone: the API's answer, not the script failing
	} else {
		end(err)
	}
	return cmd
}

// run runs c as an FCALL, or by EVALSHA (EVAL) where it must (see Runner).
func (r *Runner) run(ctx context.Context, c Call) *redis.Cmd {
	keys := r.keysOf(c)
	if !r.noFunctions.Load() {
		cmd := send(ctx, r.rdb, "fcall", c.script.fn, keys, c.args)
		switch err := cmd.Err(); {
		case rediserr.NoFunctions(err):
			r.noFunctions.Store(true)
		case rediserr.FunctionMissing(err):
			if err := r.load(ctx); rediserr.NoFunctions(err) {
				r.noFunctions.Store(true)
			}
		case rediserr.OverMemory(err):
			// A function may write, so Redis over maxmemory refuses all of
			// them before they run; EVAL is refused only at its first write
			// that needs memory, so that a drain or a remove (which frees
			// it) still runs, as it did before the library.
		default:
			return located(cmd, r.lib)
		}
	}
	cmd := send(ctx, r.rdb, "evalsha", c.script.Hash(), keys, c.args)
	if rediserr.NoScript(cmd.Err()) {
		cmd = send(ctx, r.rdb, "eval", c.script.Source(), keys, c.args)
	}
	return located(cmd, c.script.eval)
}

// Reply runs c as Run does and answers its reply, a script's refusal
// (EMQGONE, EMQSTALE, EMQSTATE) turned into its domain error
// (rediserr.Script): what every service that runs the scripts wants.
func (r *Runner) Reply(ctx context.Context, c Call) (any, error) {
	reply, err := r.Run(ctx, c).Result()
	return reply, rediserr.Script(err)
}

// load loads the library on every master, at most once per loadInterval:
// through a cluster client on each master, through any other client on the
// node it reaches (see LoadThrough).
func (r *Runner) load(ctx context.Context) error {
	now := time.Now().UnixNano()
	last := r.lastLoad.Load()
	if now-last < int64(r.loadInterval) || !r.lastLoad.CompareAndSwap(last, now) {
		return nil
	}
	if cc, ok := r.loader.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			return loadLibrary(ctx, node, r.lib)
		})
	}
	return loadLibrary(ctx, r.loader, r.lib)
}

// loadLibrary sends FUNCTION LOAD of lib; one that is there already is
// fine (its name is its text's hash).
func loadLibrary(ctx context.Context, p Processor, lib source) error {
	cmd := redis.NewCmd(ctx, "function", "load", lib.text)
	_ = p.Process(ctx, cmd)
	if err := cmd.Err(); err != nil && !rediserr.AlreadyLoaded(err) {
		return err
	}
	return nil
}

// Load loads the library where the store has FUNCTION, so that the first
// calls need not fall back to EVAL; it is never required.
func (r *Runner) Load(ctx context.Context) {
	r.lastLoad.Store(0)
	_ = r.load(ctx)
}

func send(ctx context.Context, c Processor, verb, script string, keys []string, args []any) *redis.Cmd {
	argv := make([]any, 0, 3+len(keys)+len(args))
	argv = append(argv, verb, script, len(keys))
	for _, k := range keys {
		argv = append(argv, k)
	}
	argv = append(argv, args...)
	cmd := redis.NewCmd(ctx, argv...)
	_ = c.Process(ctx, sentOnce{cmd})
	return cmd
}

// located rewrites the place a script error names (a line of the composed
// source) into the file and line of ours it came from.
func located(cmd *redis.Cmd, src source) *redis.Cmd {
	var rerr redis.Error
	if err := cmd.Err(); err != nil && errors.As(err, &rerr) && redisLine.MatchString(err.Error()) {
		cmd.SetErr(scriptError{src.locate(err.Error())})
	}
	return cmd
}

// scriptError is a Redis error reply of a script, its place in our files.
type scriptError struct{ msg string }

func (e scriptError) Error() string { return e.msg }

// RedisError marks it a Redis reply, for redis.HasErrorPrefix.
func (scriptError) RedisError() {}

// sentOnce is a command go-redis must not resend once it may have run.
type sentOnce struct{ *redis.Cmd }

// NoRetry tells go-redis whether it may not send the command again: only
// when its error shows that Redis never ran it may it. (No error yet also
// forbids it: in a pipeline whose later command lost its answer, this one
// may have run already.)
func (c sentOnce) NoRetry() bool { return !rediserr.NeverRan(c.Err()) }
