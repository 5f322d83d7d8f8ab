-- complete_batch.lua: finish many jobs in one step, each under its own
-- token, and optionally claim the next jobs.
--
-- KEYS[1..8] the queue's keys (common.lua)
-- ARGV[1..2] key base and wake channel (common.lua)
-- ARGV[3]    n, the number of jobs; then 4 ARGV per job:
--            id, token, "1"/"0" (has a result), result (JSON text)
-- then       how many jobs to claim next (0 = none), lease_ms, worker, and
--            how many completed jobs the queue keeps (0: all)
--
-- Each job is completed exactly as complete.lua does it; one job's refusal
-- does not stop the others. Next jobs are claimed unless some job's
-- complete was a repeat: a batch sent again after a lost answer claims
-- nothing more (as complete.lua), while a batch whose jobs were all stale
-- still gets work.
-- Returns {results, next}: results in order, each {1, job} or {0, code,
-- id} with code EMQGONE or EMQSTALE; next the newly claimed job replies.
-- Errors: none (refusals are per job, in results).

local now = now_ms()
local n = tonumber(ARGV[3])
local keep = tonumber(ARGV[4 + n * 4 + 3])
local results, repeated, done_here, done = {}, false, {}, {}
for i = 0, n - 1 do
  local at = 4 + i * 4
  local id = ARGV[at]
  local job, code = complete_one(done, id, ARGV[at + 1], ARGV[at + 2], ARGV[at + 3], now)
  if job then -- a repeat (code true) is answered like the first time
    -- A repeat of a complete made earlier in this same batch is no sign
    -- of a batch sent again.
    repeated = repeated or (code == true and not done_here[id])
    done_here[id] = true
    results[#results + 1] = { 1, job }
  else
    results[#results + 1] = { 0, code, id }
  end
end
finish_completed(done, now, keep)
local at = 4 + n * 4
local next_jobs = {}
local count = tonumber(ARGV[at])
if count > 0 and not repeated then
  next_jobs = claim(now, count, tonumber(ARGV[at + 1]), ARGV[at + 2])
end
return { results, next_jobs }
