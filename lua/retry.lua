-- retry.lua: an operator sends a dead or cancelled job back to pending.
--
-- KEYS[1..8] the queue's keys (common.lua)
-- KEYS[9]    the job row
-- ARGV[1..2] key base and wake channel (common.lua)
-- ARGV[3]    id
-- ARGV[4]    actor, ARGV[5] role: who asked, for the event
--
-- The job goes to the back of its priority in pending with a fresh attempt
-- budget (attempts 0) and its stalled count reset; its last_error is kept
-- for the record. Its next claim draws a new token as any claim does.
-- Returns the job reply.
-- Errors: EMQGONE no such job; EMQSTATE the job is not dead or cancelled.

local id = ARGV[3]
local state = redis.call('HGET', JOB, 'state')
if not state then
  return error_reply('EMQGONE', id)
end
if state ~= 'dead' and state ~= 'cancelled' then
  return error_reply('EMQSTATE', id)
end
redis.call('ZREM', SET_OF[state], id)
redis.call('HDEL', JOB, 'attempts', 'stalled', 'finished_at', 'cancel_requested', 'cancel_reason')
push_pending(id, false)
emit('retried', id, 'pending', 'actor', ARGV[4], 'role', ARGV[5])
wake(1)
return job_reply(id)
