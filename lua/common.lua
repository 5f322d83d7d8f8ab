-- common.lua: the names and helpers every echo_mq script shares. Lua scripts
-- cannot import one another, so lua.go prepends this file to each script;
-- a script's own header names the KEYS and ARGV it adds to the ones below.
--
-- Every script gets the queue's keys first, in this order, all under the
-- queue's {queue} hash tag so that the script stays in one Cluster slot:
--   KEYS[1] meta       HASH  seq (pending order), token (fencing counter),
--                            paused, enqueued, completed and failed totals
--   KEYS[2] pending    ZSET  score = priority * BAND +/- seq (claim order)
--   KEYS[3] active     ZSET  score = lease deadline, ms, server clock
--   KEYS[4] delayed    ZSET  score = run-at, ms
--   KEYS[5] completed  ZSET  score = finished-at, ms
--   KEYS[6] dead       ZSET  score = finished-at, ms
--   KEYS[7] cancelled  ZSET  score = finished-at, ms
--   KEYS[8] events     STREAM  one entry per state change (see emit)
-- then, for a script on one job, KEYS[9], the job's row.
--   ARGV[1] the queue's key base, "<prefix>:{<queue>}:"; a job row found by
--           a range scan is BASE .. "job:" .. id, in the same slot
--   ARGV[2] the wake channel, told how many claimers to wake: one per job
--           that became pending or delayed
--
-- A job row is a HASH with the job's JSON field names: state, payload,
-- result, progress, priority, attempts, max_attempts, stalled, last_error,
-- cancel_requested ("1" when set), cancel_reason, worker, backoff
-- ("type:delay_ms:max_delay_ms", absent for the default), created_at,
-- run_at, started_at, lease_expires_at, finished_at (ms), token (the current
-- claim's fencing token) and outcomes (" complete:<token> fail:<token> ":
-- the last OUTCOMES_KEPT reports holders made, newest first, kept across
-- later claims, so that a holder repeating its report is answered as the
-- first time even when the job has moved on since). Absent fields mean
-- zero, false or never, and an absent max_attempts DEFAULT_MAX_ATTEMPTS:
-- a row holds only what differs from those, so that a pending job's row is
-- a few small fields and Redis keeps it as one listpack (see the README's
-- "Redis settings" for hash-max-listpack-value).

local META, PENDING, ACTIVE, DELAYED = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local COMPLETED, DEAD, CANCELLED, EVENTS = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local JOB = KEYS[9]
local BASE, WAKE = ARGV[1], ARGV[2]

-- SET_OF names the sorted set that holds a job in each state.
local SET_OF = {
  pending = PENDING, active = ACTIVE, delayed = DELAYED,
  completed = COMPLETED, dead = DEAD, cancelled = CANCELLED,
}

-- DEFAULT_MAX_ATTEMPTS is the attempt budget of a row without max_attempts
-- (job.DefaultMaxAttempts in Go).
local DEFAULT_MAX_ATTEMPTS = 3

-- BAND is the width of one priority band of pending scores: a job of
-- priority p scores p * BAND + seq, so lower priorities come first and
-- jobs are FIFO within one. Scores stay exact doubles below 2^53.
local BAND = 1e13

-- int renders a number as an integer string: redis.call would otherwise
-- format large numbers with 14 significant digits and lose precision.
local function int(n)
  return string.format('%.0f', n)
end

-- now_ms is the Redis server's clock in milliseconds: the only clock that
-- leases, delays and finish times are measured on.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function job_key(id)
  return BASE .. 'job:' .. id
end

-- job_reply is the reply form of one job: its id, then HGETALL of its row.
local function job_reply(id)
  local row = redis.call('HGETALL', job_key(id))
  table.insert(row, 1, id)
  return row
end

-- read_row reads job id's row as a field -> value table (empty when there
-- is no such job). The hot scripts read a row once, change the table as
-- they change the row, and answer reply_of it: no second HGETALL.
local function read_row(id)
  local flat, row = redis.call('HGETALL', job_key(id)), {}
  for i = 1, #flat, 2 do
    row[flat[i]] = flat[i + 1]
  end
  return row
