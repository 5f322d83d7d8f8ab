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
	"strconv"
	"strings"
)

//go:embed *.lua
var files embed.FS

// shared are the files every script runs after, in this order.
var shared = []string{"prelude.lua", "row.lua", "here.lua", "history.lua", "events.lua", "fence.lua", "flow.lua", "admission.lua", "lifecycle.lua", "batches.lua", "newjobs.lua", "schedules.lua", "push.lua"}

// Script is one of echo_mq's scripts.
type Script struct {
	name  string   // the file's name without .lua
	roles []string // its KEYS by role, from its header ("rows" last: one KEYS per row)
	argc  int      // the highest ARGV its header names
	body  string
	eval  source // the EVAL form: the shared files, then the body
	fn    string // its function's name in the library
}

// The scripts. Build a call with the script's XxxArgs (args.go) and run it
// with a Runner.
var (
	Enqueue        = mustScript("enqueue")
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
	Retry          = mustScript("retry")
	Promote        = mustScript("promote")
	List           = mustScript("list")
	Settings       = mustScript("settings")
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
)

// All lists every script.
var All = []*Script{
	Enqueue, Claim, Extend, Cancellation, Complete, CompleteBatch,
	Fail, Snooze, Cancel, Sweep, PromoteDue, Expire, Remove, Pause, Drain, Obliterate, Retry, Promote, List,
	Settings, GroupPause, Groups,
	SchedulePut, SchedulePause, ScheduleDelete, ScheduleDue, ScheduleFire, ScheduleList,
	PushPut, Stats, BatchCommit, BatchTake, BatchAck,
}

// library is every script as one Redis Functions library.
var library = newLibrary(All)

// LibraryName is the name the scripts' Functions library has on Redis:
// "emq_" and a hash of its text.
func LibraryName() string { return library.name }

// Hash is the SHA1 of the script's EVAL form, the name EVALSHA runs it by.
func (s *Script) Hash() string { return s.eval.hash }

// Source is the script's EVAL form: the shared files, then its own.
func (s *Script) Source() string { return s.eval.text }

// Roles are the roles of the script's KEYS, in order, from its header.
func (s *Script) Roles() []string { return s.roles }

// claims reports whether the script claims jobs (calls lifecycle.lua's
// plan_claim), so that bind reads the queue's state with its layout, in
// one call (prelude.lua).
func (s *Script) claims() bool { return strings.Contains(s.body, "plan_claim(") }

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
	var b builder
	b.line("local EVAL_KEYS, EVAL_ARGV = KEYS, ARGV")
	b.shared()
	b.wrapped(s)
	b.line(fmt.Sprintf("local refused = bind(EVAL_KEYS, EVAL_ARGV, %s, %t)", rolesTable(s.roles), s.claims()))
	b.line("if refused then return refused end")
	b.line("return stats_flush(main(), true)") // an EVAL keeps nothing for the next call
	s.eval = b.source()
	return s, nil
}

// newLibrary builds the library of scripts: the shared files once, then
// each script registered as a function. Its name carries a hash of its
// text, so that service versions side by side on one Redis (a rolling
// deploy) each call their own.
func newLibrary(scripts []*Script) source {
	var b builder
	b.shared()
	b.line("LIBRARY = true")
	for _, s := range scripts {
		b.line("do")
		b.wrapped(s)
		b.line(fmt.Sprintf("local roles = %s", rolesTable(s.roles)))
		b.line(fmt.Sprintf("redis.register_function('%s', function(keys, argv) local refused = bind(keys, argv, roles, %t) if refused then return refused end return stats_flush(main()) end)", "@FN_"+s.name, s.claims()))
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
