package lease_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/admin"
	"github.com/echo-mq/echo_mq/internal/batch"
	"github.com/echo-mq/echo_mq/internal/flow"
	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/lease"
	"github.com/echo-mq/echo_mq/internal/redistest"
	"github.com/echo-mq/echo_mq/internal/stall"
)

// FuzzStateMachine drives the scripts with random programs: sequences of
// verbs by three workers (and an operator) on one queue and a pool of four
// job ids, so that ids collide and tokens go stale. After every verb it
// reads the queue straight from Redis and checks
//
//   - the outcome the verb must have by docs/design.md, predicted from the state
//     before it (the fence above all: a call under a token that is not the
//     job's current one is refused with ErrStale or ErrGone, except a
//     repeated complete or fail, which is answered as the first time; the
//     test remembers each report itself, so rule 5 (docs/design.md#fencing) is held to the design,
//     not to what the row happens to keep);
//   - that a refused verb changed nothing;
//   - the invariants: a job is in exactly the set its state names; it is
//     active iff it has a lease; run_at iff delayed; finished_at iff
//     finished; no set holds an id without a row; a claim's token is
//     below 2^53 and differs from every token the job had, across removals
//     and an obliterate too, an active job's token is its latest claim's,
//     and no script writes a token counter to the meta hash; counts match
//     the sets and the meta totals match what the verbs did;
//   - flow control (docs/design.md#flow-control): once a program sets the
//     queue's settings, jobs j1 and j2 are enqueued in group "a" and j3 in
//     "b"; a claim never takes the queue past its concurrency or a group
//     past its group_concurrency, a fifo group never has two jobs in
//     flight, and the groups' counters, their index of pending jobs and
//     their fifo holders always agree with the rows.
//
// No execution sleeps: a lease lapses by the "lapse" verb, which sets the
// job's deadline in the active set to the past. Each byte pair of the input
// is one verb (see smMachine.step); at most smMaxOps run. Without -fuzz
// the seeds below and testdata/fuzz/FuzzStateMachine run as a test.
func FuzzStateMachine(f *testing.F) {
	for _, seed := range smSeeds {
		f.Add(seed)
	}
	rdb := redistest.Client(f)
	svc := smServices{
		rdb:    rdb,
		leases: lease.NewService(rdb, smPrefix, lease.KeepCompleted(smKeep)),
		stall:  stall.NewService(rdb, smPrefix),
		admin:  admin.NewService(rdb, smPrefix),
	}
	svc.batches = batch.NewService(rdb, smPrefix, svc.leases)
	f.Fuzz(func(t *testing.T, program []byte) {
		m := newSMMachine(t, svc)
		defer m.cleanup()
		for i := 0; i+1 < len(program) && i/2 < smMaxOps; i += 2 {
			m.step(program[i], program[i+1])
		}
	})
}

const (
	smPrefix = "emqfuzz"
	smMaxOps = 40
	smKeep   = 3 // completed jobs kept per queue: small, so that retention trims
)

// smIDs is the pool of job ids a program works on.
var smIDs = [4]string{"j0", "j1", "j2", "j3"}

// smQueues makes each execution's queue name unique.
var smQueues atomic.Uint64

// The verbs of a program. A step is two bytes: the first picks the verb
// (low 4 bits) and the worker (high bits mod 3), the second the job id (low
// 2 bits) and the verb's variant (the rest).
const (
	smOpEnqueue = iota
	smOpClaim
	smOpExtend
	smOpComplete
	smOpFail
	smOpCancel
	smOpRemove
	smOpSweep
	smOpLapse
	smOpRetry
	smOpPromote
	smOpPause
	smOpDrain
	smOpCancellation
	smOpCompleteBatch
	smOpMisc // promote due jobs, set the flow control settings, commit the batch, or obliterate the queue
	smVerbs
)

type smServices struct {
	rdb     redis.UniversalClient
	leases  *lease.Service
	stall   *stall.Service
	admin   *admin.Service
	batches *batch.Service
}

// smSnapshot is a queue as Redis holds it: its six sets, its job rows (of
// the pool's ids), its meta hash, and its flow control hash and index of
// grouped pending jobs.
type smSnapshot struct {
	sets     map[string]map[string]float64 // state -> id -> score
	rows     map[string]map[string]string  // id -> row; existing rows only
	meta     map[string]string
	flow     map[string]string
	gpending []string
	groups   []string          // the groups listed (GET .../groups)
	dedupe   map[string]string // dedupe key -> the id holding it
	// The keys of batches and dependencies (lua/batches.lua): the
	// program's batch hash, the batches owing a callback, and each pool
	// id's dependants.
	batch      map[string]string
	batchesDue []string
	deps       map[string][]string
}

func (s smSnapshot) row(id string) (map[string]string, bool) {
	r, has := s.rows[id]
	return r, has
}

// byScore lists the ids of a set in its order: by score, then id.
func (s smSnapshot) byScore(state string) []string {
	set := s.sets[state]
	ids := slices.Collect(maps.Keys(set))
	sort.Slice(ids, func(i, j int) bool {
		if set[ids[i]] != set[ids[j]] {
			return set[ids[i]] < set[ids[j]]
		}
		return ids[i] < ids[j]
	})
	return ids
}

// smMachine runs one program on one queue and knows what the workers know.
type smMachine struct {
	t     *testing.T
	svc   smServices
	ctx   context.Context
	queue string
	keys  keyspace.Queue

	last     smSnapshot          // the queue after the last verb
	fresh    bool                // last was read after the running verb
	held     [3]map[string]int64 // per worker: id -> token of its latest claim of it
	issued   []int64             // every token a claim gave, in order
	tokens   map[string][]int64  // id -> every token a claim gave it, in order, across removals
	maxToken int64               // the largest token a claim gave: one above it was never given
	// reported is what rule 5 of docs/design.md#fencing needs, kept apart from Redis:
	// id -> token -> the report ("complete", "fail") that succeeded under it.
	// Forgotten when the row goes (a removed job's token holds nothing).
	reported map[string]map[int64]string
	// The meta totals the verbs so far must have left.
	enqueued, completed, failed int64
	// grouping is set once the program set flow control settings: from
	// then on enqueues put jobs in groups (smGroupOf).
	grouping bool
	// batch is what the program did with its one batch (smBatchID).
	batch smBatch
	log   []string
}

func newSMMachine(t *testing.T, svc smServices) *smMachine {
	q := fmt.Sprintf("sm-%d", smQueues.Add(1))
	m := &smMachine{t: t, svc: svc, ctx: context.Background(), queue: q, keys: keyspace.NewQueue(smPrefix, q),
		reported: map[string]map[int64]string{}, tokens: map[string][]int64{}}
	for w := range m.held {
		m.held[w] = map[string]int64{}
	}
	m.last = m.read()
	return m
}

// cleanup deletes the queue's keys, so that the fuzzing Redis stays small.
func (m *smMachine) cleanup() {
	keys := append(m.keys.Keys(), m.keys.Job(smIDs[0]), m.keys.Job(smIDs[1]), m.keys.Job(smIDs[2]), m.keys.Job(smIDs[3]),
		m.keys.Batch(smBatchID), m.keys.BatchJobs(smBatchID))
	for _, id := range smIDs {
		keys = append(keys, m.keys.Base()+"deps:"+id)
	}
	m.svc.rdb.Del(m.ctx, keys...)
	m.svc.rdb.SRem(m.ctx, keyspace.QueuesKey(smPrefix), m.queue)
}

// fatalf fails the execution, showing the program so far.
func (m *smMachine) fatalf(format string, args ...any) {
	m.t.Helper()
	m.t.Fatalf("%s\nqueue %s, verbs so far:\n  %s", fmt.Sprintf(format, args...), m.queue, strings.Join(m.log, "\n  "))
}

func (m *smMachine) logf(format string, args ...any) {
	m.log = append(m.log, fmt.Sprintf(format, args...))
}

// read takes a snapshot of the queue in one round trip.
func (m *smMachine) read() smSnapshot {
	m.t.Helper()
	var sets []*redis.ZSliceCmd
	var rows []*redis.MapStringStringCmd
	var meta, flowHash, dedupe *redis.MapStringStringCmd
	var gpending, listed, due *redis.StringSliceCmd
	var batchHash *redis.MapStringStringCmd
	var deps []*redis.StringSliceCmd
	_, err := m.svc.rdb.Pipelined(m.ctx, func(p redis.Pipeliner) error {
		for _, state := range admin.States {
			sets = append(sets, p.ZRangeWithScores(m.ctx, m.keys.Set(state), 0, -1))
		}
		for _, id := range smIDs {
			rows = append(rows, p.HGetAll(m.ctx, m.keys.Job(id)))
		}
		meta = p.HGetAll(m.ctx, m.keys.Meta())
		flowHash = p.HGetAll(m.ctx, m.keys.Flow())
		gpending = p.ZRange(m.ctx, m.keys.GroupPending(), 0, -1)
		listed = p.ZRange(m.ctx, m.keys.Base()+"groups", 0, -1)
		dedupe = p.HGetAll(m.ctx, m.keys.AdmissionKeys()[0])
		batchHash = p.HGetAll(m.ctx, m.keys.Batch(smBatchID))
		due = p.ZRange(m.ctx, m.keys.Base()+"batches_due", 0, -1)
		for _, id := range smIDs {
			deps = append(deps, p.ZRange(m.ctx, m.keys.Base()+"deps:"+id, 0, -1))
		}
		return nil
	})
	if err != nil {
		m.fatalf("read: %v", err)
	}
	s := smSnapshot{sets: map[string]map[string]float64{}, rows: map[string]map[string]string{}, meta: meta.Val(),
		flow: flowHash.Val(), gpending: gpending.Val(), groups: listed.Val(), dedupe: dedupe.Val(),
		batch: batchHash.Val(), batchesDue: due.Val(), deps: map[string][]string{}}
	for i, id := range smIDs {
		if d := deps[i].Val(); len(d) > 0 {
			s.deps[id] = d
		}
	}
	for i, state := range admin.States {
		s.sets[state] = map[string]float64{}
		for _, z := range sets[i].Val() {
			s.sets[state][z.Member.(string)] = z.Score
		}
	}
	for i, id := range smIDs {
		if row := rows[i].Val(); len(row) > 0 {
			s.rows[id] = row
		}
	}
	return s
}

