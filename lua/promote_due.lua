-- promote_due.lua: move delayed jobs whose run-at has come to pending.
-- The reaper runs it so that due jobs are pending even when nobody claims.
--
-- KEYS[1] meta
-- KEYS[2] pending
-- KEYS[3] delayed
-- KEYS[4] events
-- ARGV[3] limit: at most this many jobs per call
--
-- Returns how many jobs it moved; wakes claimers for them.
-- Errors: TRYAGAIN (here.lua).

local moved = promote(DELAYED, plan_due(DELAYED, now_ms(), ARGV[3]))
wake(moved)
return moved
