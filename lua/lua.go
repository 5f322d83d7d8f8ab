// Package lua holds echo_mq's Redis scripts: every state change of a job is
// one of them, atomic on the Redis server and timed by its clock
// (docs/design.md#scripts).
//
// Each script is a .lua file whose header names its KEYS by role, its ARGV,
// replies and error replies; the shared files (prelude.lua first) hold what
// every script uses. The scripts run as one Redis Functions library, loaded
// once per node, where the server has FUNCTION (Redis 7, Valkey), and as
// EVALSHA/EVAL elsewhere (the embedded store): see Runner. Each script's
// arguments are built in one typed place, its XxxArgs in args.go, with its
// KEYS taken from its header.
package lua

import (
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

//go:embed *.lua
var files embed.FS

// shared are the files every script runs after, in this order.
var shared = []string{"prelude.lua", "row.lua", "due.lua", "here.lua", "history.lua", "events.lua", "fence.lua", "flow.lua", "admission.lua", "lifecycle.lua", "batches.lua", "newjobs.lua", "schedules.lua", "push.lua", "queues.lua"}

// Script is one of echo_mq's scripts.
type Script struct {
	name  string   // the file's name without .lua (a variant's own: declaring)
	file  string   // the file it comes from
	roles []string // its KEYS by role, from its header ("rows" last: one KEYS per row)
	due   int      // the place of its "due" KEYS, -1 for none
	argc  int      // the highest ARGV its header names
	body  string
	eval  source // the EVAL form: the shared files, then the body
	fn    string // its function's name in the library
}

// The scripts. Build a call with the script's XxxArgs (args.go) and run it
// with a Runner.
var (
	Enqueue        = mustScript("enqueue")
	EnqueueLater   = Enqueue.declaring("enqueue_later", "due")
	Claim          = mustScript("claim")
	Extend         = mustScript("extend")
	Cancellation   = mustScript("cancellation")
	Complete       = mustScript("complete")
	CompleteBatch  = mustScript("complete_batch")
	Fail           = mustScript("fail")
	Snooze         = mustScript("snooze")
	Cancel         = mustScript("cancel")
	Sweep          = mustScript("sweep")
	PromoteDue     = mustScript("promote_due")
	Expire         = mustScript("expire")
	Remove         = mustScript("remove")
	Pause          = mustScript("pause")
	Drain          = mustScript("drain")
	Obliterate     = mustScript("obliterate")
	Settle         = mustScript("settle")
	Retry          = mustScript("retry")
	Promote        = mustScript("promote")
	RetryAll       = mustScript("retry_all")
	PromoteAll     = mustScript("promote_all")
	Clean          = mustScript("clean")
	Update         = mustScript("update")
	List           = mustScript("list")
	Settings       = mustScript("settings")
	Trim           = mustScript("trim")
	GroupPause     = mustScript("group_pause")
	Groups         = mustScript("groups")
	SchedulePut    = mustScript("schedule_put")
	SchedulePause  = mustScript("schedule_pause")
	ScheduleDelete = mustScript("schedule_delete")
	ScheduleDue    = mustScript("schedule_due")
	ScheduleFire   = mustScript("schedule_fire")
	ScheduleList   = mustScript("schedule_list")
	PushPut        = mustScript("push_put")
	Stats          = mustScript("stats")
	BatchCommit    = mustScript("batch_commit")
	BatchTake      = mustScript("batch_take")
	BatchAck       = mustScript("batch_ack")
	BatchList      = mustScript("batch_list")
	LogAppend      = mustScript("log_append")
	LogRead        = mustScript("log_read")
)

// All lists every script.
var All = []*Script{
	Enqueue, EnqueueLater, Claim, Extend, Cancellation, Complete, CompleteBatch,
	Fail, Snooze, Cancel, Sweep, PromoteDue, Expire, Settle, Remove, Pause, Drain, Obliterate, Retry, Promote, List,
	RetryAll, PromoteAll, Clean,
	Settings, GroupPause, Groups, Trim,
	SchedulePut, SchedulePause, ScheduleDelete, ScheduleDue, ScheduleFire, ScheduleList,
	PushPut, Stats, BatchCommit, BatchTake, BatchAck,
	BatchList,
	LogAppend, LogRead,
	Update,
}

// readOnly are the scripts that never write. The library registers them
// with the no-writes flag, so that Redis refuses any write of theirs (every
// test that calls one checks it), and a service that waits for replicas
// (EMQ_ACK_REPLICAS) does not wait for their calls: see ReadOnly.
var readOnly = []*Script{List, Groups, ScheduleList, Stats, LogRead, Cancellation}

// library is every script as one Redis Functions library.
var library = newLibrary(All, readOnly)

// ReadOnly reports whether script, as a call names it (its function's
// name for FCALL, its hash for EVALSHA, its text for EVAL), is one of ours
// that never writes.
func ReadOnly(script string) bool {
	for _, s := range readOnly {
		if script == s.fn || script == s.eval.hash || script == s.eval.text {
			return true
		}
	}
	return false
}

// LibraryName is the name the scripts' Functions library has on Redis:
// "emq_" and a hash of its text.
func LibraryName() string { return library.name }

// Hash is the SHA1 of the script's EVAL form, the name EVALSHA runs it by.
func (s *Script) Hash() string { return s.eval.hash }

// Source is the script's EVAL form: the shared files, then its own.
func (s *Script) Source() string { return s.eval.text }

// Roles are the roles of the script's KEYS, in order, from its header.
func (s *Script) Roles() []string { return s.roles }

// claims says, as a Lua expression for bind (prelude.lua), whether a call
// of the script claims jobs (calls lifecycle.lua's plan_claim), so that
// bind reads the queue's state with its layout, in one call: "true" for
// a script that may, "false" for one that never does, or the index of the
// ARGV that says how many the call claims when its header names it
// ("-- Claims when ARGV[n] > 0"): a complete that claims no next job then
// reads the layout alone. A script that enqueues (calls newjobs.lua's
// enqueue_jobs) is "'defaults'": bind reads the queue's state and its job
// defaults in the same call.
func (s *Script) claims() string {
	if m := claimsWhen.FindStringSubmatch(s.body); m != nil {
		return m[1]
	}
	if strings.Contains(s.body, "enqueue_jobs(") {
		return "'defaults'"
	}
	return strconv.FormatBool(strings.Contains(s.body, "plan_claim("))
}

// Name is the script's file name without ".lua".
func (s *Script) Name() string { return s.name }

func mustScript(name string) *Script {
	text, err := files.ReadFile(name + ".lua")
	if err != nil {
		panic(err) // embedded: only a misspelt name gets here, and every test would fail
	}
	s, err := newScript(name, string(text))
	if err != nil {
		panic(err)
	}
	return s
}

var (
	keysLine = regexp.MustCompile(`^-- KEYS\[(\d+)(\.\.)?\]\s+(\w+)`)
	argvLine = regexp.MustCompile(`ARGV\[(\d+)\]`)
	// claimsWhen is the header line of a script that claims only when one
	// of its ARGV is above 0 (Script.claims).
	claimsWhen = regexp.MustCompile(`(?m)^-- Claims when ARGV\[(\d+)\] > 0$`)
)

// newScript reads a script's header and builds its EVAL form.
func newScript(name, text string) (*Script, error) {
	s := &Script{name: name, body: text}
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "--") {
			break
		}
		if m := keysLine.FindStringSubmatch(line); m != nil {
			if n, _ := strconv.Atoi(m[1]); n != len(s.roles)+1 || (len(s.roles) > 0 && s.roles[len(s.roles)-1] == "rows") {
				return nil, fmt.Errorf("%s.lua: KEYS[%d] out of order", name, n)
			}
			if (m[2] != "") != (m[3] == "rows") {
				return nil, fmt.Errorf("%s.lua: only rows take KEYS[n..]", name)
			}
			s.roles = append(s.roles, m[3])
		}
		if strings.HasPrefix(line, "-- ARGV[") {
			for _, m := range argvLine.FindAllStringSubmatch(line, -1) {
				s.argc, _ = strconv.Atoi(m[1])
			}
		}
	}
	return newScriptWith(name, name+".lua", text, s.roles, s.argc)
}

