-- fail.lua: the holder reports that the attempt failed.
--
-- KEYS[1] meta
-- KEYS[2] pending
-- KEYS[3] active
-- KEYS[4] delayed
-- KEYS[5] dead
-- KEYS[6] cancelled
-- KEYS[7] events
-- KEYS[8] job
-- KEYS[9] stats
-- KEYS[10] due
-- ARGV[3] id
-- ARGV[4] token
-- ARGV[5] error text (already truncated by the service)
-- ARGV[6] retry_in_ms, or -1 for the job's backoff
-- ARGV[7] "1" when the failure is fatal (no retry), else "0"
--
-- Where the job goes:
--   cancel requested for this attempt     -> cancelled (no retry)
--   fatal, or attempts >= max_attempts    -> dead (failed total + 1)
--   otherwise, retry after the delay      -> delayed, or pending when 0
-- The delay is retry_in_ms when given, else the backoff: exponential
-- (delay_ms * 2^(attempts-1)) or fixed (delay_ms), capped at max_delay_ms;
-- the default is exponential from 1000 ms capped at one hour. A job that
-- ends dead or cancelled may trim the oldest of its set (lifecycle.lua's
-- retention).
-- Repeating the call with the same token after it succeeded answers the
-- job as it is now, changing nothing (also after another claim took it).
-- Returns the job reply.
-- Errors: EMQGONE no such job; EMQSTALE token is not the current one, or
-- the job is no longer active under it.

local id, token, text = ARGV[3], ARGV[4], ARGV[5]
local row, answer = fenced_report(id, token, 'fail')
if not row then
  return answer
end

local now = now_ms()
local attempts = tonumber(row.attempts or '0')
local max_attempts = tonumber(row.max_attempts or DEFAULT_MAX_ATTEMPTS)
-- The retry delay before the first write: nothing that can fail comes after it.
local delay = tonumber(ARGV[6])
if delay < 0 then
  delay = backoff_ms(row, attempts)
end
stat_run(row, now)
leave_active(id, row)
-- One HSET for the report and the job's new place.
local fields = { 'last_error', text, 'outcomes', outcomes_after(row.outcomes, 'fail', token) }
if row.cancel_requested then
  end_reported(id, row, fields, 'cancelled', now)
  emit('cancelled', id, 'cancelled', 'error', text)
  retention.finished('cancelled', CANCELLED, 1, now, 0)
elseif ARGV[7] == '1' or attempts >= max_attempts then
  end_reported(id, row, fields, 'dead', now)
  redis.call('HINCRBY', META, 'failed', 1)
  emit('dead', id, 'dead', 'error', text)
  retention.finished('dead', DEAD, 1, now, 0)
else
  -- When the attempt ended, for its run's length (the row's finished_at
  -- says it for the other two).
  fields[#fields + 1], fields[#fields + 2] = 'failed_at', int(now)
  local state = requeue(id, row, fields, delay, now)
  emit('failed', id, state, 'error', text)
  wake(1) -- pending: claim it; delayed: learn when to look again
end
return reply_of(id, row)
