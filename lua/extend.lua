-- extend.lua: a checkpoint. Re-score the lease of a job held under token,
-- optionally storing progress, and tell the holder about a cancel request.
-- A checkpoint of progress alone (lease_ms "0") leaves the lease as it is.
--
-- KEYS[1] active
-- KEYS[2] events
-- KEYS[3] job
-- KEYS[4] meta
-- KEYS[5] due
-- ARGV[3] id
-- ARGV[4] token
-- ARGV[5] lease_ms; "0": leave the lease as it is (progress only)
-- ARGV[6] "1" when ARGV[7] carries progress to store, else "0"
-- ARGV[7] progress (JSON text)
--
-- A lease that has lapsed but that no sweep has recovered yet is extended:
-- the token proves nobody else holds the job. A job a sweep moved away is
-- not active any more, and is never put back in the active set. A job with
-- a timeout (admission.lua) is never extended past started_at +
-- timeout_ms; once that has come, the run is over and the holder is told
-- so (EMQSTALE) until the sweep fails the attempt.
-- A checkpoint with progress emits "progress", which carries the
-- progress (field progress) when its JSON text is at most 1024 bytes,
-- else progress_truncated = "1": the job holds it. A checkpoint without
-- progress emits nothing.
-- Returns {lease_expires_at (ms), cancel_requested (0/1), cancel_reason}:
-- the new lease, or with lease_ms "0" the one the job has (which may have
-- passed: only a checkpoint with a lease renews it).
-- Errors: EMQGONE no such job; EMQSTALE token is not the current one, or
-- the job is no longer active under it, or its timeout has come.

local id, token = ARGV[3], ARGV[4]
-- What a plain job does not have is read only when it is there: a
-- missing field costs HMGET a scan of the whole row.
local f = redis.call('HMGET', JOB, 'state', 'token', 'cancel_requested', 'timeout_ms')
local code = fence_row({ state = f[1], token = f[2] }, token)
if code then
  return error_reply(code, id)
end
local now = now_ms()
local renew = ARGV[5] ~= '0'
local deadline = renew and now + tonumber(ARGV[5])
if f[4] then
  local ends = tonumber(redis.call('HGET', JOB, 'started_at')) + tonumber(f[4])
  if now >= ends then
    return error_reply('EMQSTALE', id)
  end
  deadline = renew and math.min(deadline, ends)
end
-- The lease is the job's score in the active set, and only that
-- (docs/design.md#fencing): a row claimed before kept a copy, which
-- readers take the score over.
-- A lease moved later keeps its place in the due index (due.lua); one
-- made shorter may need an earlier one.
if not renew then
  deadline = tonumber(redis.call('ZSCORE', ACTIVE, id))
elseif redis.call('ZADD', ACTIVE, 'GT', 'CH', int(deadline), id) == 0 then
  redis.call('ZADD', ACTIVE, int(deadline), id)
  due.at(deadline)
end
if ARGV[6] == '1' then
  redis.call('HSET', JOB, 'progress', ARGV[7])
  -- The event carries the progress when it is small (1 KB); else only
  -- that it changed (a reader of the stream reads the job).
  if #ARGV[7] <= 1024 then
    emit('progress', id, 'active', 'progress', ARGV[7])
  else
    emit('progress', id, 'active', 'progress_truncated', '1')
  end
end
if f[3] then
  return { deadline, 1, redis.call('HGET', JOB, 'cancel_reason') or '' }
end
return { deadline, 0, '' }
