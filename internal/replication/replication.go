// Package replication holds a write's answer until replicas have it
// (EMQ_ACK_REPLICAS): a go-redis hook that sends WAIT after the writes of
// each call, on the connection that made them, and fails the writes that
// too few replicas acknowledged in time (docs/design.md#acknowledged-writes).
//
// WAIT counts the replicas that have every write the connection has made
// so far, so it must follow them on the same connection: the hook appends
// it to the pipeline that carries them (one WAIT covers every write a
// pipeline of the auto-pipeliner carries, from many requests), and sends a
// single write command as a pipeline of itself and its WAIT. A write made
// on a connection of its own (Client.Conn, a transaction's Watch) would so
// go on another: the service makes none.
package replication

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/rediserr"
)

// Config is what a Hook waits for.
type Config struct {
	Replicas int           // how many replicas must hold a write
	Timeout  time.Duration // how long WAIT waits for them, at least 1 ms
	// ReadOnlyScript reports whether a script call (its function's name,
	// hash or text) never writes: such a call is not waited for.
	ReadOnlyScript func(script string) bool
}

// Hook is the go-redis hook of one node's client (a node of a Cluster,
// the master of a Sentinel or the one node).
type Hook struct {
	cfg  Config
	node *redis.Client
}

// Install adds the hook to node, the client it pipelines single writes
// through.
func Install(node *redis.Client, cfg Config) {
	node.AddHook(Hook{cfg: cfg, node: node})
}

// DialHook leaves dialing alone.
func (Hook) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook sends a single write as a pipeline of itself, so that the
// pipeline hook follows it with WAIT on its connection; a read goes as it
// is.
func (h Hook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !h.writes(cmd) {
			return next(ctx, cmd)
		}
		pipe := h.node.Pipeline()
		_ = pipe.Process(ctx, cmd)
		_, _ = pipe.Exec(ctx)
		return cmd.Err()
	}
}

// ProcessPipelineHook appends WAIT to a pipeline that writes and, once it
// has run, fails each write that fewer than Replicas replicas
// acknowledged within Timeout with rediserr.ErrNotAcknowledged. A
// MULTI/EXEC transaction, which must end with EXEC (and comes after
// ASKING when a Cluster redirects it), goes unwaited: the service uses
// one only for a log of push delivery errors, which answers no request.
func (h Hook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if !h.anyWrites(cmds) || slices.ContainsFunc(cmds, isMulti) {
			return next(ctx, cmds)
		}
		wait := newWait(ctx, h.cfg)
		withWait := make([]redis.Cmder, len(cmds), len(cmds)+1)
		copy(withWait, cmds)
		_ = next(ctx, append(withWait, wait)) // each command holds its own outcome
		if acked, werr := wait.Result(); werr != nil || int(acked) < h.cfg.Replicas {
			h.fail(cmds, notAcknowledged(acked, werr, h.cfg))
		}
		for _, c := range cmds {
			if c.Err() != nil {
				return c.Err() // what a pipeline answers: its first error
			}
		}
		return nil
	}
}

// fail marks every write of cmds that succeeded (a nil reply too) as not
// acknowledged. A write Redis refused keeps its error: a script refuses
// before it writes.
func (h Hook) fail(cmds []redis.Cmder, err error) {
	for _, c := range cmds {
		if own := c.Err(); (own == nil || errors.Is(own, redis.Nil)) && h.writes(c) {
			c.SetErr(err)
		}
	}
}

func isMulti(c redis.Cmder) bool { return c.Name() == "multi" }

func (h Hook) anyWrites(cmds []redis.Cmder) bool {
	for _, c := range cmds {
		if h.writes(c) {
			return true
		}
	}
	return false
}

// writes reports whether cmd may write: a script of ours that is not
// read-only, or a command not known to be a read (an unknown one is taken
// for a write, which costs a WAIT, never an unacknowledged answer).
func (h Hook) writes(cmd redis.Cmder) bool {
	switch name := cmd.Name(); name {
	case "fcall", "evalsha", "eval":
		args := cmd.Args()
		if len(args) < 2 || h.cfg.ReadOnlyScript == nil {
			return true
		}
		script, _ := args[1].(string)
		return !h.cfg.ReadOnlyScript(script)
	default:
		return !readOnlyCommands[name]
	}
}

