// Package rediserr is the one place that reads the errors Redis gives, and
// says what a caller can do about each: wait and try again (Unavailable),
// send it again because it never ran (NeverRan), run a script by EVAL when
// Functions cannot serve (NoFunctions, FunctionMissing, OverMemory,
// NoScript), or nothing: a bug. It also turns the scripts' own refusals
// (docs/design.md#fencing) into the job package's errors (Script).
package rediserr

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/job"
)

// Unavailable reports whether err means Redis cannot be reached or cannot
// serve now (the caller may try again later), as opposed to a bug: a
// network error or timeout, a closed or exhausted pool, a node loading,
// without its master, read-only after a failover, or short of the
// replicas its min-replicas-to-write asks for (NOREPLICAS), a Cluster down, a
// slot migrating (TRYAGAIN, and the ASK and MOVED redirects go-redis gave
// up following), a write too few replicas acknowledged (ErrNotAcknowledged).
func Unavailable(err error) bool {
	var netErr net.Error
	return errors.As(err, &netErr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, redis.ErrClosed) || errors.Is(err, redis.ErrPoolTimeout) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrNotAcknowledged) ||
		hasPrefix(err, "LOADING", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN", "READONLY", "NOREPLICAS", "ASK ", "MOVED ")
}

// NeverRan reports whether err says the command was not run: it was never
// sent (no connection could be made or had), or Redis refused it before
// running it. So it may be sent again even when it is not idempotent. A
// script's own TRYAGAIN is given before it writes anything; a function
// (FCALL) that may write is refused NOREPLICAS before it runs.
func NeverRan(err error) bool {
	if err == nil {
		return false
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	return errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, redis.ErrClosed) ||
		hasPrefix(err, "CLUSTERDOWN", "TRYAGAIN", "LOADING", "MASTERDOWN", "READONLY", "NOREPLICAS", "max number of clients reached")
}

// NewerLayout reports whether a script refused to touch a queue whose
// stored layout is newer than the scripts know (EMQLAYOUT, lua/prelude.lua:
// a newer release of echo_mq wrote it), and the refusal's text, which
// names the version.
func NewerLayout(err error) (string, bool) {
	var rerr redis.Error
	if !errors.As(err, &rerr) || !hasPrefix(err, "EMQLAYOUT") {
		return "", false
	}
	_, text, _ := strings.Cut(rerr.Error(), " ")
	_, text, _ = strings.Cut(text, " ") // the version, which the text names again
	return text, true
}

// NoPermission reports whether the server's ACL refused the command.
func NoPermission(err error) bool { return hasPrefix(err, "NOPERM") }

// NoFunctions reports whether the store cannot run Functions for this
// client: it has no FUNCTION command (the embedded store, Redis before 7)
// or the ACL refuses FCALL or FUNCTION LOAD.
func NoFunctions(err error) bool {
	return NoPermission(err) || (err != nil && strings.Contains(strings.ToLower(err.Error()), "unknown command"))
}

// FunctionMissing reports whether the node lacks the function called: the
// library is not loaded there (a new master, a flushed one).
func FunctionMissing(err error) bool { return hasPrefix(err, "Function not found") }

// OverMemory reports whether Redis refused the call over maxmemory.
func OverMemory(err error) bool { return hasPrefix(err, "OOM") }

// NoScript reports whether EVALSHA found no script with the hash.
func NoScript(err error) bool { return hasPrefix(err, "NOSCRIPT") }

// AlreadyLoaded reports whether FUNCTION LOAD found the library there.
func AlreadyLoaded(err error) bool {
	return err != nil && strings.Contains(err.Error(), "already exists")
}

// Script turns a script's refusal (an error reply that starts with one of
// the job package's codes: EMQGONE, EMQSTALE, EMQSTATE) into its error,
// whose text names the job, and passes any other error through.
func Script(err error) error {
	if err == nil {
		return nil
	}
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		return err
	}
	code, text, _ := strings.Cut(strings.TrimPrefix(rerr.Error(), "ERR "), " ")
	if domain, ok := job.ErrorOfCode(code); ok {
		return refusal{domain: domain, text: text}
	}
	return err
}

// Refused reports whether err is a script's refusal (EMQGONE, EMQSTALE,
// EMQSTATE, ...): an answer the API gives its caller, not a failure.
func Refused(err error) bool {
	_, ok := Script(err).(refusal)
	return ok
}

// refusal is a script's refusal: its text (without the code) says which
// job, and it unwraps to the domain error.
type refusal struct {
	domain error
	text   string
}

func (e refusal) Error() string { return e.text }
func (e refusal) Unwrap() error { return e.domain }

// hasPrefix reports whether err is a Redis error reply that starts with
// one of prefixes.
func hasPrefix(err error, prefixes ...string) bool {
	for _, p := range prefixes {
		if redis.HasErrorPrefix(err, p) {
			return true
		}
	}
	return false
}

// ErrNotAcknowledged is the error of a write that fewer replicas than
// EMQ_ACK_REPLICAS acknowledged in time (internal/replication): it ran on
// the master, so a failover may yet lose it, and the caller is told 503.
// Repeating it is safe: every write is idempotent by id or token.
var ErrNotAcknowledged = errors.New("the write was not acknowledged by enough replicas")
