-- cancellation.lua: the holder's O(1) check for a cancel request.
--
-- KEYS[1..8] the queue's keys (common.lua)
-- KEYS[9]    the job row
-- ARGV[1..2] key base and wake channel (common.lua)
-- ARGV[3]    id
-- ARGV[4]    token
--
-- Returns {cancel_requested (0/1), cancel_reason}.
-- Errors: EMQGONE no such job; EMQSTALE token is not the current one, or
-- the job is no longer active under it.

local id = ARGV[3]
local code = fence(id, ARGV[4])
if code then
  return error_reply(code, id)
end
local cancel = redis.call('HMGET', JOB, 'cancel_requested', 'cancel_reason')
return { cancel[1] and 1 or 0, cancel[2] or '' }