// notAcknowledged is the error of a write WAIT did not see reach enough
// replicas: the count it saw, or why it did not answer.
func notAcknowledged(acked int64, werr error, cfg Config) error {
	if werr != nil {
		return unacknowledged{fmt.Sprintf("%v: WAIT failed: %v", rediserr.ErrNotAcknowledged, werr)}
	}
	return unacknowledged{fmt.Sprintf("%v: %d of the %d replicas EMQ_ACK_REPLICAS asks for had it within %s",
		rediserr.ErrNotAcknowledged, acked, cfg.Replicas, cfg.Timeout)}
}

// unacknowledged is rediserr.ErrNotAcknowledged with what WAIT saw. It is
// marked a Redis reply (RedisError): Redis answered every command of the
// pipeline, and the connection is sound. Without the mark the
// auto-pipeliner would take it for a broken connection and fail the
// batch's later chunks without sending them.
type unacknowledged struct{ msg string }

func (e unacknowledged) Error() string { return e.msg }
func (unacknowledged) RedisError()     {}
func (unacknowledged) Unwrap() error   { return rediserr.ErrNotAcknowledged }

// waitCmd is a WAIT that go-redis must never resend on its own: resent
// on another connection (a Cluster retries a failed pipeline by node), it
// would count that connection's writes, not the pipeline's.
type waitCmd struct{ *redis.IntCmd }

func (waitCmd) NoRetry() bool { return true }

func newWait(ctx context.Context, cfg Config) waitCmd {
	ms := max(cfg.Timeout.Milliseconds(), 1) // WAIT 0 would wait for ever
	return waitCmd{redis.NewIntCmd(ctx, "wait", cfg.Replicas, ms)}
}

// readOnlyCommands are the Redis commands that never write (or do only
// what a replica need not have: a connection's own settings), by the name
// go-redis gives (Cmder.Name: the first word, lower case). A test checks
// each against the flags COMMAND INFO gives. Every other command is taken
// for a write.
var readOnlyCommands = setOf(
	// connection and server (WATCH and UNWATCH: the connection's own
	// state, so a transaction's WATCH stays on the transaction's connection)
	"watch", "unwatch", "auth", "hello", "ping", "echo", "select", "client", "info", "time", "command", "config", "dbsize",
	"memory", "role", "readonly", "readwrite", "cluster", "asking", "wait", "quit", "reset", "slowlog",
	"latency", "lastsave",
	// keys
	"exists", "type", "ttl", "pttl", "expiretime", "pexpiretime", "scan", "keys", "randomkey", "dump", "object", "touch",
	// strings
	"get", "mget", "strlen", "getrange", "substr",
	// hashes
	"hget", "hmget", "hgetall", "hkeys", "hvals", "hlen", "hexists", "hstrlen", "hscan", "hrandfield",
	// lists
	"llen", "lrange", "lindex", "lpos",
	// sets
	"scard", "smembers", "sismember", "smismember", "srandmember", "sscan", "sinter", "sunion", "sdiff", "sintercard",
	// sorted sets
	"zcard", "zcount", "zlexcount", "zrange", "zrangebyscore", "zrangebylex", "zrevrange", "zrevrangebyscore",
	"zrevrangebylex", "zscore", "zmscore", "zrank", "zrevrank", "zscan", "zrandmember", "zinter", "zunion", "zdiff", "zintercard",
	// streams
	"xrange", "xrevrange", "xread", "xlen", "xinfo", "xpending",
	// scripts and functions that cannot write
	"fcall_ro", "evalsha_ro", "eval_ro", "script",
	// pub/sub
	"publish", "spublish", "pubsub",
)

func setOf(names ...string) map[string]bool {
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[strings.ToLower(n)] = true
	}
	return set
}
