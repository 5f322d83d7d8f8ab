-- complete.lua: finish a job held under token, and optionally claim the
-- holder's next jobs in the same step.
--
-- KEYS[1] meta
-- KEYS[2] pending
-- KEYS[3] active
-- KEYS[4] completed
-- KEYS[5] events
-- KEYS[6] job
-- KEYS[7] stats
-- KEYS[8] due
-- ARGV[3] id
-- ARGV[4] token
-- ARGV[5] "1" when ARGV[6] carries a result to store, else "0"
-- ARGV[6] result (JSON text)
-- ARGV[7] how many jobs to claim next (0 = none)
-- ARGV[8] lease_ms for the claimed jobs
-- ARGV[9] worker name, or ""
-- ARGV[10] the claimed jobs' first fencing token, as claim.lua's ARGV[6]
--          ("" when ARGV[7] is 0)
-- ARGV[11] how many completed jobs the queue keeps (0: all); the oldest
--          beyond it are deleted, a few per call
-- Claims when ARGV[7] > 0
--
-- The job goes to completed, whether or not a cancel was requested (the
-- work got done). Repeating the call with the same token after it
-- succeeded answers the job as it is and claims nothing: the jobs a lost
-- first answer carried are recovered when their leases lapse, and claiming
-- more on every retry would strand more.
-- Returns {job, next}: next is the list of newly claimed job replies
-- (under flow control, those the limits let start, claim.lua).
-- Errors: EMQGONE no such job; EMQSTALE token is not the current one, or
-- the job is no longer active under it; TRYAGAIN (here.lua).

local id, token = ARGV[3], ARGV[4]
local now = now_ms()
local row = read_report(id)
local code = fence_row(row, token, 'complete')
if code and code ~= 'repeat' then
  return error_reply(code, id)
end
flow_check(row)
local count = code == 'repeat' and 0 or zero_or_number(ARGV[7])
local delayed = BASE .. 'delayed'
local plan = count > 0 and plan_claim(delayed, count)

local done = {}
local job = complete_one(done, id, row, token, ARGV[5], ARGV[6], now)
finish_completed(done, now, tonumber(ARGV[11]))
local next_jobs = {}
if plan then
  next_jobs = claim(plan, now, count, tonumber(ARGV[8]), ARGV[9], ARGV[10])
end
return { job, next_jobs }
