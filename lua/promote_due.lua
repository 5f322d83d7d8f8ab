-- promote_due.lua: move delayed jobs whose run-at has come to pending.
-- The reaper runs it so that due jobs are pending even when nobody claims.
--
-- KEYS[1..8] the queue's keys (common.lua)
-- ARGV[1..2] key base and wake channel (common.lua)
-- ARGV[3]    limit: at most this many jobs per call
--
-- Returns how many jobs it moved; wakes claimers for them.
-- Errors: none.

local moved = promote_due(now_ms(), tonumber(ARGV[3]))
wake(moved)
return moved