// serverMs is the Redis server's clock, the one the scripts use.
func (m *smMachine) serverMs() int64 {
	m.t.Helper()
	now, err := m.svc.rdb.Time(m.ctx).Result()
	if err != nil {
		m.fatalf("TIME: %v", err)
	}
	return now.UnixMilli()
}

// step runs one verb, then checks the queue.
func (m *smMachine) step(a, b byte) {
	m.t.Helper()
	verb, w := int(a)%smVerbs, int(a)/smVerbs%3
	id, v := smIDs[b&3], int(b>>2)
	m.fresh = false
	switch verb {
	case smOpEnqueue:
		m.enqueue(id, v)
	case smOpClaim:
		m.claim(w, v)
	case smOpExtend:
		m.extend(w, id, v)
	case smOpComplete:
		m.complete(w, id, v)
	case smOpFail:
		if v/8 >= 6 {
			m.snooze(w, id, v)
		} else {
			m.fail(w, id, v)
		}
	case smOpCancel:
		m.cancel(w, id, v)
	case smOpRemove:
		m.remove(id, v)
	case smOpSweep:
		m.sweep(v)
	case smOpLapse:
		m.lapse(id)
	case smOpRetry:
		m.retry(id)
	case smOpPromote:
		m.promote(id)
	case smOpPause:
		m.pause()
	case smOpDrain:
		m.drain()
	case smOpCancellation:
		m.cancellation(w, id, v)
	case smOpCompleteBatch:
		m.completeBatch(w, v)
	case smOpMisc:
		switch v % 4 {
		case 3:
			m.obliterate(v)
		case 0:
			m.promoteDue()
		case 1:
			if v/4%2 == 1 {
				m.commit()
			} else {
				m.setFlow(v)
			}
		default:
			m.setFlow(v)
		}
	}
	if !m.fresh { // the verb did not read the queue itself
		m.last = m.read()
	}
	for id := range m.reported {
		if _, exists := m.last.row(id); !exists {
			delete(m.reported, id)
		}
	}
	m.checkInvariants(m.last)
}

// after reads the queue after a verb; the step checks the invariants.
func (m *smMachine) after() smSnapshot {
	m.t.Helper()
	m.last, m.fresh = m.read(), true
	return m.last
}

// smOutcome is how a verb ended, by the error it returned.
type smOutcome string

const (
	smOK      smOutcome = "ok"
	smStale   smOutcome = "stale"
	smGone    smOutcome = "gone"
	smState   smOutcome = "state"
	smInvalid smOutcome = "invalid"
)

func (m *smMachine) outcomeOf(err error) smOutcome {
	m.t.Helper()
	switch {
	case err == nil:
		return smOK
	case errors.Is(err, job.ErrStale):
		return smStale
	case errors.Is(err, job.ErrGone):
		return smGone
	case errors.Is(err, job.ErrState):
		return smState
	case errors.Is(err, job.ErrInvalid):
		return smInvalid
	}
	m.fatalf("unexpected error: %v", err)
	return ""
}

// want fails the execution unless err is the outcome predicted.
func (m *smMachine) want(what string, err error, want smOutcome) smOutcome {
	m.t.Helper()
	got := m.outcomeOf(err)
	m.logf("%s -> %s", what, got)
	if got != want {
		m.fatalf("%s: got %s (%v), want %s", what, got, err, want)
	}
	return got
}

// unchanged fails the execution unless the queue is as before a refused verb.
func (m *smMachine) unchanged(what string, before smSnapshot) {
	m.t.Helper()
	if after := m.after(); !reflect.DeepEqual(after, before) {
		m.fatalf("%s was refused but changed the queue:\nbefore %+v\nafter  %+v", what, before, after)
	}
}

// fenced predicts a holder's call on id under tok from the row before it.
// verb is "complete", "fail" or "snooze" for the calls a holder may
// repeat, "" for the others.
func smFenced(row map[string]string, exists bool, tok int64, verb string) (want smOutcome, repeat bool) {
	ts := strconv.FormatInt(tok, 10)
	switch {
	case !exists:
		return smGone, false
	case verb != "" && strings.Contains(row["outcomes"], " "+verb+":"+ts+" "):
		return smOK, true
	case row["token"] != ts || row["state"] != job.StateActive:
		return smStale, false
	}
	return smOK, false
}

// report predicts a holder's complete or fail from the row before it, as
// smFenced does, and then holds it to rule 5 of docs/design.md#fencing: a report repeated
// under a token whose same report succeeded is answered as the first time
// (the job as it is, nothing changed), whatever happened to the job since,
// while its row exists.
func (m *smMachine) report(what, id string, tok int64, verb string) (want smOutcome, repeat bool) {
	m.t.Helper()
	row, exists := m.last.row(id)
	want, repeat = smFenced(row, exists, tok, verb)
	if exists && m.reported[id][tok] == verb && !repeat {
		m.logf("%s -> ? (rule 5: its %s under token %d succeeded before; the row says outcomes %q)", what, verb, tok, row["outcomes"])
		return smOK, true
	}
	return want, repeat
}

// remember records a report that succeeded (not a repeat) under tok.
func (m *smMachine) remember(id string, tok int64, verb string) {
	if m.reported[id] == nil {
		m.reported[id] = map[int64]string{}
	}
	m.reported[id][tok] = verb
}

// tokenFor picks the token worker w names on a call about id by v%8: its
// own (0-4), another worker's for the id (5), any token given so far (6), or
// one never given (7).
func (m *smMachine) tokenFor(w int, id string, v int) (int64, string) {
	switch v % 8 {
	case 5:
		for o := 1; o < 3; o++ {
			if tok, has := m.held[(w+o)%3][id]; has {
				return tok, fmt.Sprintf("w%d's", (w+o)%3)
			}
		}
	case 6:
	case 7:
		return m.maxToken + 1, "unissued"
	default:
		if tok, has := m.held[w][id]; has {
			return tok, "own"
		}
	}
	if len(m.issued) > 0 {
		return m.issued[v%len(m.issued)], "issued"
	}
	return 1, "never issued"
}

func smNum(row map[string]string, field string) int64 {
	n, _ := strconv.ParseInt(row[field], 10, 64)
	return n
}

// smMaxAttempts reads a row's attempt budget: absent is the default.
func smMaxAttempts(row map[string]string) int64 {
	if _, ok := row["max_attempts"]; !ok {
		return lease.DefaultMaxAttempts
	}
	return smNum(row, "max_attempts")
}

func (m *smMachine) enqueue(id string, v int) {
	m.t.Helper()
	nj := lease.NewJob{ID: id, Payload: []byte(fmt.Sprintf(`{"v":%d}`, v))}
	if m.grouping {
		nj.Group = smGroupOf[id]
	}
	switch v % 6 {
	case 1:
		nj.Delay = time.Hour
	case 2:
		nj.MaxAttempts = 1
	case 3:
		nj.Delay = time.Millisecond // due almost at once: a claim promotes it
	case 4:
		nj.Priority = 3
		nj.Backoff = &lease.Backoff{Delay: 0, MaxDelay: 0} // fixed 0: a retry is pending at once
	case 5:
		nj.MaxAttempts = 2
		nj.Backoff = &lease.Backoff{Exponential: true, Delay: time.Minute, MaxDelay: time.Hour}
	}
	if v >= 16 && v < 48 {
		nj.Group = "" // a job with dependencies has no group
		m.enqueueLinked(nj, v)
		return
	}
	option := smOptions(&nj, v)
	before := m.last
	out, err := m.svc.leases.Enqueue(m.ctx, m.queue, []lease.NewJob{nj})
	what := fmt.Sprintf("enqueue %s variant %d%s", id, v%6, option)
	m.want(what, err, smOK)
	_, exists := before.row(id)
	holder := ""
	if nj.Dedupe.Key != "" && !exists {
		holder = before.holder(nj.Dedupe.Key)
	}
	if out[0].Created == (exists || holder != "") {
		m.fatalf("%s: created = %v, but the job existed before: %v, the key's holder %q", what, out[0].Created, exists, holder)
	}
	if holder != "" && out[0].Job.ID != holder {
		m.fatalf("%s: answered %s, want %s, which holds the key", what, out[0].Job.ID, holder)
	}
	if exists || holder != "" {
		m.unchanged(what+" (existing)", before)
		return
	}
	m.enqueued++
	row, _ := m.after().row(id)
	wantState := job.StatePending
	if nj.Delay > 0 {
		wantState = job.StateDelayed
	}
	if row["state"] != wantState || out[0].Job.State != wantState {
		m.fatalf("%s: state %q (answered %q), want %s", what, row["state"], out[0].Job.State, wantState)
	}
	wantMax := nj.MaxAttempts
	if wantMax == 0 {
		wantMax = lease.DefaultMaxAttempts
	}
	if smMaxAttempts(row) != int64(wantMax) || out[0].Job.MaxAttempts != wantMax {
		m.fatalf("%s: max_attempts %q (answered %d), want %d", what, row["max_attempts"], out[0].Job.MaxAttempts, wantMax)
	}
	_, stored := row["max_attempts"]
	if stored != (wantMax != lease.DefaultMaxAttempts) {
		m.fatalf("%s: max_attempts stored %v for %d: a row stores only what differs from the default", what, stored, wantMax)
	}
}

