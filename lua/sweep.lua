-- sweep.lua: count-thresholded stalled recovery.
--
-- KEYS[1] meta
-- KEYS[2] pending
-- KEYS[3] active
-- KEYS[4] dead
-- KEYS[5] cancelled
-- KEYS[6] events
-- ARGV[3] max_stalled, >= 1
-- ARGV[4] limit: at most this many lapsed jobs per call
--
-- Takes the active jobs whose lease deadline is at or before the server's
-- now, oldest first, up to limit: a range read of the active set, so the
-- cost is O(lapsed), never O(active). Each leaves the active set and its
-- stalled count goes up by one; then
--   a cancel was requested             -> cancelled
--   stalled >= max_stalled             -> dead, last_error "stalled",
--                                         failed total + 1
--   otherwise (a slow worker)          -> the front of pending
-- The old holder's token stops fencing anything: the job is not active.
-- Returns {recovered, dead, cancelled}, three lists of ids.
-- Errors: TRYAGAIN (here.lua).

local now = now_ms()
local max_stalled = tonumber(ARGV[3])
local lapsed = redis.call('ZRANGEBYSCORE', ACTIVE, '-inf', int(now), 'LIMIT', 0, tonumber(ARGV[4]))
local rows = {}
for i, id in ipairs(lapsed) do
  rows[i] = row_here(id)
  flow_check(rows[i])
end

local recovered, dead, cancelled = {}, {}, {}
for i, id in ipairs(lapsed) do
  local row = rows[i]
  if not row then
    redis.call('ZREM', ACTIVE, id) -- a row lost outside a migration
  else
    leave_active(id, row)
    local stalled = tonumber(row.stalled or '0') + 1
    set_fields(id, row, { 'stalled', tostring(stalled) })
    if row.cancel_requested then
      finish(id, 'cancelled', now)
      flow_finished(id, row)
      emit('cancelled', id, 'cancelled', 'error', 'stalled')
      cancelled[#cancelled + 1] = id
    elseif stalled >= max_stalled then
      finish(id, 'dead', now)
      flow_finished(id, row)
      redis.call('HSET', job_key(id), 'last_error', 'stalled')
      redis.call('HINCRBY', META, 'failed', 1)
      emit('dead', id, 'dead', 'error', 'stalled')
      dead[#dead + 1] = id
    else
      push_pending(id, row, true)
      emit('recovered', id, 'pending')
      recovered[#recovered + 1] = id
    end
  end
end
wake(#recovered)
return { recovered, dead, cancelled }
