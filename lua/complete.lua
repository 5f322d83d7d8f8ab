-- complete.lua: finish a job held under token, and optionally claim the
-- holder's next jobs in the same step.
--
-- KEYS[1..8] the queue's keys (common.lua)
-- KEYS[9]    the job row
-- ARGV[1..2] key base and wake channel (common.lua)
-- ARGV[3]    id
-- ARGV[4]    token
-- ARGV[5]    "1" when ARGV[6] carries a result to store, else "0"
-- ARGV[6]    result (JSON text)
-- ARGV[7]    how many jobs to claim next (0 = none)
-- ARGV[8]    lease_ms for the claimed jobs
-- ARGV[9]    worker name, or ""
-- ARGV[10]   how many completed jobs the queue keeps (0: all); the oldest
--            beyond it are deleted, a few per call
--
-- The job goes to completed, whether or not a cancel was requested (the
-- work got done). Repeating the call with the same token after it
-- succeeded answers the job as it is and claims nothing: the jobs a lost
-- first answer carried are recovered when their leases lapse, and claiming
-- more on every retry would strand more.
-- Returns {job, next}: next is the list of newly claimed job replies.
-- Errors: EMQGONE no such job; EMQSTALE token is not the current one, or
-- the job is no longer active under it.

local id = ARGV[3]
local now = now_ms()
local done = {}
local job, repeated = complete_one(done, id, ARGV[4], ARGV[5], ARGV[6], now)
if not job then
  return error_reply(repeated, id)
end
finish_completed(done, now, tonumber(ARGV[10]))
local next_jobs = {}
local count = tonumber(ARGV[7])
if count > 0 and not repeated then
  next_jobs = claim(now, count, tonumber(ARGV[8]), ARGV[9])
end
return { job, next_jobs }
