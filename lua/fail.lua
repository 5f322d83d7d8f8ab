-- fail.lua: the holder reports that the attempt failed.
--
-- KEYS[1..8] the queue's keys (common.lua)
-- KEYS[9]    the job row
-- ARGV[1..2] key base and wake channel (common.lua)
-- ARGV[3]    id
-- ARGV[4]    token
-- ARGV[5]    error text (already truncated by the service)
-- ARGV[6]    retry_in_ms, or -1 for the job's backoff
-- ARGV[7]    "1" when the failure is fatal (no retry), else "0"
--
-- Where the job goes:
--   cancel requested for this attempt     -> cancelled (no retry)
--   fatal, or attempts >= max_attempts    -> dead (failed total + 1)
--   otherwise, retry after the delay      -> delayed, or pending when 0
-- The delay is retry_in_ms when given, else the backoff: exponential
-- (delay_ms * 2^(attempts-1)) or fixed (delay_ms), capped at max_delay_ms;
-- the default is exponential from 1000 ms capped at one hour.
-- Repeating the call with the same token after it succeeded answers the
-- job as it is now, changing nothing (also after another claim took it).
-- Returns the job reply.
-- Errors: EMQGONE no such job; EMQSTALE token is not the current one, or
-- the job is no longer active under it.

local DEFAULT_BACKOFF = 'exponential:1000:3600000'

-- backoff_ms is the retry delay after the given attempt.
local function backoff_ms(spec, attempts)
  local kind, delay, cap = string.match(spec, '^(%a+):(%d+):(%d+)$')
  delay, cap = tonumber(delay), tonumber(cap)
  if kind == 'exponential' then
    delay = delay * 2 ^ math.max(attempts - 1, 0)
  end
  return math.min(delay, cap)
end

local id, token = ARGV[3], ARGV[4]
local code, outcomes = fence(id, token, 'fail')
if code == 'repeat' then
  return job_reply(id)
elseif code then
  return error_reply(code, id)
end

local now = now_ms()
local f = redis.call('HMGET', JOB, 'cancel_requested', 'attempts', 'max_attempts', 'backoff')
local attempts, max_attempts = tonumber(f[2] or '0'), tonumber(f[3] or DEFAULT_MAX_ATTEMPTS)
leave_active(id)
redis.call('HSET', JOB, 'last_error', ARGV[5], 'outcomes', outcomes_after(outcomes, 'fail', token))

if f[1] then
  finish(id, 'cancelled', now)
  emit('cancelled', id, 'cancelled', 'error', ARGV[5])
elseif ARGV[7] == '1' or attempts >= max_attempts then
  finish(id, 'dead', now)
  redis.call('HINCRBY', META, 'failed', 1)
  emit('dead', id, 'dead', 'error', ARGV[5])
else
  local delay = tonumber(ARGV[6])
  if delay < 0 then
    delay = backoff_ms(f[4] or DEFAULT_BACKOFF, attempts)
  end
  local state = 'pending'
  if delay <= 0 then
    push_pending(id, false)
  else
    state = 'delayed'
    local run_at = now + delay
    redis.call('ZADD', DELAYED, int(run_at), id)
    redis.call('HSET', JOB, 'state', 'delayed', 'run_at', int(run_at))
  end
  emit('failed', id, state, 'error', ARGV[5])
  wake(1) -- pending: claim it; delayed: learn when to look again
end
return job_reply(id)
