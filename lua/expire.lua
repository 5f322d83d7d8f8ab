-- expire.lua: end the jobs whose expiry came before they started, and let
-- go of the dedupe keys whose throttle window ended (admission.lua). The
-- reaper runs it, so that an expired job ends when nobody claims it (a
-- claim that meets one first ends it itself, lifecycle.lua's lease).
--
-- KEYS[1] pending
-- KEYS[2] delayed
-- KEYS[3] cancelled
-- KEYS[4] events
-- KEYS[5] stats
-- KEYS[6] meta
-- KEYS[7] due
-- ARGV[3] limit: at most this many expiries, and this many throttle
--         windows, per call
--
-- A job in the expiring set that is still pending or delayed and never
-- started ends cancelled with cancel_reason "expired" (a grouped one leaves
-- its group); an entry of a job that started or ended is dropped.
-- Returns {expired, looked}: the ids it cancelled, and how many entries
-- (expiries and windows) it looked at, so that the reaper calls again
-- while it took limit of either.
-- Errors: TRYAGAIN (here.lua, flow.lua's flow_here).

local now = now_ms()
local limit = ARGV[3]
local due = call_here('ZRANGEBYSCORE', BASE .. 'expiring', '-inf', int(now), 'LIMIT', '0', limit) or {}
local windows = call_here('ZRANGEBYSCORE', BASE .. 'dedupe_ttl', '-inf', int(now), 'LIMIT', '0', '1') or {}
if #due == 0 and #windows == 0 then
  return { {}, 0 }
end
flow_here() -- it writes the admission keys, which it did not declare
local rows = {}
for i, id in ipairs(due) do
  rows[i] = row_here(id)
  flow_check(rows[i])
end

local expired_ids = {}
for i, id in ipairs(due) do
  local row = rows[i]
  redis.call('ZREM', BASE .. 'expiring', id)
  if row and (row.state == 'pending' or row.state == 'delayed') and expired(row, now) then
    redis.call('ZREM', set_of(row.state), id)
    if row.group then
      flow_unqueued(id, row)
    end
    del_fields(id, row, { 'run_at' })
    set_fields(id, row, { 'cancel_reason', 'expired' })
    finish(id, row, 'cancelled', now)
    if row.group then
      flow_finished(id, row)
    end
    emit('cancelled', id, 'cancelled', 'reason', 'expired')
    expired_ids[#expired_ids + 1] = id
  end
end
return { expired_ids, #due + throttles_ended(now, limit) }
