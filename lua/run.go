package lua

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"net"

	"github.com/redis/go-redis/v9"
)

// Script is one of echo_mq's scripts. Its Run never lets go-redis send it
// again once it may have run.
type Script struct {
	src, hash string
}

func script(body string) *Script {
	src := commonSrc + "\n" + body
	sum := sha1.Sum([]byte(src))
	return &Script{src: src, hash: hex.EncodeToString(sum[:])}
}

// Hash is the script's SHA1, the name EVALSHA runs it by.
func (s *Script) Hash() string { return s.hash }

// Source is the script's whole text, common.lua first, as EVAL sends it.
func (s *Script) Source() string { return s.src }

// Processor is what runs a command and waits for its answer: a client, a
// cluster client or an autopipeliner (not a Pipeliner, whose Process only
// queues the command: Run could not see NOSCRIPT).
type Processor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

// Run runs the script on keys with args: EVALSHA, then EVAL when the node
// answers NOSCRIPT (a fresh node, a promoted replica, a flushed cache).
//
// Neither is resent by go-redis once it may have run. Its cluster client
// retries a command whose answer was lost (a timeout, a dropped
// connection) whatever MaxRetries says, and in a pipeline resends the
// whole batch, answered commands too. A script may have run when its
// answer is lost: a claim run twice leases jobs nobody holds, a retry run
// twice answers 409 after it succeeded. So a lost answer reaches the
// caller as an error (503 to the client, whose verbs are safe to repeat),
// on one node as on a Cluster. What Redis answers without running
// anything is still retried as go-redis does: redirects (MOVED, ASK,
// READONLY after a failover), a node that cannot be reached, CLUSTERDOWN,
// TRYAGAIN, LOADING.
func (s *Script) Run(ctx context.Context, c Processor, keys []string, args ...any) *redis.Cmd {
	cmd := s.send(ctx, c, "evalsha", s.Hash(), keys, args)
	if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
		return s.send(ctx, c, "eval", s.src, keys, args)
	}
	return cmd
}

func (s *Script) send(ctx context.Context, c Processor, verb, script string, keys []string, args []any) *redis.Cmd {
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

// sentOnce is a command go-redis must not resend once it may have run.
type sentOnce struct{ *redis.Cmd }

// NoRetry tells go-redis whether it may not send the command again: only
// when its error shows that Redis never ran it may it. (No error yet also
// forbids it: in a pipeline whose later command lost its answer, this one
// may have run already.)
func (c sentOnce) NoRetry() bool { return !neverRan(c.Err()) }

// neverRan reports whether err says the command was not run: it was never
// sent (no connection could be made or had), or Redis refused it before
// running it.
func neverRan(err error) bool {
	if err == nil {
		return false
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	if errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, redis.ErrClosed) {
		return true
	}
	for _, refused := range []string{"CLUSTERDOWN", "TRYAGAIN", "LOADING", "MASTERDOWN", "READONLY",
		"max number of clients reached"} {
		if redis.HasErrorPrefix(err, refused) {
			return true
		}
	}
	return false
}