// smKey is the one dedupe key programs use, so that enqueues collide on it.
const smKey = "k"

// smOptions gives nj one admission option for the variants from 48 up
// (docs/design.md#admission-and-lifetimes) and names it for the log: an
// until_done dedupe key, an expiry or a timeout, both 30 s, which no
// program outlives; the lapse verb makes them pass.
func smOptions(nj *lease.NewJob, v int) string {
	if v < 48 {
		return ""
	}
	switch v / 2 % 3 {
	case 0:
		nj.Dedupe = lease.Dedupe{Key: smKey, Mode: lease.DedupeUntilDone}
		return " dedupe"
	case 1:
		nj.ExpiresIn = smLifetime
		return " expires"
	default:
		nj.Timeout = smLifetime
		return " timeout"
	}
}

// smLifetime is the expiry and timeout of the jobs that have one.
const smLifetime = 30 * time.Second

// holder is the job that holds dedupe key in s: the one whose row has the
// key and is pending, delayed or active ("" for none).
func (s smSnapshot) holder(key string) string {
	for id, row := range s.rows {
		if row["dedupe_key"] == key && smWaitingOrActive[row["state"]] {
			return id
		}
	}
	return ""
}

var smWaitingOrActive = map[string]bool{job.StatePending: true, job.StateDelayed: true, job.StateActive: true}

// smExpired reports whether row may not start at server time now: it has
// an expiry that came, and never started.
func smExpired(row map[string]string, now int64) bool {
	_, started := row["started_at"]
	return row["expires_at"] != "" && !started && smNum(row, "expires_at") <= now
}

// smTimedOut reports whether the run of row, active, reached its timeout
// by server time now.
func smTimedOut(row map[string]string, now int64) bool {
	return row["timeout_ms"] != "" && smNum(row, "started_at")+smNum(row, "timeout_ms") <= now
}

func (m *smMachine) claim(w, v int) {
	m.t.Helper()
	p := lease.ClaimParams{Count: 1 + v%2, Lease: time.Minute, Worker: fmt.Sprintf("w%d", w)}
	if v&2 != 0 {
		p.Lease = 100 * time.Millisecond // short: it may lapse on a slow machine, and the checks allow it
	}
	before := m.last
	c, err := m.svc.leases.Claim(m.ctx, m.queue, p)
	m.want(fmt.Sprintf("w%d claim count %d lease %v", w, p.Count, p.Lease), err, smOK)
	m.checkClaimed(w, "claim", before, p.Count, c.Jobs)
}

// checkClaimed checks jobs that a claim of up to count gave worker w on the
// queue as it was before, and has w remember their tokens.
func (m *smMachine) checkClaimed(w int, what string, before smSnapshot, count int, jobs []job.Job) {
	m.t.Helper()
	pending, delayed := before.byScore(job.StatePending), len(before.sets[job.StateDelayed])
	lo, hi := min(count, len(pending)), min(count, len(pending)+delayed)
	if before.meta["paused"] != "" {
		lo, hi = 0, 0
	}
	after := m.after()
	var got []string
	for _, j := range jobs {
		got = append(got, j.ID)
		m.logf("  w%d holds %s under token %d", w, j.ID, j.Token)
	}
	flowing := before.meta["flow"] != "" || before.meta["grouped"] != ""
	expired := m.expiredIn(before)
	if flowing || len(expired) > 0 {
		lo = 0 // a limit may hold the claim back (checkLimits says whether it held); an expired job is not handed out
	}
	if len(jobs) < lo || len(jobs) > hi {
		m.fatalf("%s gave %v, want %d to %d jobs (pending %v, %d delayed, paused %q)", what, got, lo, hi, pending, delayed, before.meta["paused"])
	}
	if flowing {
		m.checkLimits(what, before, after, jobs)
	} else if delayed == 0 && before.meta["paused"] == "" {
		// The first count pending that have not expired are taken; the
		// expired ones before them end cancelled (a claim takes on past
		// up to 100, more than this machine's jobs).
		var want []string
		for _, id := range pending {
			if !expired[id] && len(want) < count {
				want = append(want, id)
			}
		}
		if !slices.Equal(got, want) {
			m.fatalf("%s gave %v, want the first of pending in claim order %v but the expired %v", what, got, pending, expired)
		}
	}
	for id := range expired { // no expired job is ever claimed: it waits, or the claim cancelled it
		if row, _ := after.row(id); row["state"] != job.StatePending && row["state"] != job.StateDelayed &&
			(row["state"] != job.StateCancelled || row["cancel_reason"] != "expired") {
			m.fatalf("%s: %s, expired, is now %v; want it waiting or cancelled \"expired\"", what, id, row)
		}
	}
	for _, j := range jobs { // priority first: no waiting job of a lower priority number is passed over
		if flowing {
			break // groups take turns: priority holds within a group only
		}
		for _, id := range pending {
			if left, _ := after.row(id); left["state"] == job.StatePending && smNum(left, "priority") < int64(j.Priority) {
				m.fatalf("%s gave %s of priority %d, passing over %s of priority %s", what, j.ID, j.Priority, id, left["priority"])
			}
		}
	}
	seen := map[string]bool{}
	for _, j := range jobs {
		_, wasPending := before.sets[job.StatePending][j.ID]
		_, wasDelayed := before.sets[job.StateDelayed][j.ID]
		if _, held := before.sets[job.StateActive][j.ID]; held || seen[j.ID] || !(wasPending || wasDelayed) {
			m.fatalf("%s gave %s, which was not waiting (held %v, twice %v)", what, j.ID, held, seen[j.ID])
		}
		seen[j.ID] = true
		if j.Token <= 0 || j.Token >= 1<<53 {
			m.fatalf("%s gave %s token %d, want one in [1, 2^53)", what, j.ID, j.Token)
		}
		if slices.Contains(m.tokens[j.ID], j.Token) {
			m.fatalf("%s gave %s token %d again: a job never gets a token it had (its tokens %v)", what, j.ID, j.Token, m.tokens[j.ID])
		}
		m.tokens[j.ID] = append(m.tokens[j.ID], j.Token)
		m.maxToken = max(m.maxToken, j.Token)
		m.issued = append(m.issued, j.Token)
		m.held[w][j.ID] = j.Token
		row, _ := after.row(j.ID)
		prev, _ := before.row(j.ID)
		if j.State != job.StateActive || row["state"] != job.StateActive || smNum(row, "token") != j.Token {
			m.fatalf("%s gave %s as %s token %d; its row says %s token %s", what, j.ID, j.State, j.Token, row["state"], row["token"])
		}
		if leased := int64(after.sets[job.StateActive][j.ID]); j.LeaseExpiresAt.UnixMilli() != leased {
			m.fatalf("%s answered %s leased to %v; its active score is %d", what, j.ID, j.LeaseExpiresAt, leased)
		}
		if row["timeout_ms"] != "" && j.LeaseExpiresAt.UnixMilli() > smNum(row, "started_at")+smNum(row, "timeout_ms") {
			m.fatalf("%s leased %s to %v, past its start %s + timeout %s", what, j.ID, j.LeaseExpiresAt, row["started_at"], row["timeout_ms"])
		}
		if smNum(row, "attempts") != smNum(prev, "attempts")+1 || row["cancel_requested"] != "" {
			m.fatalf("%s: %s has attempts %s (was %s), cancel_requested %q: want one more attempt and no cancel", what, j.ID, row["attempts"], prev["attempts"], row["cancel_requested"])
		}
	}
}

// expiredIn is the set of waiting jobs of s whose expiry has come.
func (m *smMachine) expiredIn(s smSnapshot) map[string]bool {
	now := m.serverMs()
	expired := map[string]bool{}
	for id, row := range s.rows {
		if (row["state"] == job.StatePending || row["state"] == job.StateDelayed) && smExpired(row, now) {
			expired[id] = true
		}
	}
	return expired
}

func (m *smMachine) extend(w int, id string, v int) {
	m.t.Helper()
	tok, whose := m.tokenFor(w, id, v)
	before := m.last
	row, exists := before.row(id)
	want, _ := smFenced(row, exists, tok, "")
	if want == smOK && smTimedOut(row, m.serverMs()) {
		want = smStale // the run is over: no extend past the timeout
	}
	ext, err := m.svc.leases.Extend(m.ctx, m.queue, id, lease.ExtendParams{Token: tok, Lease: time.Minute})
	what := fmt.Sprintf("w%d extend %s with %s token %d", w, id, whose, tok)
	if m.want(what, err, want) != smOK {
		m.unchanged(what, before)
		return
	}
	after, _ := m.after().row(id)
	deadline := ext.LeaseExpiresAt.UnixMilli()
	if after["state"] != job.StateActive || after["lease_expires_at"] != "" ||
		m.last.sets[job.StateActive][id] != float64(deadline) {
		m.fatalf("%s: row %v, active score %v; want active with lease %d", what, after, m.last.sets[job.StateActive][id], deadline)
	}
	if end := smNum(row, "started_at") + smNum(row, "timeout_ms"); row["timeout_ms"] != "" && deadline > end {
		m.fatalf("%s: extended to %d, past the run's timeout at %d", what, deadline, end)
	}
	if ext.CancelRequested != (row["cancel_requested"] == "1") || ext.CancelReason != row["cancel_reason"] {
		m.fatalf("%s: answered cancel %v %q, the row has %q %q", what, ext.CancelRequested, ext.CancelReason, row["cancel_requested"], row["cancel_reason"])
	}
}

