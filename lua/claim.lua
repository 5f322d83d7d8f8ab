-- claim.lua: lease up to count jobs, priority first, FIFO within one.
--
-- KEYS[1] meta
-- KEYS[2] pending
-- KEYS[3] active
-- KEYS[4] events
-- ARGV[3] count, 1-100
-- ARGV[4] lease_ms
-- ARGV[5] worker name, or ""
--
-- Due delayed jobs are moved to pending first (when the delayed set is on
-- this node: it is not declared, so that a queue without delayed jobs
-- claims while its slot migrates; the reaper promotes the rest). Each
-- claimed job gets a fresh fencing token, attempts + 1, and a lease
-- deadline of server now + lease_ms as its score in the active set.
-- Returns {due_in, jobs}: due_in is how many ms from now the earliest
-- delayed job comes due, or -1 when none is, so that a long-polling claimer
-- knows when to look again; jobs is the list of claimed job replies, empty
-- when the queue is paused or has nothing pending.
-- Errors: TRYAGAIN (here.lua).

local now = now_ms()
local count, delayed = tonumber(ARGV[3]), BASE .. 'delayed'
local plan = plan_claim(delayed, now, count)
local jobs = claim(plan, now, count, tonumber(ARGV[4]), ARGV[5])
return { due_in(delayed, now), jobs }
