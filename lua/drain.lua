-- drain.lua: one bounded step of removing a queue's waiting jobs.
--
-- KEYS[1] meta
-- KEYS[2] pending
-- KEYS[3] delayed
-- KEYS[4] events
-- KEYS[5] due
-- ARGV[3] limit: at most this many jobs per step
-- ARGV[4] how many earlier steps of this drain removed, for the event
-- ARGV[5] actor, ARGV[6] role: who asked, for the event
--
-- Removes up to limit jobs, rows and all: the ones waiting for their
-- dependencies (when the queue has had any), then pending, then delayed; active jobs are left to
-- finish. A job of a batch counts as cancelled in it, and its dependants
-- learn that it ended "removed" (batches.lua), as for a removal. The service calls it until a step removes fewer
-- than limit; that last step emits one "drained" event with the total.
-- Each step takes its grouped jobs out of their groups (flow.lua's
-- flow_dropped), so that a drain stopped half way leaves none behind.
-- Returns how many jobs this step removed.
-- Errors: TRYAGAIN (here.lua).

local limit = tonumber(ARGV[3])
local grouped, linked = unpack(redis.call('HMGET', META, 'grouped', 'linked'))
if grouped or linked then
  flow_here() -- the flow control keys, or those of batches and dependencies
end
-- The waiting jobs first: one waiting for a job this step drains is
-- drained too, not cancelled by it and left.
local plan = plan_delete(linked and { BASE .. 'waiting', PENDING, DELAYED } or { PENDING, DELAYED }, limit)
local touched = grouped and flow_dropped(plan)
local told = linked and batches.ends_told(plan)
local removed = delete_jobs(plan)
batches.tell_removed(told, now_ms())
for g in pairs(touched or {}) do
  group_tidy(g)
end
if removed < limit then
  emit('drained', nil, nil, 'count', tonumber(ARGV[4]) + removed, 'actor', ARGV[5], 'role', ARGV[6])
  due.at(now_ms()) -- the reaper looks whether the queue is left empty (settle.lua)
end
return removed
