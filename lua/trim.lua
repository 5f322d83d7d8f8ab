-- trim.lua: the reaper deletes the finished jobs a queue's retention lets
-- go (lifecycle.lua's retention): those beyond a count that the finishes
-- left (a queue keeps at most count + EVERY between looks), and those that
-- aged out while the queue was idle, oldest first.
--
-- KEYS[1] meta
-- KEYS[2] completed
-- KEYS[3] dead
-- KEYS[4] cancelled
-- ARGV[3] keep: how many completed jobs a queue whose settings name no
--         completed retention keeps (EMQ_KEEP_COMPLETED; 0 all)
-- ARGV[4] limit: at most this many jobs per call
--
-- Each job goes with its row and log, as a complete trims (no event).
-- Rows on the other node of a migrating slot are left for a later call.
-- Returns {trimmed, more}: how many jobs it deleted, and 1 when it deleted
-- limit and the rules let more go, so that the reaper calls again.
-- Errors: none.

local now = now_ms()
local keep, limit = tonumber(ARGV[3]), tonumber(ARGV[4])
local text = redis.call('HGET', META, 'retention')
local trimmed, more = 0, 0
for _, state in ipairs({ 'completed', 'dead', 'cancelled' }) do
  local rule = retention.rule(text, state, keep)
  if rule then
    local set = set_of(state)
    trimmed = trimmed + retention.trim(set, rule, now, limit - trimmed)
    if trimmed >= limit and retention.excess(set, rule, now) > 0 then
      more = 1
    end
  end
end
return { trimmed, more }
