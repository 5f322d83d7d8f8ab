-- cancellation.lua: the holder's O(1) check for a cancel request.
--
-- KEYS[1] job
-- ARGV[3] id
-- ARGV[4] token
--
-- Returns {cancel_requested (0/1), cancel_reason}.
-- Errors: EMQGONE no such job; EMQSTALE token is not the current one, or
-- the job is no longer active under it.

local id = ARGV[3]
local f = redis.call('HMGET', JOB, 'state', 'token', 'cancel_requested', 'cancel_reason')
local code = fence_row({ state = f[1], token = f[2] }, ARGV[4])
if code then
  return error_reply(code, id)
end
return { f[3] and 1 or 0, f[4] or '' }
