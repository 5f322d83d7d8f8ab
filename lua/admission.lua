-- admission.lua: a job's admission and lifetime options
-- (docs/design.md#admission-and-lifetimes): dedupe keys, expiry before
-- start, a run's timeout. A job without them pays one table lookup per
-- option where a script looks.
--
-- A job row with options holds (row.lua):
--   dedupe_key, dedupe_mode  the key it was enqueued with and how
--                            ("until_done", "throttle", "debounce")
--   expires_at               ms: not started by then, it is never claimed
--   timeout_ms               the total time one attempt may run
-- and the queue has three keys, made by the first job that needs them:
--   dedupe      HASH  dedupe key -> the id of the job that holds it
--   dedupe_ttl  ZSET  score = end of a throttle window (ms), member = key
--   expiring    ZSET  score = expires_at, member = id of a job not started
-- They are not declared KEYS: a call that uses them first makes sure the
-- slot is not migrating (flow_here), as for the flow control keys; one that
-- only tidies them after its writes (dedupe_released, unexpiring) skips
-- them while it is, and the reaper's expire.lua tidies later.

-- ADMISSION_KEYS are the option keys' names, for obliterate.
local ADMISSION_KEYS = { 'dedupe', 'dedupe_ttl', 'expiring' }

-- dedupe_live reports whether the job row (nil: none) the dedupe hash
-- names for key still answers an enqueue with the key in mode, now, with
-- window the enqueue's ttl_ms (throttle) or max_wait_ms (debounce) as a
-- number or nil. The row must still be the one that took the key (an id
-- can be removed and enqueued again without it); then:
--   until_done  the job is pending, delayed or active;
--   throttle    less than ttl_ms went by since the job was created;
--   debounce    the job has not started (it is then updated in place).
local function dedupe_live(row, key, mode, window, now)
  if not row or row.dedupe_key ~= key then
    return false
  end
  local state = row.state
  if mode == 'until_done' then
    return state == 'pending' or state == 'delayed' or state == 'active'
  elseif mode == 'throttle' then
    return now < tonumber(row.created_at) + (window or 0)
  end
  return (state == 'pending' or state == 'delayed') and not row.started_at
end

-- dedupe_released is told that job id (row) is done for good: it lets go of
-- its dedupe key, unless another job holds the key by now or the key is a
-- throttle's, which lasts its window, finished or not (expire.lua lets it
-- go when the window ends).
local function dedupe_released(id, row)
  local key = row.dedupe_key
  if not key or row.dedupe_mode == 'throttle' then
    return
  end
  if call_here('HGET', BASE .. 'dedupe', key) == id then
    redis.call('HDEL', BASE .. 'dedupe', key)
  end
end

-- expired reports whether job row, about to be claimed now, may not start:
-- it has an expiry, has never started, and the expiry has come.
local function expired(row, now)
  return row.expires_at and not row.started_at and now >= tonumber(row.expires_at)
end

-- unexpiring takes job id out of the expiring set: it started, or ended.
local function unexpiring(id)
  call_here('ZREM', BASE .. 'expiring', id)
end

-- run_deadline is the lease deadline of a job row started at started (ms)
-- and asked to run to deadline: never past started + timeout_ms.
local function run_deadline(row, started, deadline)
  if row.timeout_ms then
    return math.min(deadline, started + tonumber(row.timeout_ms))
  end
  return deadline
end

-- throttles_ended lets go of up to limit dedupe keys whose throttle window
-- ended by now: a key still held by a throttled job (or by a job whose row
-- is gone) is deleted; one a job of another mode took over is kept, as
-- that job lets go of it itself. Returns how many windows it looked at.
local function throttles_ended(now, limit)
  local ended = redis.call('ZRANGEBYSCORE', BASE .. 'dedupe_ttl', '-inf', int(now), 'LIMIT', '0', limit)
  for _, key in ipairs(ended) do
    local id = redis.call('HGET', BASE .. 'dedupe', key)
    local mode = id and redis.pcall('HGET', job_key(id), 'dedupe_mode')
    if type(mode) ~= 'table' then -- a row on the other node of a migration is looked at later
      if id and (not mode or mode == 'throttle') then
        redis.call('HDEL', BASE .. 'dedupe', key)
      end
      redis.call('ZREM', BASE .. 'dedupe_ttl', key)
    end
  end
  return #ended
end
