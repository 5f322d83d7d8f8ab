// Package lua holds echo_mq's Redis scripts: every state change of a job is
// one of them, atomic on the Redis server and timed by its clock.
//
// Each script is a .lua file with a header naming its KEYS, ARGV, replies and
// error replies. common.lua, which every script begins with, fixes the keys
// all scripts share (the queue's sets and meta hash, in one Cluster slot) and
// the helpers they use; see it first.
package lua

import _ "embed"

//go:embed common.lua
var commonSrc string

var (
	//go:embed enqueue.lua
	enqueueSrc string
	//go:embed claim.lua
	claimSrc string
	//go:embed extend.lua
	extendSrc string
	//go:embed cancellation.lua
	cancellationSrc string
	//go:embed complete.lua
	completeSrc string
	//go:embed complete_batch.lua
	completeBatchSrc string
	//go:embed fail.lua
	failSrc string
	//go:embed cancel.lua
	cancelSrc string
	//go:embed sweep.lua
	sweepSrc string
	//go:embed promote_due.lua
	promoteDueSrc string
	//go:embed remove.lua
	removeSrc string
	//go:embed pause.lua
	pauseSrc string
	//go:embed drain.lua
	drainSrc string
	//go:embed obliterate.lua
	obliterateSrc string
	//go:embed retry.lua
	retrySrc string
	//go:embed promote.lua
	promoteSrc string
	//go:embed list.lua
	listSrc string
)

// The scripts, each prepended with common.lua. Run them with Script.Run.
var (
	// Enqueue adds jobs, idempotent on id.
	Enqueue = script(enqueueSrc)
	// Claim leases pending jobs under fresh fencing tokens.
	Claim = script(claimSrc)
	// Extend re-scores a held job's lease (a checkpoint).
	Extend = script(extendSrc)
	// Cancellation answers a holder's check for a cancel request.
	Cancellation = script(cancellationSrc)
	// Complete finishes a held job and may claim the next ones.
	Complete = script(completeSrc)
	// CompleteBatch finishes many held jobs and may claim the next ones.
	CompleteBatch = script(completeBatchSrc)
	// Fail reports a failed attempt: retry, dead or cancelled.
	Fail = script(failSrc)
	// Cancel cancels a waiting job or asks the holder of an active one to stop.
	Cancel = script(cancelSrc)
	// Sweep recovers or dead-letters jobs whose leases lapsed.
	Sweep = script(sweepSrc)
	// PromoteDue moves due delayed jobs to pending.
	PromoteDue = script(promoteDueSrc)
	// Remove deletes a job.
	Remove = script(removeSrc)
	// Pause pauses or resumes a queue's claims.
	Pause = script(pauseSrc)
	// Drain removes a queue's waiting jobs, one bounded step per call.
	Drain = script(drainSrc)
	// Obliterate deletes a queue and all its keys, one bounded step per call.
	Obliterate = script(obliterateSrc)
	// Retry sends a dead or cancelled job back to pending.
	Retry = script(retrySrc)
	// Promote makes a delayed job pending now.
	Promote = script(promoteSrc)
	// List reads one page of a queue's jobs in one state.
	List = script(listSrc)
)

// All lists every script, for loading them ahead of a pipeline.
var All = []*Script{
	Enqueue, Claim, Extend, Cancellation, Complete, CompleteBatch,
	Fail, Cancel, Sweep, PromoteDue, Remove, Pause, Drain, Obliterate, Retry, Promote, List,
}