func (m *smMachine) complete(w int, id string, v int) {
	m.t.Helper()
	tok, whose := m.tokenFor(w, id, v)
	var next *lease.ClaimParams
	if v/8%2 == 1 {
		next = &lease.ClaimParams{Count: 1 + v/16%2, Lease: time.Minute, Worker: fmt.Sprintf("w%d", w)}
	}
	before := m.last
	what := fmt.Sprintf("w%d complete %s with %s token %d (claim next %v)", w, id, whose, tok, next != nil)
	want, repeat := m.report(what, id, tok, "complete")
	done, claimed, err := m.svc.leases.Complete(m.ctx, m.queue, id, tok, []byte(`{"by":"w"}`), next)
	if m.want(what, err, want) != smOK {
		m.unchanged(what, before)
		return
	}
	if repeat {
		if len(claimed) != 0 || done.ID != id {
			m.fatalf("%s: a repeat answered %s and claimed %d more, want the job and nothing more", what, done.ID, len(claimed))
		}
		m.unchanged(what+" (a repeat)", before)
		return
	}
	m.completed++
	m.remember(id, tok, "complete")
	if done.State != job.StateCompleted {
		m.fatalf("%s: answered state %s, want completed", what, done.State)
	}
	count := 0
	if next != nil {
		count = next.Count
	}
	m.checkClaimed(w, what+": next", m.released(before, []string{id}), count, claimed)
	m.wantFinished(what, id, job.StateCompleted)
}

// wantFinished fails unless job id is in state now, or (completed only) was
// deleted by retention.
func (m *smMachine) wantFinished(what, id, state string) {
	m.t.Helper()
	row, exists := m.last.row(id)
	if state == job.StateCompleted && !exists {
		return // trimmed: retention keeps only smKeep completed jobs
	}
	if row["state"] != state {
		m.fatalf("%s: %s is %q, want %s", what, id, row["state"], state)
	}
}

func (m *smMachine) fail(w int, id string, v int) {
	m.t.Helper()
	tok, whose := m.tokenFor(w, id, v)
	p := lease.FailParams{Token: tok, Error: fmt.Sprintf("boom %d", v)}
	mode := v / 8 % 4
	var retryIn time.Duration
	switch mode {
	case 0:
		p.RetryIn = &retryIn // retry now
	case 1:
		p.Fatal = true
	case 3:
		retryIn = time.Hour
		p.RetryIn = &retryIn
	} // 2: the job's backoff
	before := m.last
	row := before.rows[id]
	what := fmt.Sprintf("w%d fail %s with %s token %d (mode %d)", w, id, whose, tok, mode)
	want, repeat := m.report(what, id, tok, "fail")
	j, err := m.svc.leases.Fail(m.ctx, m.queue, id, p)
	if m.want(what, err, want) != smOK {
		m.unchanged(what, before)
		return
	}
	if repeat {
		m.unchanged(what+" (a repeat)", before)
		return
	}
	m.remember(id, tok, "fail")
	var wantState string
	attempts, maxAttempts := smNum(row, "attempts"), smMaxAttempts(row)
	switch {
	case row["cancel_requested"] == "1":
		wantState = job.StateCancelled
	case p.Fatal:
		wantState = job.StateDead
		m.failed++
	case attempts >= maxAttempts: // out of attempts
		wantState = job.StateDead
		m.failed++
	case p.RetryIn != nil && retryIn > 0:
		wantState = job.StateDelayed
	case p.RetryIn != nil:
		wantState = job.StatePending
	case smBackoffMs(row["backoff"], attempts) > 0:
		wantState = job.StateDelayed
	default: // a backoff of 0
		wantState = job.StatePending
	}
	after, _ := m.after().row(id)
	if j.State != wantState || after["state"] != wantState || after["last_error"] != p.Error ||
		!strings.HasPrefix(after["outcomes"], " fail:"+strconv.FormatInt(tok, 10)+" ") {
		m.fatalf("%s: answered %s, row %v; want %s with last_error %q", what, j.State, after, wantState, p.Error)
	}
}

// snooze has worker w snooze id under a token: for an hour, or (odd v) for
// 0 ms, pending again at once. Fenced as fail is, repeatable; the job
// gives its attempt back, keeps its stalls and frees its slot.
func (m *smMachine) snooze(w int, id string, v int) {
	m.t.Helper()
	tok, whose := m.tokenFor(w, id, v)
	delay := time.Hour
	if v%2 == 1 {
		delay = 0
	}
	before := m.last
	row := before.rows[id]
	what := fmt.Sprintf("w%d snooze %s with %s token %d for %v", w, id, whose, tok, delay)
	want, repeat := m.report(what, id, tok, "snooze")
	j, err := m.svc.leases.Snooze(m.ctx, m.queue, id, tok, delay)
	if m.want(what, err, want) != smOK {
		m.unchanged(what, before)
		return
	}
	if repeat {
		m.unchanged(what+" (a repeat)", before)
		return
	}
	m.remember(id, tok, "snooze")
	wantState := job.StatePending
	switch {
	case row["cancel_requested"] == "1":
		wantState = job.StateCancelled
	case delay > 0:
		wantState = job.StateDelayed
	}
	after, _ := m.after().row(id)
	wantAttempts := max(smNum(row, "attempts")-1, 0)
	if j.State != wantState || after["state"] != wantState || smNum(after, "attempts") != wantAttempts ||
		after["stalled"] != row["stalled"] || !strings.HasPrefix(after["outcomes"], " snooze:"+strconv.FormatInt(tok, 10)+" ") {
		m.fatalf("%s: answered %s, row %v; want %s with attempts %d and stalled %q as before", what, j.State, after,
			wantState, wantAttempts, row["stalled"])
	}
}

// backoffMs is fail.lua's retry delay after attempts under spec ("" for the
// default, exponential from a second, capped at an hour).
func smBackoffMs(spec string, attempts int64) int64 {
	if spec == "" {
		spec = "exponential:1000:3600000"
	}
	parts := strings.Split(spec, ":")
	delay, _ := strconv.ParseFloat(parts[1], 64)
	limit, _ := strconv.ParseFloat(parts[2], 64)
	if parts[0] == "exponential" {
		delay *= math.Pow(2, float64(max(attempts-1, 0)))
	}
	return int64(min(delay, limit))
}

func (m *smMachine) cancel(w int, id string, v int) {
	m.t.Helper()
	p := lease.CancelParams{}
	whose := "no"
	if v%2 == 1 {
		p.Token, whose = m.tokenFor(w, id, v/2)
	}
	if v%3 != 0 {
		p.Reason = fmt.Sprintf("reason %d", v)
	}
	before := m.last
	row, exists := before.row(id)
	st := row["state"]
	want, wantRequested := smOK, false
	switch {
	case !exists:
		want = smGone
	case st == job.StateCompleted || st == job.StateDead:
		want = smState
	case st == job.StateCancelled:
	case p.Token != 0 && (st != job.StateActive || row["token"] != strconv.FormatInt(p.Token, 10)):
		want = smStale
	case st == job.StateActive:
		wantRequested = true
	}
	j, requested, err := m.svc.leases.Cancel(m.ctx, m.queue, id, p)
	what := fmt.Sprintf("w%d cancel %s with %s token %d", w, id, whose, p.Token)
	if m.want(what, err, want) != smOK {
		m.unchanged(what, before)
		return
	}
	if requested != wantRequested {
		m.fatalf("%s: requested = %v, want %v (state was %s)", what, requested, wantRequested, st)
	}
	if st == job.StateCancelled {
		m.unchanged(what+" (already cancelled)", before)
		return
	}
	after, _ := m.after().row(id)
	if wantRequested {
		if after["state"] != job.StateActive || after["cancel_requested"] != "1" || (p.Reason != "" && after["cancel_reason"] != p.Reason) {
			m.fatalf("%s: row %v, want active with the cancel requested", what, after)
		}
		return
	}
	if j.State != job.StateCancelled || after["state"] != job.StateCancelled {
		m.fatalf("%s: answered %s, row %v; want cancelled", what, j.State, after)
	}
}

func (m *smMachine) remove(id string, v int) {
	m.t.Helper()
	force := v%2 == 1
	before := m.last
	row, exists := before.row(id)
	want := smOK
	switch {
	case !exists:
		want = smGone
	case row["state"] == job.StateActive && !force:
		want = smState
	}
	err := m.svc.admin.Remove(m.ctx, m.queue, id, force, admin.Actor{Name: "fuzz", Role: "admin"})
	what := fmt.Sprintf("remove %s force %v", id, force)
	if m.want(what, err, want) != smOK {
		m.unchanged(what, before)
		return
	}
	if _, still := m.after().row(id); still {
		m.fatalf("%s: the row is still there", what)
	}
}