// newScriptWith is the script name of body text, from file, with KEYS
// roles and ARGV up to argc, its EVAL form built.
func newScriptWith(name, file, text string, roles []string, argc int) (*Script, error) {
	s := &Script{name: name, file: file, body: text, roles: roles, argc: argc}
	var b builder
	b.line("local EVAL_KEYS, EVAL_ARGV = KEYS, ARGV")
	b.shared()
	b.wrapped(s)
	b.line(fmt.Sprintf("local refused = bind(EVAL_KEYS, EVAL_ARGV, %s, %s)", rolesTable(s.roles), s.claims()))
	b.line("if refused then return refused end")
	b.line("return stats_flush(main(), true)") // an EVAL keeps nothing for the next call
	s.due = slices.Index(s.roles, "due")
	s.eval = b.source()
	return s, nil
}

// declaring is s under name with one more KEYS, role, before its rows:
// the same body, for the calls that need that key (EnqueueLater), so that
// the others do not pass it.
func (s *Script) declaring(name, role string) *Script {
	roles := slices.Clone(s.roles)
	at := slices.Index(roles, "rows")
	if at < 0 {
		at = len(roles)
	}
	v, err := newScriptWith(name, s.file, s.body, slices.Insert(roles, at, role), s.argc)
	if err != nil {
		panic(err)
	}
	return v
}

// newLibrary builds the library of scripts: the shared files once, then
// each script registered as a function. Its name carries a hash of its
// text, so that service versions side by side on one Redis (a rolling
// deploy) each call their own.
func newLibrary(scripts, readOnly []*Script) source {
	var b builder
	b.shared()
	b.line("LIBRARY = true")
	for _, s := range scripts {
		b.line("do")
		b.wrapped(s)
		b.line(fmt.Sprintf("local roles = %s", rolesTable(s.roles)))
		flags := ""
		if slices.Contains(readOnly, s) {
			flags = ", flags = { 'no-writes' }"
		}
		b.line(fmt.Sprintf("redis.register_function{function_name = '%s'%s, callback = function(keys, argv) local refused = bind(keys, argv, roles, %s) if refused then return refused end return stats_flush(main()) end}", "@FN_"+s.name, flags, s.claims()))
		b.line("end")
	}
	body := b.source()
	sum := sha1.Sum([]byte(body.text))
	name := "emq_" + hex.EncodeToString(sum[:6])
	for _, s := range scripts {
		s.fn = name + "_" + s.name
	}
	body.text = strings.ReplaceAll(body.text, "'@FN_", "'"+name+"_")
	body.text = "#!lua name=" + name + "\n" + body.text
	body.lines = append([]segment{{first: 1, file: ""}}, shift(body.lines, 1)...)
	body.name = name
	return body
}

func rolesTable(roles []string) string {
	quoted := make([]string, len(roles))
	for i, r := range roles {
		quoted[i] = "'" + r + "'"
	}
	return "{ " + strings.Join(quoted, ", ") + " }"
}
