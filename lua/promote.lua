-- promote.lua: an operator makes a delayed job pending now.
--
-- KEYS[1..8] the queue's keys (common.lua)
-- KEYS[9]    the job row
-- ARGV[1..2] key base and wake channel (common.lua)
-- ARGV[3]    id
-- ARGV[4]    actor, ARGV[5] role: who asked, for the event
--
-- Returns the job reply.
-- Errors: EMQGONE no such job; EMQSTATE the job is not delayed.

local id = ARGV[3]
local state = redis.call('HGET', JOB, 'state')
if not state then
  return error_reply('EMQGONE', id)
end
if state ~= 'delayed' then
  return error_reply('EMQSTATE', id)
end
redis.call('ZREM', DELAYED, id)
push_pending(id, false)
emit('promoted', id, 'pending', 'actor', ARGV[4], 'role', ARGV[5])
wake(1)
return job_reply(id)