func (m *smMachine) sweep(v int) {
	m.t.Helper()
	maxStalled := 1 + v%3
	before := m.last
	t0 := m.serverMs()
	s, err := m.svc.stall.Sweep(m.ctx, m.queue, stall.SweepParams{MaxStalled: maxStalled})
	t1 := m.serverMs()
	what := fmt.Sprintf("sweep max_stalled %d", maxStalled)
	m.want(what, err, smOK)
	m.logf("  swept %+v", s)
	after := m.after()
	moved := map[string]string{}
	for to, ids := range map[string][]string{job.StatePending: s.Recovered, job.StateDead: s.Dead, job.StateCancelled: s.Cancelled, "retried": s.Retried} {
		for _, id := range ids {
			if moved[id] != "" {
				m.fatalf("%s listed %s twice", what, id)
			}
			moved[id] = to
		}
	}
	for id, deadline := range before.sets[job.StateActive] {
		if deadline <= float64(t0) && moved[id] == "" {
			m.fatalf("%s left %s, whose lease lapsed at %v before %d", what, id, deadline, t0)
		}
		if deadline > float64(t1) && moved[id] != "" {
			m.fatalf("%s took %s, whose lease runs to %v after %d", what, id, deadline, t1)
		}
	}
	for id, to := range moved {
		row, _ := before.row(id)
		if _, was := before.sets[job.StateActive][id]; !was {
			m.fatalf("%s took %s, which was not active", what, id)
		}
		now, _ := after.row(id)
		if smTimedOut(row, t0) {
			m.checkTimedOut(what, id, to, row, now)
			continue
		}
		stalled := smNum(row, "stalled") + 1
		want := job.StatePending
		switch {
		case row["cancel_requested"] == "1":
			want = job.StateCancelled
		case stalled >= int64(maxStalled):
			want = job.StateDead
			m.failed++
		}
		if to != want || now["state"] != want || smNum(now, "stalled") != stalled {
			m.fatalf("%s moved %s to %s (row %v), want %s with stalled %d", what, id, to, now, want, stalled)
		}
		if want == job.StateDead && now["last_error"] != "stalled" {
			m.fatalf("%s dead-lettered %s with last_error %q, want stalled", what, id, now["last_error"])
		}
	}
	m.expire()
}

// expire runs the reaper's expire pass: it cancels exactly the waiting
// jobs whose expiry came, "expired", and nothing else.
func (m *smMachine) expire() {
	m.t.Helper()
	before := m.last
	want := m.expiredIn(before)
	ids, _, err := m.svc.stall.Expire(m.ctx, m.queue, 100)
	m.want("expire", err, smOK)
	after := m.after()
	if len(ids) != len(want) {
		m.fatalf("expire cancelled %v, want %v", ids, want)
	}
	for _, id := range ids {
		if row, _ := after.row(id); !want[id] || row["state"] != job.StateCancelled || row["cancel_reason"] != "expired" {
			m.fatalf("expire cancelled %s (row %v), want %v cancelled \"expired\"", id, row, want)
		}
	}
}

// checkTimedOut checks what a sweep did with job id (row before, now
// after), whose run reached its timeout: its attempt failed "timeout", not
// a stall (docs/design.md#admission-and-lifetimes).
func (m *smMachine) checkTimedOut(what, id, to string, row, now map[string]string) {
	m.t.Helper()
	attempts := smNum(row, "attempts")
	want, listed := job.StatePending, "retried"
	switch {
	case row["cancel_requested"] == "1":
		want, listed = job.StateCancelled, job.StateCancelled
	case attempts >= smMaxAttempts(row):
		want, listed = job.StateDead, job.StateDead
		m.failed++
	case smBackoffMs(row["backoff"], attempts) > 0:
		want = job.StateDelayed
	}
	if to != listed || now["state"] != want || now["stalled"] != row["stalled"] || now["last_error"] != "timeout" {
		m.fatalf("%s moved %s, timed out, to %s (row %v); want it listed %s, %s, last_error timeout, stalled %q",
			what, id, to, now, listed, want, row["stalled"])
	}
}

// lapse makes the lease of id lapse now, as if its holder went quiet: its
// deadline in the active set goes to the past (only if it is active). A
// run with a timeout is made to have started long ago, so that it reached
// its timeout; a waiting job with an expiry is made to have expired.
func (m *smMachine) lapse(id string) {
	m.t.Helper()
	row, _ := m.last.row(id)
	err := m.svc.rdb.ZAddXX(m.ctx, m.keys.Set(job.StateActive), redis.Z{Score: 0, Member: id}).Err()
	switch {
	case err != nil:
	case row["state"] == job.StateActive && row["timeout_ms"] != "":
		err = m.svc.rdb.HSet(m.ctx, m.keys.Job(id), "started_at", "1").Err()
	case smWaitingOrActive[row["state"]] && row["expires_at"] != "":
		err = m.svc.rdb.HSet(m.ctx, m.keys.Job(id), "expires_at", "1").Err()
		if err == nil {
			err = m.svc.rdb.ZAddXX(m.ctx, m.keys.AdmissionKeys()[2], redis.Z{Score: 1, Member: id}).Err()
		}
	}
	if err != nil {
		m.fatalf("lapse %s: %v", id, err)
	}
	m.logf("lapse %s", id)
	m.after()
}

func (m *smMachine) retry(id string) {
	m.t.Helper()
	before := m.last
	row, exists := before.row(id)
	want := smOK
	switch {
	case !exists:
		want = smGone
	case row["state"] != job.StateDead && row["state"] != job.StateCancelled:
		want = smState
	}
	j, err := m.svc.admin.Retry(m.ctx, m.queue, id, admin.Actor{Name: "fuzz", Role: "admin"})
	what := "retry " + id
	if m.want(what, err, want) != smOK {
		m.unchanged(what, before)
		return
	}
	after, _ := m.after().row(id)
	if j.State != job.StatePending || after["state"] != job.StatePending || after["attempts"] != "" || after["stalled"] != "" || after["cancel_requested"] != "" {
		m.fatalf("%s: answered %s, row %v; want pending with no attempts, stalls or cancel", what, j.State, after)
	}
}

func (m *smMachine) promote(id string) {
	m.t.Helper()
	before := m.last
	row, exists := before.row(id)
	want := smOK
	switch {
	case !exists:
		want = smGone
	case row["state"] != job.StateDelayed:
		want = smState
	}
	j, err := m.svc.admin.Promote(m.ctx, m.queue, id, admin.Actor{Name: "fuzz", Role: "admin"})
	what := "promote " + id
	if m.want(what, err, want) != smOK {
		m.unchanged(what, before)
		return
	}
	if after, _ := m.after().row(id); j.State != job.StatePending || after["state"] != job.StatePending {
		m.fatalf("%s: answered %s, row %v; want pending", what, j.State, after)
	}
}

func (m *smMachine) pause() {
	m.t.Helper()
	paused := m.last.meta["paused"] == ""
	info, err := m.svc.admin.SetPaused(m.ctx, m.queue, paused, admin.Actor{Name: "fuzz", Role: "admin"})
	what := fmt.Sprintf("set paused %v", paused)
	m.want(what, err, smOK)
	if info.Paused != paused || (m.after().meta["paused"] != "") != paused {
		m.fatalf("%s: answered paused %v, meta %v", what, info.Paused, m.last.meta)
	}
}

func (m *smMachine) drain() {
	m.t.Helper()
	before := m.last
	n, err := m.svc.admin.Drain(m.ctx, m.queue, admin.Actor{Name: "fuzz", Role: "admin"})
	m.want("drain", err, smOK)
	waiting := append(before.byScore(job.StatePending), before.byScore(job.StateDelayed)...)
	linked := before.meta["linked"] != ""
	if linked { // and those waiting for their dependencies
		waiting = append(waiting, before.byScore(job.StateWaiting)...)
	}
	after := m.after()
	if n != len(waiting) {
		m.fatalf("drain removed %d, want the %d waiting jobs %v", n, len(waiting), waiting)
	}
	for _, id := range waiting {
		if _, still := after.row(id); still {
			m.fatalf("drain left the row of %s", id)
		}
	}
	for id, row := range before.rows {
		if linked && row["depends_on"] != "" {
			continue // a dependant of a drained job is cancelled: checkLinks holds it
		}
		if !slices.Contains(waiting, id) && !reflect.DeepEqual(after.rows[id], row) {
			m.fatalf("drain changed %s, which was not waiting: %v -> %v", id, row, after.rows[id])
		}
	}
}

func (m *smMachine) cancellation(w int, id string, v int) {
	m.t.Helper()
	tok, whose := m.tokenFor(w, id, v)
	before := m.last
	row, exists := before.row(id)
	want, _ := smFenced(row, exists, tok, "")
	c, err := m.svc.leases.Cancellation(m.ctx, m.queue, id, tok)
	what := fmt.Sprintf("w%d cancellation %s with %s token %d", w, id, whose, tok)
	m.want(what, err, want)
	if want == smOK && (c.Requested != (row["cancel_requested"] == "1") || c.Reason != row["cancel_reason"]) {
		m.fatalf("%s: answered %+v, the row has %q %q", what, c, row["cancel_requested"], row["cancel_reason"])
	}
	m.unchanged(what, before)
}

