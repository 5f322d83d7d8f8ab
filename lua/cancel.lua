-- cancel.lua: ask for a job to stop. A cancel is a message, never a kill.
--
-- KEYS[1] pending
-- KEYS[2] delayed
-- KEYS[3] cancelled
-- KEYS[4] events
-- KEYS[5] job
-- KEYS[6] stats
-- KEYS[7] meta
-- KEYS[8] due
-- ARGV[3] id
-- ARGV[4] token the cancel is pinned to, or "" for whichever attempt
-- ARGV[5] reason, or ""
--
-- pending, delayed or waiting -> cancelled at once
-- active             -> cancel_requested, pinned to the current attempt
--                       (the next claim clears it); the holder sees it at
--                       its next extend or cancellation check
-- cancelled          -> unchanged
-- A job cancelled at once may trim the oldest cancelled jobs, and puts the
-- queue in the due index for when they age out (lifecycle.lua's
-- retention).
-- Returns {outcome, job}: outcome is "cancelled" or "requested".
-- Errors: EMQGONE no such job; EMQSTATE the job is completed or dead;
-- EMQSTALE a token was named and the job is not active under it.

local id, token, reason = ARGV[3], ARGV[4], ARGV[5]
local state, holder, group, dedupe_key, dedupe_mode, batch_id, dependants, depends_on =
  unpack(redis.call('HMGET', JOB, 'state', 'token', 'group', 'dedupe_key', 'dedupe_mode',
    'batch_id', 'dependants', 'depends_on'))
if not state then
  return error_reply('EMQGONE', id)
end
if state == 'completed' or state == 'dead' then
  return error_reply('EMQSTATE', id, state, 'a finished job cannot be cancelled (remove it to delete it)')
end
if state == 'cancelled' then
  return { 'cancelled', job_reply(id) }
end
if token ~= '' and (state ~= 'active' or holder ~= token) then
  return error_reply('EMQSTALE', id)
end
-- A grouped job that leaves pending or delayed leaves its group too, and
-- a job of a batch or with dependants or dependencies tells them: their
-- keys are checked before the first write (flow.lua).
local row = (group or batch_id or dependants or depends_on) and state ~= 'active' and read_row(id)
flow_check(row)
if reason ~= '' then
  redis.call('HSET', JOB, 'cancel_reason', reason)
end
if state == 'active' then
  redis.call('HSET', JOB, 'cancel_requested', '1')
  emit('cancel_requested', id, 'active', 'reason', reason)
  return { 'requested', job_reply(id) }
end
redis.call('ZREM', set_of(state), id)
redis.call('HDEL', JOB, 'run_at', 'deps_left')
if group then
  flow_unqueued(id, row)
end
finish(id, row or { dedupe_key = dedupe_key, dedupe_mode = dedupe_mode }, 'cancelled', now_ms())
if group then
  flow_finished(id, row)
end
emit('cancelled', id, 'cancelled', 'reason', reason)
local reply = job_reply(id) -- before the trim, which may take the job itself (a tie of its time)
retention.finished('cancelled', CANCELLED, 1, NOW, 0, true)
return { 'cancelled', reply }
