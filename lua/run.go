package lua

import (
	"context"
	"crypto/sha1"
	"encoding/hex"

	"github.com/redis/go-redis/v9"
)

// Script is one of echo_mq's scripts. Its Run never lets go-redis send it
// twice.
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

// Processor is what runs a command: a client, a cluster client or an
// autopipeliner.
type Processor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

// Run runs the script on keys with args: EVALSHA, then EVAL when the node
// answers NOSCRIPT (a fresh node, a promoted replica, a flushed cache).
//
// Neither is ever resent by go-redis. Its cluster client retries a command
// whose answer was lost (a timeout, a dropped connection) whatever
// MaxRetries says, and in a pipeline resends the whole batch, answered
// commands too. A script may have run when its answer is lost: a claim run
// twice leases jobs nobody holds, a retry run twice answers 409 after it
// succeeded. So a lost answer reaches the caller as an error (503 to the
// client, whose verbs are safe to repeat), on one node as on a Cluster.
// Redirects (MOVED, ASK, READONLY after a failover) are still followed:
// Redis answers them without running anything.
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

// sentOnce is a command go-redis must not resend.
type sentOnce struct{ *redis.Cmd }

// NoRetry tells go-redis not to resend the command after an error.
func (sentOnce) NoRetry() bool { return true }