end

-- reply_of is the reply form (as job_reply) of a row read by read_row.
local function reply_of(id, row)
  local reply = { id }
  for field, value in pairs(row) do
    reply[#reply + 1] = field
    reply[#reply + 1] = value
  end
  return reply
end

-- set_fields writes fields (field, value, ...) to job id's row in one HSET
-- and to row, its table.
local function set_fields(id, row, fields)
  for i = 1, #fields, 2 do
    row[fields[i]] = fields[i + 1]
  end
  redis.call('HSET', job_key(id), unpack(fields))
end

-- del_fields deletes those of names that row has, from the row and the
-- table, in one HDEL (none when it has none).
local function del_fields(id, row, names)
  local present = {}
  for _, name in ipairs(names) do
    if row[name] then
      row[name] = nil
      present[#present + 1] = name
    end
  end
  if #present > 0 then
    redis.call('HDEL', job_key(id), unpack(present))
  end
end

-- CHUNK bounds the arguments of one variadic call made from a list of any
-- length (Lua's unpack has a stack limit).
local CHUNK = 500

-- each_chunk calls fn with list split into chunks of at most CHUNK items
-- (pairs of items when width is 2).
local function each_chunk(list, width, fn)
  local step = CHUNK * width
  for first = 1, #list, step do
    fn(unpack(list, first, math.min(first + step - 1, #list)))
  end
end

-- EVENTS_KEPT is about how many entries the event stream keeps (MAXLEN ~).
local EVENTS_KEPT = 10000

-- emit appends one state change to the queue's event stream, in the same
-- atomic step as the change: kind, then the job's id and new state (nil
-- for a queue-level change), then field/value pairs (actor, role, reason,
-- error, count). The entry's id carries the server's time.
local function emit(kind, id, state, ...)
  local entry = { 'XADD', EVENTS, 'MAXLEN', '~', EVENTS_KEPT, '*', 'kind', kind }
  if id then
    entry[#entry + 1] = 'job'
    entry[#entry + 1] = id
  end
  if state then
    entry[#entry + 1] = 'state'
    entry[#entry + 1] = state
  end
  local extra = { ... }
  for i = 1, #extra, 2 do
    if extra[i + 1] and extra[i + 1] ~= '' then
      entry[#entry + 1] = extra[i]
      entry[#entry + 1] = tostring(extra[i + 1])
    end
  end
  redis.call(unpack(entry))
end

-- wake wakes n long-polling claimers, on any service replica: jobs became
-- pending (claim them), or delayed (a waiter looks again at its run-at).
local function wake(n)
  if n > 0 then
    redis.call('PUBLISH', WAKE, n)
  end
end

-- add_pending puts job id in the pending set: at the back of its priority
-- band, or at the front when front is true (a job recovered from a stall).
-- It does not touch the row.
local function add_pending(id, priority, front)
  local seq = redis.call('HINCRBY', META, 'seq', 1)
  local score = priority * BAND + seq
  if front then
    score = priority * BAND - seq
  end
  redis.call('ZADD', PENDING, int(score), id)
end

-- push_pending makes an existing job pending (add_pending, and its row).
local function push_pending(id, front)
  local key = job_key(id)
  add_pending(id, tonumber(redis.call('HGET', key, 'priority') or '0'), front)
  redis.call('HSET', key, 'state', 'pending')
  redis.call('HDEL', key, 'run_at')
end

-- promote_due moves up to limit delayed jobs whose run-at has come to the
-- back of pending, in run-at order, and returns how many it moved.
local function promote_due(now, limit)
  local due = redis.call('ZRANGEBYSCORE', DELAYED, '-inf', int(now), 'LIMIT', 0, limit)
  for _, id in ipairs(due) do
    redis.call('ZREM', DELAYED, id)
    if redis.call('EXISTS', job_key(id)) == 1 then
      push_pending(id, false)
      emit('due', id, 'pending')
    end
  end
  return #due
end

-- due_in is how many ms from now the earliest delayed job comes due (0 if
-- it is due), or -1 when no job is delayed. It is a span on the server's
-- clock, so a waiter needs no clock of its own to agree with it.
local function due_in(now)
  local first = redis.call('ZRANGE', DELAYED, 0, 0, 'WITHSCORES')
  if #first == 0 then
    return -1
  end
  return math.max(tonumber(first[2]) - now, 0)
end

-- finish moves a job that has left the active set into a terminal state.
local function finish(id, state, now)
  redis.call('ZADD', SET_OF[state], int(now), id)
  redis.call('HSET', job_key(id), 'state', state, 'finished_at', int(now))
end

-- next_tokens draws n fencing tokens from the queue's counter in one call
-- and returns the first; the others follow it. A counter that does not
-- exist yet (a new queue, or one obliterated and made again) starts at the
-- server's time in microseconds, so a token is never reused even across an
-- obliterate: the old counter would have had to count more claims than
-- microseconds went by. Tokens stay below 2^53 (until the year 2255),
-- exact in JSON and Lua numbers.
local function next_tokens(n)
  local last = redis.call('HINCRBY', META, 'token', n)
  if last == n then
    local t = redis.call('TIME')
    last = tonumber(t[1]) * 1000000 + tonumber(t[2]) + n - 1
    redis.call('HSET', META, 'token', int(last))
  end
  return last - n + 1
end

-- claim moves due delayed jobs to pending, then leases up to count pending
-- jobs for lease_ms, each under a fresh fencing token (next_tokens). A
-- paused queue claims nothing. Returns the claimed job replies.
local function claim(now, count, lease_ms, worker)
  promote_due(now, 1000)
  if redis.call('HGET', META, 'paused') then
    return {}
  end
  local popped = redis.call('ZPOPMIN', PENDING, count)
  if #popped == 0 then
    return {}
  end
  -- Per job: one HGETALL, one HSET (one HDEL if the last attempt left a
  -- cancel request or a worker), one event; per call: one token draw and
  -- one ZADD. Keep it so: this runs for every job the service hands out.
  local jobs, leased = {}, {}
  local token = next_tokens(#popped / 2)
  local deadline, started = int(now + lease_ms), int(now)
  for i = 1, #popped, 2 do
    local id = popped[i]
    local row = read_row(id)
    if row.state then -- a row removed while pending is skipped
      del_fields(id, row, { 'cancel_requested', 'cancel_reason', 'worker' })
      local fields = { 'state', 'active', 'token', int(token), 'started_at', started,
        'lease_expires_at', deadline, 'attempts', tostring((tonumber(row.attempts) or 0) + 1) }
      if worker ~= '' then
        fields[#fields + 1], fields[#fields + 2] = 'worker', worker
      end
      set_fields(id, row, fields)
      leased[#leased + 1], leased[#leased + 2] = deadline, id
      emit('claimed', id, 'active', 'worker', worker)
      jobs[#jobs + 1] = reply_of(id, row)
      token = token + 1
    end
  end
  each_chunk(leased, 2, function(...) redis.call('ZADD', ACTIVE, ...) end)
  return jobs
end

-- OUTCOMES_KEPT is how many holders' reports a job remembers.
local OUTCOMES_KEPT = 8

-- outcomes_after is a row's outcomes field once the holder of token has
-- reported verb: old (the field as it was, or nil) with the report put
-- first and the oldest dropped beyond OUTCOMES_KEPT.
local function outcomes_after(old, verb, token)
  local kept, n = ' ' .. verb .. ':' .. token .. ' ', 1
  for entry in string.gmatch(old or '', '%S+') do
    if n >= OUTCOMES_KEPT then
      break
    end
    kept, n = kept .. entry .. ' ', n + 1
  end
  return kept
end

-- fence_row is fence on a row read by read_row.
local function fence_row(row, token, verb)
  if not row.state then
    return 'EMQGONE'
  end
  if verb and row.outcomes and string.find(row.outcomes, ' ' .. verb .. ':' .. token .. ' ', 1, true) then
    return 'repeat'
  end
  if row.token ~= token or row.state ~= 'active' then
    return 'EMQSTALE'
  end
  return nil
end

-- fence checks a holder's call on job id under token. It returns
-- 'repeat' when the holder already reported verb under this token (answer
-- the job as it is), or an error code: EMQGONE when there is no such job,
-- EMQSTALE when token is not the current one or the job is no longer
-- active under it; nil when the call may go ahead, and then, second, the
-- row's outcomes field (for outcomes_after).
local function fence(id, token, verb)
  local row = redis.call('HMGET', job_key(id), 'state', 'token', 'outcomes')
  local code = fence_row({ state = row[1], token = row[2], outcomes = row[3] }, token, verb)
  return code, row[3] or nil
end

-- leave_active takes a job out of the active set and drops its lease.
local function leave_active(id)
  redis.call('ZREM', ACTIVE, id)
  redis.call('HDEL', job_key(id), 'lease_expires_at')
end

-- delete_first deletes up to limit jobs, rows and all, taking each set in
-- turn from its lowest score, and returns how many it deleted.
local function delete_first(sets, limit)
  local deleted = 0
  for _, set in ipairs(sets) do
    if deleted >= limit then
      break
    end
    local popped, keys = redis.call('ZPOPMIN', set, limit - deleted), {}
    for i = 1, #popped, 2 do
      keys[#keys + 1] = job_key(popped[i])
    end
    each_chunk(keys, 1, function(...) redis.call('DEL', ...) end)
    deleted = deleted + #keys
  end
  return deleted
end

-- TRIM_STEP bounds the completed jobs one complete deletes for retention,
-- so that no call does unbounded work.
local TRIM_STEP = 10

-- trim_completed deletes the oldest completed jobs (rows too) beyond keep,
-- at most TRIM_STEP for each of the n jobs just completed (and at most
-- 1000); keep 0 keeps every one.
local function trim_completed(keep, n)
  if keep <= 0 then
    return
  end
  local excess = redis.call('ZCARD', COMPLETED) - keep
  if excess <= 0 then
    return
  end
  delete_first({ COMPLETED }, math.min(excess, TRIM_STEP * n, 1000))
end

-- complete_one finishes the job id held under token, storing result when
-- has_result is '1', and adds its id to done, for finish_completed. Returns
-- the job reply and whether the call was a repeat of a complete that
-- succeeded (answered with the job as it is), or nil and an error code.
-- Per job it makes one HGETALL, one HSET, one HDEL and one event: the sets
-- and counters are changed once per call, by finish_completed.
local function complete_one(done, id, token, has_result, result, now)
  local row = read_row(id)
  local code = fence_row(row, token, 'complete')
  if code == 'repeat' then
    return reply_of(id, row), true
  elseif code then
    return nil, code
  end
  local fields = { 'state', 'completed', 'finished_at', int(now),
    'outcomes', outcomes_after(row.outcomes, 'complete', token) }
  if has_result == '1' then
    fields[#fields + 1], fields[#fields + 2] = 'result', result
  end
  set_fields(id, row, fields)
  del_fields(id, row, { 'lease_expires_at' })
  emit('completed', id, 'completed')
  done[#done + 1] = id
  return reply_of(id, row)
end

-- finish_completed moves the jobs complete_one finished (done) from the
-- active set to the completed set, counts them, and trims completed jobs
-- beyond keep: a few calls for the whole batch.
local function finish_completed(done, now, keep)
  if #done == 0 then
    return
  end
  local scored = {}
  for _, id in ipairs(done) do
    scored[#scored + 1], scored[#scored + 2] = int(now), id
  end
  each_chunk(done, 1, function(...) redis.call('ZREM', ACTIVE, ...) end)
  each_chunk(scored, 2, function(...) redis.call('ZADD', COMPLETED, ...) end)
  redis.call('HINCRBY', META, 'completed', #done)
  trim_completed(keep, #done)
end

-- error_reply turns an error code into the script's error reply.
local function error_reply(code, id)
  local text = {
    EMQGONE = 'no such job',
    EMQSTALE = 'the token does not hold this job',
    EMQSTATE = 'the verb does not apply in the job\'s state',
  }
  return redis.error_reply(code .. ' ' .. (text[code] or 'error') .. ': ' .. id)
end
