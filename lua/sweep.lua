-- sweep.lua: count-thresholded stalled recovery.
--
-- KEYS[1] meta
-- KEYS[2] pending
-- KEYS[3] active
-- KEYS[4] delayed
-- KEYS[5] dead
-- KEYS[6] cancelled
-- KEYS[7] events
-- KEYS[8] stats
-- KEYS[9] due
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
-- A job whose run reached its timeout (admission.lua) is not a stall: its
-- attempt fails with last_error "timeout", as a holder's fail would (a
-- requested cancel wins; dead at max_attempts, failed total + 1; else
-- retried after its backoff, delayed or pending), stalled unchanged.
-- The old holder's token stops fencing anything: the job is not active.
-- Jobs that end dead or cancelled may trim the oldest of their set
-- (lifecycle.lua's retention).
-- Returns {recovered, dead, cancelled, retried}, four lists of ids
-- (retried: timed out and waiting for another attempt).
-- Errors: TRYAGAIN (here.lua).

local now = now_ms()
local max_stalled = tonumber(ARGV[3])
local lapsed = redis.call('ZRANGEBYSCORE', ACTIVE, '-inf', int(now), 'LIMIT', 0, tonumber(ARGV[4]))
local rows = {}
for i, id in ipairs(lapsed) do
  rows[i] = row_here(id)
  flow_check(rows[i])
end

-- timed_out ends the attempt of job id (row, out of the active set) that
-- reached its timeout, and lists it where it went.
local recovered, dead, cancelled, retried = {}, {}, {}, {}
local function timed_out(id, row)
  local fields = { 'last_error', 'timeout' }
  if row.cancel_requested then
    end_reported(id, row, fields, 'cancelled', now)
    emit('cancelled', id, 'cancelled', 'error', 'timeout')
    cancelled[#cancelled + 1] = id
    return
  end
  local attempts = tonumber(row.attempts or '0')
  if attempts >= tonumber(row.max_attempts or DEFAULT_MAX_ATTEMPTS) then
    end_reported(id, row, fields, 'dead', now)
    redis.call('HINCRBY', META, 'failed', 1)
    emit('dead', id, 'dead', 'error', 'timeout')
    dead[#dead + 1] = id
    return
  end
  emit('failed', id, requeue(id, row, fields, backoff_ms(row, attempts), now), 'error', 'timeout')
  retried[#retried + 1] = id
end

for i, id in ipairs(lapsed) do
  local row = rows[i]
  if not row then
    redis.call('ZREM', ACTIVE, id) -- a row lost outside a migration
  elseif row.timeout_ms and now >= tonumber(row.started_at) + tonumber(row.timeout_ms) then
    leave_active(id, row)
    timed_out(id, row)
  else
    leave_active(id, row)
    local stalled = tonumber(row.stalled or '0') + 1
    set_fields(id, row, { 'stalled', tostring(stalled) })
    if row.cancel_requested then
      finish(id, row, 'cancelled', now)
      flow_finished(id, row)
      emit('cancelled', id, 'cancelled', 'error', 'stalled')
      cancelled[#cancelled + 1] = id
    elseif stalled >= max_stalled then
      finish(id, row, 'dead', now)
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
if #dead > 0 then
  retention.finished('dead', DEAD, #dead, now, 0)
end
if #cancelled > 0 then
  retention.finished('cancelled', CANCELLED, #cancelled, now, 0)
end
wake(#recovered + #retried)
return { recovered, dead, cancelled, retried }