func (m *smMachine) completeBatch(w int, v int) {
	m.t.Helper()
	var batch []lease.Completion
	for _, id := range smIDs {
		if tok, held := m.held[w][id]; held {
			batch = append(batch, lease.Completion{ID: id, Token: tok})
		}
	}
	if v%2 == 1 && len(batch) > 0 {
		batch = append(batch, batch[0]) // the same job twice: the second is a repeat
	}
	if v%4 >= 2 || len(batch) == 0 {
		id := smIDs[v/4%4]
		tok, _ := m.tokenFor(w, id, v/16)
		batch = append(batch, lease.Completion{ID: id, Token: tok})
	}
	var next *lease.ClaimParams
	if v&8 != 0 {
		next = &lease.ClaimParams{Count: 2, Lease: time.Minute}
	}
	before := m.last
	// Predict each item on the rows as the items before it left them.
	sim := map[string]map[string]string{}
	for id, row := range before.rows {
		sim[id] = maps.Clone(row)
	}
	wants, repeats := make([]smOutcome, len(batch)), make([]bool, len(batch))
	for i, c := range batch {
		row, exists := sim[c.ID]
		want, repeat := smFenced(row, exists, c.Token, "complete")
		if exists && m.reported[c.ID][c.Token] == "complete" { // rule 5, as in report
			want, repeat = smOK, true
		}
		wants[i], repeats[i] = want, repeat
		if want == smOK && !repeat {
			row["state"] = job.StateCompleted
			row["outcomes"] = " complete:" + strconv.FormatInt(c.Token, 10) + cmp.Or(row["outcomes"], " ")
			m.completed++
			m.remember(c.ID, c.Token, "complete")
		}
	}
	out, claimed, err := m.svc.leases.CompleteBatch(m.ctx, m.queue, batch, next)
	what := fmt.Sprintf("w%d complete batch %+v (claim next %v)", w, batch, next != nil)
	m.want(what, err, smOK)
	if len(out) != len(batch) {
		m.fatalf("%s: %d outcomes for %d jobs", what, len(out), len(batch))
	}
	// A batch that repeats a complete made before it (sent again after a
	// lost answer) claims nothing next, as complete.lua; a repeat of a
	// complete made earlier in the same batch does not count.
	repeated, doneHere := false, map[string]bool{}
	for i, o := range out {
		got := m.outcomeOf(o.Err)
		trimmed := got == smGone && sim[batch[i].ID]["state"] == job.StateCompleted
		if got != wants[i] && !trimmed {
			m.fatalf("%s: job %d (%s token %d) got %s (%v), want %s", what, i, batch[i].ID, batch[i].Token, got, o.Err, wants[i])
		}
		if got == smOK {
			repeated = repeated || repeats[i] && !doneHere[batch[i].ID]
			doneHere[batch[i].ID] = true
		}
	}
	count := 0
	if next != nil && !repeated {
		count = next.Count
	}
	var completedHere []string
	for id := range doneHere {
		completedHere = append(completedHere, id)
	}
	m.checkClaimed(w, what+": next", m.released(before, completedHere), count, claimed)
	for id, row := range sim {
		if row["state"] == job.StateCompleted {
			m.wantFinished(what, id, job.StateCompleted)
		}
	}
}

func (m *smMachine) promoteDue() {
	m.t.Helper()
	before := m.last
	t0 := m.serverMs()
	n, err := m.svc.stall.PromoteDue(m.ctx, m.queue, 1000)
	m.want("promote due", err, smOK)
	after := m.after()
	due := 0
	for id, runAt := range before.sets[job.StateDelayed] {
		_, still := after.sets[job.StateDelayed][id]
		if runAt <= float64(t0) {
			due++
			if still {
				m.fatalf("promote due left %s, due at %v before %d", id, runAt, t0)
			}
		}
	}
	if n < due || n > len(before.sets[job.StateDelayed]) {
		m.fatalf("promote due moved %d, want %d to %d", n, due, len(before.sets[job.StateDelayed]))
	}
}

func (m *smMachine) obliterate(v int) {
	m.t.Helper()
	force := v&16 != 0
	before := m.last
	want := smOK
	if !force && len(before.sets[job.StateActive]) > 0 {
		want = smState
	}
	_, err := m.svc.admin.Obliterate(m.ctx, m.queue, force)
	what := fmt.Sprintf("obliterate force %v", force)
	if m.want(what, err, want) != smOK {
		m.unchanged(what, before)
		return
	}
	after := m.after()
	if len(after.rows) != 0 || len(after.meta) != 0 {
		m.fatalf("%s left rows %v and meta %v", what, after.rows, after.meta)
	}
	m.enqueued, m.completed, m.failed = 0, 0, 0
	m.batch = smBatch{}
}

// smGroupOf is each id's group once a program uses flow control.
var smGroupOf = map[string]string{"j0": "", "j1": "a", "j2": "a", "j3": "b"}

// smSettings are the flow control settings a program may set, by variant.
var smSettings = []flow.Settings{
	{},
	{Concurrency: intp(1)},
	{Concurrency: intp(2)},
	{GroupConcurrency: intp(1)},
	{FIFO: true},
	{Concurrency: intp(2), GroupConcurrency: intp(1), FIFO: true},
}

// setFlow puts one of smSettings on the queue, and from then on jobs are
// enqueued in groups.
func (m *smMachine) setFlow(v int) {
	m.t.Helper()
	s := smSettings[(v/4)%len(smSettings)]
	err := m.svc.admin.SetSettings(m.ctx, m.queue, s, "{}", admin.Actor{Name: "fuzz", Role: "admin"})
	m.want(fmt.Sprintf("settings %q", s.Encode()), err, smOK)
	m.grouping = true
	if got := m.after().meta["flow"]; got != s.Encode() {
		m.fatalf("after settings %q meta flow is %q", s.Encode(), got)
	}
}

// smInFlight counts the jobs of group g in after that hold its place: active,
// or delayed for a retry (an attempt made).
func smInFlight(after smSnapshot, g string) (active, inFlight int) {
	for _, row := range after.rows {
		if row["group"] != g {
			continue
		}
		switch {
		case row["state"] == job.StateActive:
			active++
			inFlight++
		case row["state"] == job.StateDelayed && smNum(row, "attempts") > 0:
			inFlight++
		}
	}
	return active, inFlight
}

// checkLimits checks that a claim under flow control kept the limits of the
// settings it ran under: the queue's concurrency, and for each group it
// took a job of, its group_concurrency and fifo order.
func (m *smMachine) checkLimits(what string, before, after smSnapshot, jobs []job.Job) {
	m.t.Helper()
	if len(jobs) == 0 {
		return
	}
	s, err := flow.Decode(before.meta["flow"])
	if err != nil {
		m.fatalf("meta flow %q: %v", before.meta["flow"], err)
	}
	if s.Concurrency != nil && len(after.sets[job.StateActive]) > *s.Concurrency {
		m.fatalf("%s left %d jobs active, concurrency %d", what, len(after.sets[job.StateActive]), *s.Concurrency)
	}
	for _, j := range jobs {
		if j.Group == "" {
			continue
		}
		active, inFlight := smInFlight(after, j.Group)
		if s.GroupConcurrency != nil && active > *s.GroupConcurrency {
			m.fatalf("%s left %d jobs of group %s active, group_concurrency %d", what, active, j.Group, *s.GroupConcurrency)
		}
		if s.FIFO && inFlight > 1 {
			m.fatalf("%s started %s while group %s, fifo, had another job in flight (%d in all)", what, j.ID, j.Group, inFlight)
		}
	}
}

// checkFlow checks that the flow control bookkeeping agrees with the rows:
// each group's active and delayed counters, the index of grouped pending
// jobs, and that a fifo holder is a job of its group not yet finished.
func (m *smMachine) checkFlow(s smSnapshot) {
	m.t.Helper()
	var indexed []string
	for _, member := range s.gpending {
		parts := strings.Split(member, "|")
		indexed = append(indexed, parts[len(parts)-1])
	}
	var pendingGrouped []string
	counts := map[string]int64{}
	for id, row := range s.rows {
		g := row["group"]
		if g == "" {
			continue
		}
		if !smFinished[row["state"]] && !slices.Contains(s.groups, g) {
			m.fatalf("%s of group %s is %s, but the group is not listed (%v)", id, g, row["state"], s.groups)
		}
		switch row["state"] {
		case job.StatePending:
			pendingGrouped = append(pendingGrouped, id)
		case job.StateActive:
			counts["a:"+g]++
		case job.StateDelayed:
			counts["d:"+g]++
		}
	}
	slices.Sort(indexed)
	slices.Sort(pendingGrouped)
	if !slices.Equal(indexed, pendingGrouped) {
		m.fatalf("the group index holds %v, the grouped pending jobs are %v", s.gpending, pendingGrouped)
	}
	for _, g := range []string{"a", "b"} {
		for _, c := range []string{"a:", "d:"} {
			if got := smNum(s.flow, c+g); got != counts[c+g] {
				m.fatalf("flow %s%s = %d, the rows say %d (flow %v)", c, g, got, counts[c+g], s.flow)
			}
		}
		if holder, has := s.flow["h:"+g]; has {
			row, exists := s.row(holder)
			if !exists || row["group"] != g || smFinished[row["state"]] {
				m.fatalf("group %s is held by %s, which is %v", g, holder, row)
			}
		}
	}
}

var smFinished = map[string]bool{job.StateCompleted: true, job.StateDead: true, job.StateCancelled: true}

