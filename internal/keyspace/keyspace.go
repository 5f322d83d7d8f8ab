// Package keyspace names echo_mq's Redis keys and validates the queue names
// and job ids that go into them.
//
// Every key of a queue carries the queue name as a Redis Cluster hash tag,
// "<prefix>:{<queue>}:...", so a queue's keys share one slot and every script
// stays single-slot. Names are validated before they reach a key: no "{",
// "}", ":", space or control character ever does.
package keyspace

import (
	"strings"
)

// DefaultPrefix is the key prefix when none is configured.
const DefaultPrefix = "emq"

// ValidQueueName reports whether name may name a queue: 1 to 100 of
// [A-Za-z0-9._-], not only dots ("." and ".." are path segments that
// clients rewrite, so such a queue could not be addressed).
func ValidQueueName(name string) bool {
	return validName(name, 100, false) && !onlyDots(name)
}

// ValidJobID reports whether id may name a job: 1 to 128 of [A-Za-z0-9._:-],
// not only dots, and not "batch", which names a route.
func ValidJobID(id string) bool {
	return id != "batch" && validName(id, 128, true) && !onlyDots(id)
}

// ValidGroupName reports whether g may name a job's group (flow control):
// 1 to 128 of [A-Za-z0-9._:-], not only dots (it is a path segment).
func ValidGroupName(g string) bool {
	return validName(g, 128, true) && !onlyDots(g)
}

// validName reports whether s is 1 to most bytes of [A-Za-z0-9._-], and
// ':' too when colon is set. (A loop, not a regexp: it runs for every id
// of every batch.)
func validName(s string, most int, colon bool) bool {
	if len(s) == 0 || len(s) > most {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			c == '.', c == '_', c == '-', c == ':' && colon:
		default:
			return false
		}
	}
	return true
}

func onlyDots(s string) bool { return strings.Trim(s, ".") == "" }

// Queue names the keys of one queue.
type Queue struct {
	prefix string
	name   string
	base   string
}

// NewQueue returns the keys of queue name under prefix. The name must be
// valid (ValidQueueName).
func NewQueue(prefix, name string) Queue {
	return Queue{prefix: prefix, name: name, base: prefix + ":{" + name + "}:"}
}

// Prefix is the key prefix of the queue's keys.
func (q Queue) Prefix() string { return q.prefix }

// Name is the queue's name.
func (q Queue) Name() string { return q.name }

// Base is the prefix of every key of the queue, "<prefix>:{<queue>}:".
func (q Queue) Base() string { return q.base }

// Job is the key of job id's row.
func (q Queue) Job(id string) string { return q.base + "job:" + id }

// Logs is the key of job id's log lines (lua/log_append.lua), deleted
// with its row.
func (q Queue) Logs(id string) string { return q.base + "logs:" + id }

// Meta is the key of the queue's meta hash (counters, paused flag).
func (q Queue) Meta() string { return q.base + "meta" }

// ReaperTurn is the key a replica's reaper sets while it has the queue's
// sweep, so that other replicas skip it; obliterate deletes it too.
func (q Queue) ReaperTurn() string { return q.base + "reaper" }

// Set is the key of the sorted set that holds the queue's jobs in state.
func (q Queue) Set(state string) string { return q.base + state }

// WakeChannel is the pub/sub channel on which the queue's scripts announce
// jobs that became pending.
func (q Queue) WakeChannel() string { return WakeChannelPrefix(q.prefix) + q.name }

// Keys are every key of the queue but its job rows, its batches and its
// jobs' dependants: the meta hash, the seven state sets, the event stream,
// the flow control keys, the schedule keys, the admission keys, the push
// keys, the history and the indexes of batches.
func (q Queue) Keys() []string {
	keys := []string{
		q.Meta(), q.Set("pending"), q.Set("active"), q.Set("delayed"),
		q.Set("completed"), q.Set("dead"), q.Set("cancelled"), q.Events(), q.Stats(),
		q.Set("waiting"), q.base + "batches", q.base + "batches_created", q.base + "batches_due",
	}
	for _, more := range [][]string{q.FlowKeys(), q.ScheduleKeys(), q.AdmissionKeys(), q.PushKeys()} {
		keys = append(keys, more...)
	}
	return keys
}

