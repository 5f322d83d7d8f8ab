-- claim.lua: lease up to count jobs, priority first, FIFO within one.
--
-- KEYS[1..8] the queue's keys (common.lua)
-- ARGV[1..2] key base and wake channel (common.lua)
-- ARGV[3]    count, 1-100
-- ARGV[4]    lease_ms
-- ARGV[5]    worker name, or ""
--
-- Due delayed jobs are moved to pending first. Each claimed job gets a
-- fresh fencing token, attempts + 1, and a lease deadline of server now +
-- lease_ms as its score in the active set.
-- Returns {due_in, jobs}: due_in is how many ms from now the earliest
-- delayed job comes due, or -1 when none is, so that a long-polling claimer
-- knows when to look again; jobs is the list of claimed job replies, empty
-- when the queue is paused or has nothing pending.
-- Errors: none.

local now = now_ms()
local jobs = claim(now, tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5])
return { due_in(now), jobs }