// checkInvariants checks what must hold after every verb.
func (m *smMachine) checkInvariants(s smSnapshot) {
	m.t.Helper()
	for st, members := range s.sets {
		for id := range members {
			if !slices.Contains(smIDs[:], id) {
				m.fatalf("the %s set holds %q, an id nobody enqueued", st, id)
			}
			row, exists := s.row(id)
			if !exists {
				m.fatalf("the %s set holds %s, which has no row", st, id)
			}
			if row["state"] != st {
				m.fatalf("the %s set holds %s, whose row says %q", st, id, row["state"])
			}
		}
	}
	for id, row := range s.rows {
		st := row["state"]
		var in []string
		for _, set := range admin.States {
			if _, has := s.sets[set][id]; has {
				in = append(in, set)
			}
		}
		if len(in) != 1 || in[0] != st {
			m.fatalf("%s is %q but in the sets %v, want exactly its state's", id, st, in)
		}
		// The lease is the job's active score alone (docs/design.md#fencing).
		if lease, has := row["lease_expires_at"]; has {
			m.fatalf("%s is %s with lease_expires_at %q in its row: the lease is its active score", id, st, lease)
		}
		if _, runAt := row["run_at"]; (st == job.StateDelayed) != runAt && st != job.StateWaiting {
			m.fatalf("%s is %s with run_at %q: run_at iff delayed (or waiting, until it is released)", id, st, row["run_at"])
		}
		if _, at := row["finished_at"]; smFinished[st] != at {
			m.fatalf("%s is %s with finished_at %q: finished_at iff finished", id, st, row["finished_at"])
		}
		if row["cancel_requested"] != "" && st != job.StateActive && st != job.StateCompleted && st != job.StateCancelled {
			m.fatalf("%s is %s with a cancel request pending", id, st)
		}
		if given := m.tokens[id]; st == job.StateActive && (len(given) == 0 || smNum(row, "token") != given[len(given)-1]) {
			m.fatalf("%s is active under token %s, want its latest claim's (its tokens %v)", id, row["token"], given)
		}
		if _, err := job.FromHash(m.queue, id, row); err != nil {
			m.fatalf("the row of %s does not parse: %v", id, err)
		}
	}
	// One job per live dedupe key, and the key's entry names it.
	if holder := s.holder(smKey); holder != "" {
		for id, row := range s.rows {
			if id != holder && row["dedupe_key"] == smKey && smWaitingOrActive[row["state"]] {
				m.fatalf("%s and %s both hold dedupe key %q", holder, id, smKey)
			}
		}
		if s.dedupe[smKey] != holder {
			m.fatalf("dedupe key %q names %q, but %s holds it", smKey, s.dedupe[smKey], holder)
		}
	}
	if counter, has := s.meta["token"]; has {
		m.fatalf("meta holds token %s: tokens are random (docs/design.md#fencing), no script keeps a counter", counter)
	}
	if got := smNum(s.meta, "failed"); got != m.failed {
		m.fatalf("meta failed = %d, want %d by the verbs that ran", got, m.failed)
	}
	for _, field := range []string{"enqueued", "completed"} {
		if counter, has := s.meta[field]; has {
			m.fatalf("meta holds %s %s: no script keeps that count any more", field, counter)
		}
	}
	// A queue's first enqueue stamps its layout (docs/design.md#layout).
	if layout := s.meta["layout"]; (m.enqueued > 0 && layout != "1") || (layout != "" && layout != "1") {
		m.fatalf("meta layout = %q after %d enqueues, want \"1\"", layout, m.enqueued)
	}
	info, err := m.svc.admin.Queue(m.ctx, m.queue)
	if err != nil {
		m.fatalf("Queue: %v", err)
	}
	for _, st := range admin.States {
		if info.Counts[st] != int64(len(s.sets[st])) {
			m.fatalf("Queue counts %v, but the %s set holds %d", info.Counts, st, len(s.sets[st]))
		}
	}
	if info.Paused != (s.meta["paused"] != "") {
		m.fatalf("Queue paused = %v, meta %v", info.Paused, s.meta)
	}
	m.checkFlow(s)
	m.checkLinks(s)
}

// smProgram spells a seed: each op is a verb, a worker, a job (0-3) and a
// variant.
func smProgram(ops ...[4]int) []byte {
	var p []byte
	for _, o := range ops {
		p = append(p, byte(o[0]+smVerbs*o[1]), byte(o[2]|o[3]<<2))
	}
	return p
}

