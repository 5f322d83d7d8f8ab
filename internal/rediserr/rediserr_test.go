package rediserr

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/job"
)

// reply is an error reply from Redis, as go-redis gives one.
type reply string

func (r reply) Error() string { return string(r) }
func (reply) RedisError()     {}

// TestNeverRan: what go-redis may send again (nothing ran) and what not.
func TestNeverRan(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{&net.OpError{Op: "dial", Err: errors.New("connection refused")}, true},
		{redis.ErrPoolTimeout, true},
		{redis.ErrClosed, true},
		{reply("CLUSTERDOWN The cluster is down"), true},
		{reply("TRYAGAIN Multiple keys request during rehashing of slot"), true},
		{reply("LOADING Redis is loading the dataset in memory"), true},
		{reply("READONLY You can't write against a read only replica."), true},
		{reply("ERR max number of clients reached"), true},
		{io.EOF, false},
		{io.ErrUnexpectedEOF, false},
		{&net.OpError{Op: "read", Err: os.ErrDeadlineExceeded}, false},
		{&net.OpError{Op: "write", Err: errors.New("broken pipe")}, false},
		{context.DeadlineExceeded, false},
		{reply("EMQSTALE the job is held under another token"), false},
	} {
		if got := NeverRan(c.err); got != c.want {
			t.Errorf("NeverRan(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// TestUnavailable: what the service answers 503 (try again later), and
// what is a bug.
func TestUnavailable(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&net.OpError{Op: "read", Err: os.ErrDeadlineExceeded}, true},
		{fmt.Errorf("claim: %w", io.EOF), true},
		{redis.ErrPoolTimeout, true},
		{context.DeadlineExceeded, true},
		{reply("LOADING Redis is loading the dataset in memory"), true},
		{reply("MASTERDOWN Link with MASTER is down"), true},
		{reply("TRYAGAIN the queue's slot is migrating (job a)"), true},
		{reply("ASK 3999 127.0.0.1:7001"), true},
		{reply("MOVED 3999 127.0.0.1:7001"), true},
		{reply("ERR wrong number of arguments"), false},
		{reply("EMQSTALE the token does not hold this job: a"), false},
		{errors.New("TRYAGAIN, but not from Redis"), false},
		{nil, false},
	} {
		if got := Unavailable(c.err); got != c.want {
			t.Errorf("Unavailable(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// TestScript: a script's refusal becomes its job error and names the job;
// anything else passes through as it is.
func TestScript(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err  error
		want error
		text string
	}{
		{reply("EMQSTALE the token does not hold this job: a"), job.ErrStale, "the token does not hold this job: a"},
		{reply("EMQGONE no such job: b"), job.ErrGone, "no such job: b"},
		{reply("ERR EMQSTATE the verb does not apply in the job's state: c"), job.ErrState, "the verb does not apply in the job's state: c"},
	} {
		got := Script(c.err)
		if !errors.Is(got, c.want) || got.Error() != c.text {
			t.Errorf("Script(%q) = %q, want %v with text %q", c.err, got, c.want, c.text)
		}
		if !Refused(c.err) {
			t.Errorf("Refused(%q) = false, want true", c.err)
		}
	}
	for _, err := range []error{nil, reply("ERR unknown command"), reply("EMQNOPE what"), errors.New("EMQSTALE not a reply")} {
		if got := Script(err); got != err {
			t.Errorf("Script(%v) = %v, want it unchanged", err, got)
		}
		if Refused(err) {
			t.Errorf("Refused(%v) = true, want false", err)
		}
	}
}

// TestFunctionsFallbacks: the answers that send a script to EVAL.
func TestFunctionsFallbacks(t *testing.T) {
	t.Parallel()
	noFunctions := []error{reply("ERR unknown command 'FCALL', with args beginning with: "), reply("NOPERM User x has no permissions to run the 'fcall' command")}
	for _, err := range noFunctions {
		if !NoFunctions(err) {
			t.Errorf("NoFunctions(%q) = false", err)
		}
	}
	if NoFunctions(reply("ERR Function not found")) || !FunctionMissing(reply("ERR Function not found")) {
		t.Error("a missing function is not a store without Functions")
	}
	if !OverMemory(reply("OOM command not allowed when used memory > 'maxmemory'.")) || OverMemory(nil) {
		t.Error("OverMemory misreads OOM")
	}
	if !NoScript(reply("NOSCRIPT No matching script. Please use EVAL.")) || NoScript(reply("ERR x")) {
		t.Error("NoScript misreads NOSCRIPT")
	}
	if !AlreadyLoaded(reply("ERR Library 'emq_1' already exists")) || AlreadyLoaded(nil) {
		t.Error("AlreadyLoaded misreads a library that is there")
	}
}