// Stats is the key of the queue's history: its last 24 hours, minute by
// minute (lua/history.lua).
func (q Queue) Stats() string { return q.base + "stats" }

// Push is the key of the queue's push target hash (lua/push.lua).
func (q Queue) Push() string { return q.base + "push" }

// PushErrors is the key of the list of the queue's last delivery errors,
// newest first (lua/push.lua).
func (q Queue) PushErrors() string { return q.base + "push_errors" }

// PushKeys are the keys a queue has once it had a push target
// (docs/design.md#push-delivery); lua/push.lua's PUSH_KEYS names the same.
func (q Queue) PushKeys() []string { return []string{q.Push(), q.PushErrors()} }

// AdmissionKeys are the keys a queue has once a job used a dedupe key or
// an expiry (docs/design.md#admission-and-lifetimes); lua/admission.lua's
// ADMISSION_KEYS names the same.
func (q Queue) AdmissionKeys() []string {
	return []string{q.base + "dedupe", q.base + "dedupe_ttl", q.base + "expiring"}
}

// Batch is the key of batch id's hash (lua/batches.lua).
func (q Queue) Batch(id string) string { return q.base + "batch:" + id }

// BatchJobs is the key of the set of batch id's job ids.
func (q Queue) BatchJobs(id string) string { return q.base + "batch_jobs:" + id }

// Schedules is the key of the queue's schedules hash (lua/schedules.lua):
// each schedule's definition and record.
func (q Queue) Schedules() string { return q.base + "schedules" }

// ScheduleNames is the key of the queue's schedule names, in name order.
func (q Queue) ScheduleNames() string { return q.base + "schedule_names" }

// ScheduleDue is the key of the queue's schedules that will fire, by next
// tick.
func (q Queue) ScheduleDue() string { return q.base + "schedule_due" }

// ScheduleKeys are the keys a queue has once it has a schedule
// (docs/design.md#schedules); lua/schedules.lua's SCHEDULE_KEYS names the
// same.
func (q Queue) ScheduleKeys() []string {
	return []string{q.Schedules(), q.ScheduleNames(), q.ScheduleDue()}
}

// Flow is the key of the queue's flow control hash (lua/flow.lua): its
// groups' counters and flags and the rotation's turn.
func (q Queue) Flow() string { return q.base + "flow" }

// GroupPending is the key of the queue's grouped pending jobs, by group
// (lua/flow.lua).
func (q Queue) GroupPending() string { return q.base + "gpending" }

// FlowKeys are the keys a queue has once it uses flow control
// (docs/design.md#flow-control); lua/flow.lua's FLOW_KEYS names the same.
func (q Queue) FlowKeys() []string {
	return []string{q.GroupPending(), q.base + "rotation", q.base + "parked", q.base + "groups",
		q.base + "starts", q.Flow(), q.base + "held"}
}

// QueueNamesKey is the key of the registry of known queue names, a sorted
// set with every score 0 so that it pages by name (Registry). It has no
// hash tag: it is touched alone, outside the queues' scripts.
func QueueNamesKey(prefix string) string { return prefix + ":queue_names" }

// QueuesKey is the key of the set of known queue names of the releases
// before QueueNamesKey, still written beside it for their replicas during
// a rolling upgrade (Registry). It has no hash tag: it is touched outside
// any script.
func QueuesKey(prefix string) string { return prefix + ":queues" }

// PushKey is the key of the set of queues that have (or had) a push
// target, which every replica's deliverer watches. No hash tag: it is
// touched outside any script.
func PushKey(prefix string) string { return prefix + ":push" }

// BatchesKey is the key of the set of queues that have (or had) a batch,
// outside any slot: the batch dispatchers look at their owed callbacks.
func BatchesKey(prefix string) string { return prefix + ":batches" }

// SchedulesKey is the key of the set of queues that have (or had)
// schedules, which every replica's timer watches. No hash tag: it is
// touched outside any script.
func SchedulesKey(prefix string) string { return prefix + ":schedules" }

// SchedulesChannel is the pub/sub channel on which a replica that changed
// a queue's schedules names the queue, so that the other replicas' timers
// read its next tick again.
func SchedulesChannel(prefix string) string { return prefix + ":schedules" }

// WakeChannelPrefix is what every queue's wake channel starts with; the
// queue name follows it.
func WakeChannelPrefix(prefix string) string { return prefix + ":wake:" }
