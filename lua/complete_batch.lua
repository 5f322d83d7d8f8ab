-- complete_batch.lua: finish many jobs in one step, each under its own
-- token, and optionally claim the next jobs.
--
-- KEYS[1] meta
-- KEYS[2] pending
-- KEYS[3] active
-- KEYS[4] completed
-- KEYS[5] events
-- KEYS[6] stats
-- KEYS[7] due
-- KEYS[8..] rows, one per job, in ARGV order
-- ARGV[3] n, the number of jobs; then 4 ARGV per job:
--         id, token, "1"/"0" (has a result), result (JSON text)
-- then    how many jobs to claim next (0 = none), lease_ms, worker, the
--         claimed jobs' first fencing token (as claim.lua's ARGV[6]; ""
--         when none are to be claimed), and how many completed jobs the
--         queue keeps (0: all)
--
-- Each job is completed exactly as complete.lua does it; one job's refusal
-- does not stop the others. Next jobs are claimed unless some job's
-- complete was a repeat: a batch sent again after a lost answer claims
-- nothing more (as complete.lua), while a batch whose jobs were all stale
-- still gets work.
-- Returns {results, next}: results in order, each {1, job} or {0, code,
-- id} with code EMQGONE or EMQSTALE; next the newly claimed job replies
-- (under flow control, those the limits let start, claim.lua).
-- Errors: TRYAGAIN (here.lua); refusals are per job, in results.

local now = now_ms()
local n = tonumber(ARGV[3])
local at = 4 + n * 4
local count, keep = tonumber(ARGV[at]), tonumber(ARGV[at + 4])

-- Read: every row, then whether this is a batch sent again, then what a
-- claim needs.
local rows, repeated, seen = {}, false, {}
for i = 0, n - 1 do
  local id, token = ARGV[4 + i * 4], ARGV[5 + i * 4]
  rows[id] = rows[id] or read_report(id)
  -- A repeat of a complete made earlier in this same batch is no sign of
  -- a batch sent again; a refused one completed nothing.
  if not seen[id] then
    local code = fence_row(rows[id], token, 'complete')
    repeated = repeated or code == 'repeat'
    seen[id] = code == nil or code == 'repeat'
  end
  flow_check(rows[id])
end
local delayed = BASE .. 'delayed'
local plan = count > 0 and not repeated and plan_claim(delayed, count)

local results, done = {}, {}
for i = 0, n - 1 do
  local at_job = 4 + i * 4
  local id = ARGV[at_job]
  local job, code = complete_one(done, id, rows[id], ARGV[at_job + 1], ARGV[at_job + 2], ARGV[at_job + 3], now)
  if job then -- a repeat (code true) is answered like the first time
    results[#results + 1] = { 1, job }
  else
    results[#results + 1] = { 0, code, id }
  end
end
finish_completed(done, now, keep)
local next_jobs = {}
if plan then
  next_jobs = claim(plan, now, count, tonumber(ARGV[at + 1]), ARGV[at + 2], ARGV[at + 3])
end
return { results, next_jobs }
