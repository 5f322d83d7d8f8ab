package lease_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/echo-mq/echo_mq/internal/batch"
	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/internal/lease"
)

// The state machine's batches and dependencies
// (docs/design.md#batches-and-dependencies): enqueue variants 16 to 47
// make jobs that join the program's one batch (16-31) or depend on the id
// before theirs in the pool (24-47), and the misc verb commits the batch.
// checkLinks holds every snapshot to what the design promises of them.

// smBatchID is the one batch a program works on.
const smBatchID = "b"

// smBatch is what a program did with its batch: made it (open), committed
// it, and how many jobs joined it.
type smBatch struct {
	made, committed bool
	total           int64
}

// smLive are the states of a job that has not ended.
var smLive = map[string]bool{job.StatePending: true, job.StateActive: true, job.StateDelayed: true, job.StateWaiting: true}

// enqueueLinked enqueues nj (its delay, attempts and backoff from the
// variant already) with a dependency, into the batch, or both, by v.
func (m *smMachine) enqueueLinked(nj lease.NewJob, v int) {
	m.t.Helper()
	id := nj.ID
	inBatch, dep := v < 32, ""
	if v >= 24 {
		dep = smIDs[(slices.Index(smIDs[:], id)+3)%len(smIDs)]
		nj.DependsOn = []string{dep}
		nj.RunOnFailure = v/2%2 == 1
	}
	before := m.last
	_, exists := before.row(id)
	depRow, depExists := before.row(dep)
	want := smOK
	switch {
	case dep != "" && !depExists && !exists:
		want = smInvalid // no such job: refused before anything (an id that exists is answered as it is)
	case inBatch && m.batch.committed:
		want = smState // a committed batch takes no more jobs
	}
	what := fmt.Sprintf("enqueue %s variant %d depends on %q (run %v) in the batch %v", id, v%6, dep, nj.RunOnFailure, inBatch)
	var out []lease.Enqueued
	var err error
	switch {
	case inBatch && !m.batch.made:
		_, out, _, err = m.svc.batches.Create(m.ctx, m.queue, smBatchID, []lease.NewJob{nj}, true, batch.Callback{When: batch.WhenComplete})
	case inBatch:
		_, out, err = m.svc.batches.Add(m.ctx, m.queue, smBatchID, []lease.NewJob{nj})
	default:
		out, err = m.svc.leases.Enqueue(m.ctx, m.queue, []lease.NewJob{nj})
	}
	if m.want(what, err, want) != smOK {
		m.unchanged(what, before)
		return
	}
	m.batch.made = m.batch.made || inBatch
	if out[0].Created == exists {
		m.fatalf("%s: created = %v, but the job existed before: %v", what, out[0].Created, exists)
	}
	if exists {
		return // the batch may be new: nothing else changed
	}
	m.enqueued++
	if inBatch {
		m.batch.total++
	}
	wantState := job.StatePending
	if nj.Delay > 0 {
		wantState = job.StateDelayed
	}
	switch depState := depRow["state"]; {
	case dep == "":
	case smLive[depState]:
		wantState = job.StateWaiting
	case depState != job.StateCompleted && !nj.RunOnFailure:
		wantState = job.StateCancelled
	}
	row, _ := m.after().row(id)
	if row["state"] != wantState || out[0].Job.State != wantState {
		m.fatalf("%s: state %q (answered %q), want %s (its dependency %s)", what, row["state"], out[0].Job.State, wantState, depRow["state"])
	}
	if wantState == job.StateCancelled && row["cancel_reason"] != "dependency "+dep+" "+depRow["state"] {
		m.fatalf("%s: cancel_reason %q, want the dependency's end", what, row["cancel_reason"])
	}
}

// commit commits the program's batch: 404 until it is made.
func (m *smMachine) commit() {
	m.t.Helper()
	before := m.last
	want := smOK
	if !m.batch.made {
		want = smGone
	}
	b, err := m.svc.batches.Commit(m.ctx, m.queue, smBatchID)
	if m.want("commit the batch", err, want) != smOK {
		m.unchanged("commit the batch", before)
		return
	}
	m.batch.committed = true
	if b.State != batch.StateRunning && b.State != batch.StateDone {
		m.fatalf("commit: the batch is %s, want running or done", b.State)
	}
}

