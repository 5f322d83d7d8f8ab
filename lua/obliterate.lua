-- obliterate.lua: one bounded step of deleting a queue and all its keys.
--
-- KEYS[1] meta
-- KEYS[2] pending
-- KEYS[3] active
-- KEYS[4] delayed
-- KEYS[5] completed
-- KEYS[6] dead
-- KEYS[7] cancelled
-- KEYS[8] events
-- KEYS[9] reaper
-- KEYS[10] due
-- ARGV[3] limit: at most this many jobs per step
-- ARGV[4] "1" to go on although jobs are active (their holders' next
--         calls are answered EMQGONE), else "0"
--
-- Deletes up to limit jobs, rows and all, from the queue's sets; when none
-- is left it deletes the sets, the meta hash, the event stream and the
-- reapers' turn (and the flow control keys, flow.lua, the admission keys,
-- admission.lua, the push target and its errors, push.lua, the schedules, schedules.lua, the
-- history, history.lua, and the batches, the waiting set and the
-- dependants' sets, batches.lua), so that not one key of the queue remains (a reaper's pass
-- under way may take a turn again; it expires within half an interval).
-- The service calls it until done. Fencing survives as it survives a
-- remove: tokens are random (lifecycle.lua's lease), and a job of the
-- queue made again under the same name and id gets one of an old holder's
-- only by a chance of 2^-53 (docs/design.md#fencing).
-- Returns {done (0/1), removed}.
-- Errors: EMQSTATE jobs are active and force is not set; TRYAGAIN (here.lua).

local limit = tonumber(ARGV[3])
flow_here() -- it deletes the flow control and schedule keys, whether or not the queue has them now
if ARGV[4] ~= '1' and redis.call('ZCARD', ACTIVE) > 0 then
  return redis.error_reply('EMQSTATE jobs are active in the queue: obliterate with force to delete them too')
end
local removed = delete_jobs(plan_delete({ PENDING, DELAYED, BASE .. 'waiting', COMPLETED, DEAD, CANCELLED, ACTIVE }, limit), true)
if removed < limit and batches.deleted(limit) then
  queue_deleted()
  return { 1, removed }
end
return { 0, removed }