// smSeeds are hand-written programs, one per story docs/design.md tells.
var smSeeds = [][]byte{
	// The two paths of the hot path (docs/design.md#the-hot-path): j0 is
	// claimed plain, then j1 comes to depend on it while it runs, so its
	// complete takes the full path and claims j1 next; meanwhile the queue
	// gets flow control settings, so the claims after take the full path
	// too, and j2, enqueued plain, is completed on it.
	smProgram(
		[4]int{smOpEnqueue, 0, 0, 0}, [4]int{smOpEnqueue, 0, 2, 0}, [4]int{smOpClaim, 0, 0, 0},
		[4]int{smOpEnqueue, 0, 1, 40}, [4]int{smOpMisc, 0, 0, 2}, [4]int{smOpComplete, 0, 0, 8},
		[4]int{smOpClaim, 1, 0, 0}, [4]int{smOpComplete, 1, 2, 0}, [4]int{smOpCompleteBatch, 0, 0, 1}),
	// Dependencies: j1 waits for j0, j2 for j1 and runs anyway; j0 dies,
	// which cancels j1, which releases j2; j3 then waits for j2, which
	// completes and releases it.
	smProgram(
		[4]int{smOpEnqueue, 0, 0, 2}, [4]int{smOpEnqueue, 0, 1, 36}, [4]int{smOpEnqueue, 0, 2, 38},
		[4]int{smOpClaim, 0, 0, 0}, [4]int{smOpFail, 0, 0, 8}, [4]int{smOpEnqueue, 0, 3, 36},
		[4]int{smOpClaim, 1, 0, 0}, [4]int{smOpComplete, 1, 2, 0}, [4]int{smOpClaim, 2, 0, 0},
		[4]int{smOpComplete, 2, 3, 0}),
	// A batch: j0 and j1 join it open, j2 waits in it for j1; the jobs end
	// (one removed, one retried from dead before the commit); the commit
	// makes it done once the last ends; a later join is refused.
	smProgram(
		[4]int{smOpEnqueue, 0, 0, 18}, [4]int{smOpEnqueue, 0, 1, 20}, [4]int{smOpEnqueue, 0, 2, 26},
		[4]int{smOpClaim, 0, 0, 0}, [4]int{smOpFail, 0, 0, 8}, [4]int{smOpRetry, 0, 0, 0},
		[4]int{smOpClaim, 1, 0, 1}, [4]int{smOpComplete, 1, 1, 0}, [4]int{smOpMisc, 0, 0, 5},
		[4]int{smOpRemove, 0, 0, 0}, [4]int{smOpClaim, 2, 0, 0}, [4]int{smOpComplete, 2, 2, 0},
		[4]int{smOpEnqueue, 0, 3, 16}, [4]int{smOpDrain, 0, 0, 0}),
	// A complete with claim-next hands out the job it released (found by
	// the fuzzer: j2 waits for j1, and j1's complete claims j2 next).
	smProgram(
		[4]int{smOpEnqueue, 0, 1, 0}, [4]int{smOpEnqueue, 0, 2, 39}, [4]int{smOpClaim, 0, 0, 0},
		[4]int{smOpComplete, 0, 1, 8}, [4]int{smOpCompleteBatch, 0, 0, 1}),
	// A drain of a queue with a batch and a chain: the waiting jobs go too.
	smProgram(
		[4]int{smOpEnqueue, 0, 0, 16}, [4]int{smOpEnqueue, 0, 1, 24}, [4]int{smOpEnqueue, 0, 2, 32},
		[4]int{smOpMisc, 0, 0, 5}, [4]int{smOpDrain, 0, 0, 0}, [4]int{smOpEnqueue, 0, 3, 40},
		[4]int{smOpMisc, 0, 0, 19}),
	// Snoozes: under fifo flow control, a grouped job snoozed for 0 ms keeps
	// its group's head and its attempt, a repeat answers as the first time,
	// the old token is stale, a snooze for an hour frees the slot, and a
	// cancel requested meanwhile cancels at the next snooze.
	smProgram(
		[4]int{smOpMisc, 0, 0, 21}, [4]int{smOpEnqueue, 0, 1, 0}, [4]int{smOpEnqueue, 0, 2, 0},
		[4]int{smOpClaim, 0, 0, 0}, [4]int{smOpFail, 0, 1, 49}, [4]int{smOpFail, 0, 1, 49},
		[4]int{smOpExtend, 0, 1, 0}, [4]int{smOpClaim, 1, 0, 0}, [4]int{smOpFail, 1, 1, 48},
		[4]int{smOpClaim, 2, 0, 0}, [4]int{smOpCancel, 0, 2, 1}, [4]int{smOpFail, 2, 2, 48},
		[4]int{smOpPromote, 0, 1, 0}, [4]int{smOpClaim, 0, 0, 0}, [4]int{smOpFail, 0, 1, 24}),
	// A job's life, a repeated complete, and a late fail.
	smProgram(
		[4]int{smOpEnqueue, 0, 0, 0}, [4]int{smOpClaim, 0, 0, 0}, [4]int{smOpExtend, 0, 0, 0},
		[4]int{smOpCancellation, 0, 0, 0}, [4]int{smOpComplete, 0, 0, 0}, [4]int{smOpComplete, 0, 0, 0},
		[4]int{smOpFail, 0, 0, 0}),
	// A lapsed lease: extendable until swept; then the old holder is stale.
	smProgram(
		[4]int{smOpEnqueue, 0, 0, 0}, [4]int{smOpClaim, 0, 0, 0}, [4]int{smOpLapse, 0, 0, 0},
		[4]int{smOpExtend, 0, 0, 0}, [4]int{smOpLapse, 0, 0, 0}, [4]int{smOpSweep, 0, 0, 1},
		[4]int{smOpExtend, 0, 0, 0}, [4]int{smOpClaim, 1, 0, 0}, [4]int{smOpComplete, 0, 0, 0},
		[4]int{smOpFail, 0, 0, 0}, [4]int{smOpComplete, 1, 0, 0}),
	// Cancels: an active job's holder learns it and fails; a delayed one at once.
	smProgram(
		[4]int{smOpEnqueue, 0, 0, 0}, [4]int{smOpEnqueue, 0, 1, 1}, [4]int{smOpClaim, 0, 0, 0},
		[4]int{smOpCancel, 1, 0, 2}, [4]int{smOpExtend, 0, 0, 0}, [4]int{smOpFail, 0, 0, 0},
		[4]int{smOpCancel, 1, 1, 0}, [4]int{smOpCancel, 0, 0, 1}, [4]int{smOpRetry, 0, 0, 0},
		[4]int{smOpRetry, 0, 1, 0}, [4]int{smOpClaim, 2, 0, 1}, [4]int{smOpCancel, 2, 0, 1}),
	// Removed and enqueued again: the old token never holds the new job.
	smProgram(
		[4]int{smOpEnqueue, 0, 0, 0}, [4]int{smOpClaim, 0, 0, 0}, [4]int{smOpRemove, 0, 0, 0},
		[4]int{smOpRemove, 0, 0, 1}, [4]int{smOpEnqueue, 0, 0, 0}, [4]int{smOpClaim, 1, 0, 0},
		[4]int{smOpComplete, 0, 0, 0}, [4]int{smOpExtend, 0, 0, 0}, [4]int{smOpComplete, 1, 0, 0}),
	// A poison job: one attempt, stalls, dead-lettered, retried, fails fatally.
	smProgram(
		[4]int{smOpEnqueue, 0, 0, 2}, [4]int{smOpClaim, 0, 0, 0}, [4]int{smOpLapse, 0, 0, 0},
		[4]int{smOpSweep, 0, 0, 0}, [4]int{smOpRetry, 0, 0, 0}, [4]int{smOpClaim, 1, 0, 0},
		[4]int{smOpFail, 1, 0, 8}, [4]int{smOpFail, 1, 0, 8}, [4]int{smOpRetry, 0, 0, 0}),
	// Pause, batch completes with a repeat, drain, obliterate, and claim again.
	smProgram(
		[4]int{smOpEnqueue, 0, 0, 0}, [4]int{smOpEnqueue, 0, 1, 0}, [4]int{smOpEnqueue, 0, 2, 4},
		[4]int{smOpEnqueue, 0, 3, 1}, [4]int{smOpPause, 0, 0, 0}, [4]int{smOpClaim, 0, 0, 1},
		[4]int{smOpPause, 0, 0, 0}, [4]int{smOpClaim, 0, 0, 1}, [4]int{smOpClaim, 1, 0, 1},
		[4]int{smOpCompleteBatch, 0, 0, 1}, [4]int{smOpCompleteBatch, 0, 0, 3}, [4]int{smOpDrain, 0, 0, 0},
		[4]int{smOpMisc, 0, 0, 3}, [4]int{smOpMisc, 0, 0, 19}, [4]int{smOpEnqueue, 0, 0, 0},
		[4]int{smOpClaim, 2, 0, 0}, [4]int{smOpComplete, 1, 0, 0}),
	// Retries by backoff and by promote; completes that claim the next.
	smProgram(
		[4]int{smOpEnqueue, 0, 0, 5}, [4]int{smOpEnqueue, 0, 1, 3}, [4]int{smOpEnqueue, 0, 2, 0},
		[4]int{smOpClaim, 0, 0, 0}, [4]int{smOpFail, 0, 0, 16}, [4]int{smOpPromote, 0, 0, 0},
		[4]int{smOpMisc, 0, 0, 0}, [4]int{smOpClaim, 1, 0, 1}, [4]int{smOpComplete, 1, 0, 10},
		[4]int{smOpComplete, 1, 1, 10}, [4]int{smOpComplete, 1, 2, 10}, [4]int{smOpComplete, 1, 3, 10}),
	// Out of attempts: a retry-now fail of the last attempt is dead.
	smProgram(
		[4]int{smOpEnqueue, 0, 0, 2}, [4]int{smOpClaim, 0, 0, 0}, [4]int{smOpFail, 0, 0, 0},
		[4]int{smOpRetry, 0, 0, 0}, [4]int{smOpClaim, 1, 0, 0}, [4]int{smOpFail, 1, 0, 24},
		[4]int{smOpEnqueue, 0, 1, 0}, [4]int{smOpClaim, 2, 1, 0}, [4]int{smOpFail, 2, 1, 16},
		[4]int{smOpPromote, 0, 1, 0}, [4]int{smOpClaim, 2, 1, 0}, [4]int{smOpFail, 2, 1, 0},
		[4]int{smOpClaim, 2, 1, 0}, [4]int{smOpFail, 2, 1, 0}, [4]int{smOpEnqueue, 0, 2, 4},
		[4]int{smOpClaim, 1, 2, 0}, [4]int{smOpFail, 1, 2, 16}),
	// A repeated fail is answered as the first time even after later
	// holders reported (the fuzzer found it forgotten once a second fail
	// was written over the first: b25a8e0).
	smProgram(
		[4]int{smOpEnqueue, 0, 0, 0}, [4]int{smOpClaim, 0, 0, 0}, [4]int{smOpFail, 0, 0, 0},
		[4]int{smOpClaim, 1, 0, 0}, [4]int{smOpFail, 1, 0, 0}, [4]int{smOpFail, 0, 0, 0},
		[4]int{smOpClaim, 2, 0, 0}, [4]int{smOpComplete, 2, 0, 0}, [4]int{smOpFail, 1, 0, 0},
		[4]int{smOpFail, 0, 0, 0}),
	// Flow control: fifo with group limits, grouped jobs claimed, failed
	// to a retry (the holder keeps its group), swept, cancelled, removed,
	// drained; then other settings and claim-next under them.
	smProgram(
		[4]int{smOpMisc, 0, 0, 21}, [4]int{smOpEnqueue, 0, 1, 0}, [4]int{smOpEnqueue, 0, 2, 0},
		[4]int{smOpEnqueue, 0, 3, 4}, [4]int{smOpEnqueue, 0, 0, 0}, [4]int{smOpClaim, 0, 0, 1},
		[4]int{smOpClaim, 1, 0, 1}, [4]int{smOpFail, 0, 1, 0}, [4]int{smOpClaim, 2, 0, 1},
		[4]int{smOpLapse, 0, 1, 0}, [4]int{smOpSweep, 0, 0, 1}, [4]int{smOpClaim, 0, 0, 1},
		[4]int{smOpCancel, 1, 2, 0}, [4]int{smOpComplete, 0, 1, 10}, [4]int{smOpRemove, 0, 3, 1},
		[4]int{smOpMisc, 0, 0, 13}, [4]int{smOpEnqueue, 0, 2, 1}, [4]int{smOpDrain, 0, 0, 0},
		[4]int{smOpEnqueue, 0, 2, 0}, [4]int{smOpEnqueue, 0, 3, 0}, [4]int{smOpClaim, 1, 0, 1},
		[4]int{smOpCompleteBatch, 1, 0, 1}, [4]int{smOpMisc, 0, 0, 3}, [4]int{smOpEnqueue, 0, 1, 0}),
	// Admission and lifetimes: j0 takes dedupe key k and j1's enqueue with
	// it is answered by j0; j2 expires before it starts and a claim passes
	// it over; j3's run reaches its timeout, its extend is refused and the
	// sweep fails the attempt "timeout"; j0 done, j1 takes the key; a
	// retried j2 waits without its expiry.
	smProgram(
		[4]int{smOpEnqueue, 0, 0, 48}, [4]int{smOpEnqueue, 0, 1, 48}, [4]int{smOpEnqueue, 0, 2, 50},
		[4]int{smOpEnqueue, 0, 3, 52}, [4]int{smOpLapse, 0, 2, 0}, [4]int{smOpClaim, 0, 0, 1},
		[4]int{smOpClaim, 1, 0, 1}, [4]int{smOpClaim, 2, 0, 0}, [4]int{smOpLapse, 0, 3, 0},
		[4]int{smOpExtend, 2, 3, 0}, [4]int{smOpSweep, 0, 0, 2}, [4]int{smOpComplete, 0, 0, 0},
		[4]int{smOpEnqueue, 0, 1, 48}, [4]int{smOpRetry, 0, 2, 0}, [4]int{smOpEnqueue, 0, 2, 50},
		[4]int{smOpLapse, 0, 2, 0}, [4]int{smOpSweep, 0, 0, 0}, [4]int{smOpEnqueue, 0, 2, 48}),
	// Raw bytes, for the mutator to start from.
	[]byte("\x00\x00\x01\x00\x02\x01\x03\x05\x04\x02\x05\x03\x06\x07\x07\x01\x08\x02\x09\x03\x0a\x00\x0b\x00\x0c\x00\x0d\x01\x0e\x03\x0f\x0f"),
}