// checkLinks holds snapshot s to the design's promises about batches and
// dependencies.
func (m *smMachine) checkLinks(s smSnapshot) {
	m.t.Helper()
	for id, row := range s.rows {
		if row["state"] == job.StateWaiting {
			m.checkWaiting(s, id, row)
		}
	}
	if !m.batch.made {
		if len(s.batch) != 0 {
			m.fatalf("a batch exists that the program never made: %v", s.batch)
		}
		return
	}
	b := s.batch
	live, ended := int64(0), int64(0)
	for _, row := range s.rows {
		if row["batch_id"] == smBatchID && smLive[row["state"]] {
			live++
		}
	}
	for _, st := range []string{job.StateCompleted, job.StateDead, job.StateCancelled} {
		ended += smNum(b, st)
	}
	open := int64(0)
	if !m.batch.committed {
		open = 1
	}
	switch {
	case smNum(b, "total") != m.batch.total:
		m.fatalf("the batch's total is %s, want the %d jobs that joined it: %v", b["total"], m.batch.total, b)
	case smNum(b, "left") != live+open:
		m.fatalf("the batch has left %s, but %d of its jobs have not ended (open %v): %v", b["left"], live, !m.batch.committed, b)
	case ended+live != m.batch.total:
		m.fatalf("the batch counts %d ended and %d live jobs, of %d: %v", ended, live, m.batch.total, b)
	case (b["state"] == batch.StateDone) != (m.batch.committed && live == 0):
		m.fatalf("the batch is %s, committed %v with %d live jobs", b["state"], m.batch.committed, live)
	case (b["state"] == batch.StateDone) != slices.Contains(s.batchesDue, smBatchID):
		m.fatalf("the batch is %s; owes its callback: %v", b["state"], s.batchesDue)
	}
}

// checkWaiting holds waiting job id (row) to the design: it waits for a
// dependency that has not ended, and is listed as its dependant so that
// its end releases it; with on_dependency_failure "cancel" no dependency
// of it died or was cancelled, and deps_left counts the ones not ended.
func (m *smMachine) checkWaiting(s smSnapshot, id string, row map[string]string) {
	m.t.Helper()
	var open []string
	for _, dep := range strings.Split(row["depends_on"], ",") {
		d, exists := s.row(dep)
		switch {
		case exists && smLive[d["state"]]:
			open = append(open, dep)
			if !slices.Contains(s.deps[dep], id) {
				m.fatalf("%s waits for %s, but is not among its dependants %v: its end would not release it", id, dep, s.deps[dep])
			}
		case exists && d["state"] != job.StateCompleted && row["dep_failure"] != "run":
			m.fatalf("%s still waits, though its dependency %s is %s", id, dep, d["state"])
		}
	}
	left := smNum(row, "deps_left")
	switch {
	case len(open) == 0:
		m.fatalf("%s waits, but every dependency of it (%s) has ended: it would wait for ever", id, row["depends_on"])
	case row["dep_failure"] != "run" && left != int64(len(open)):
		m.fatalf("%s has deps_left %d, but %d of its dependencies have not ended", id, left, len(open))
	case left < 1 || left > int64(len(open)):
		m.fatalf("%s has deps_left %d, with %d dependencies not ended", id, left, len(open))
	}
}

// released is s as a complete of ids leaves it for a claim in the same
// call (claim-next): the waiting jobs whose last dependencies those were
// are pending (at the back of their priority, in id order) or delayed.
func (m *smMachine) released(s smSnapshot, ids []string) smSnapshot {
	m.t.Helper()
	out := s
	out.sets = map[string]map[string]float64{}
	for st, members := range s.sets {
		out.sets[st] = maps.Clone(members)
	}
	seq, now := smNum(s.meta, "seq"), m.serverMs()
	for _, id := range slices.Sorted(maps.Keys(s.sets[job.StateWaiting])) {
		row := s.rows[id]
		ending := int64(0)
		for _, dep := range strings.Split(row["depends_on"], ",") {
			if slices.Contains(ids, dep) {
				ending++
			}
		}
		if ending == 0 || ending < smNum(row, "deps_left") {
			continue
		}
		delete(out.sets[job.StateWaiting], id)
		// One whose run time comes about now may go either way (the
		// script's clock read before now was): counted as delayed, a
		// claim may take it or not.
		if row["run_at"] != "" && smNum(row, "run_at") > now-1000 {
			out.sets[job.StateDelayed][id] = float64(smNum(row, "run_at"))
			continue
		}
		seq++
		out.sets[job.StatePending][id] = float64(smNum(row, "priority")*1e13 + seq)
	}
	return out
}
