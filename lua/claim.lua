-- claim.lua: lease up to count jobs, priority first, FIFO within one.
--
-- KEYS[1] meta
-- KEYS[2] pending
-- KEYS[3] active
-- KEYS[4] events
-- KEYS[5] stats
-- KEYS[6] due
-- ARGV[3] count, 1-100
-- ARGV[4] lease_ms
-- ARGV[5] worker name, or ""
-- ARGV[6] the first fencing token: the claimed jobs get it and the next
--         ones up (lifecycle.lua's lease); a random number the service
--         draws for each call (lua/token.go), "" when count is 0
-- ARGV[7] max_active, only for a push delivery's claim (push.lua): the
--         claim takes no more jobs than leave the queue's active set at
--         most this big, every worker's and replica's jobs counted
--
-- Due delayed jobs are moved to pending first (when the delayed set is on
-- this node: it is not declared, so that a queue without delayed jobs
-- claims while its slot migrates; the reaper promotes the rest). Each
-- claimed job gets a fresh fencing token, attempts + 1, and a lease
-- deadline of server now + lease_ms as its score in the active set.
-- Returns {due_in, jobs}: due_in is how many ms from now the earliest
-- delayed job comes due, or -1 when none is, so that a long-polling claimer
-- knows when to look again; jobs is the list of claimed job replies, empty
-- when the queue is paused or has nothing pending. Under flow control
-- (flow.lua) the jobs are those the limits let start, and the reply goes on
-- with retry_after and held: when a limit cut the claim short, in how many
-- ms a claim could go on, and which limit ("concurrency", "rate_limit",
-- "group_concurrency", "group_rate_limit", "group_order",
-- "group_paused"); -1 and "" when none did.
-- Errors: TRYAGAIN (here.lua).

local count, delayed = tonumber(ARGV[3]), BASE .. 'delayed'
if ARGV[7] then
  count = math.max(0, math.min(count, tonumber(ARGV[7]) - redis.call('ZCARD', ACTIVE)))
end
local plan = plan_claim(delayed, count)
if not (plan.flow or plan.pending or #plan.due > 0) then
  return { plan.due_in, {} } -- nothing to take: answered without reading the time
end
local now = NOW or now_ms()
local jobs = claim(plan, now, count, tonumber(ARGV[4]), ARGV[5], ARGV[6])
return flow_reply({ plan.due_in or due_in(delayed, now), jobs }, plan)
