-- enqueue.lua: add one or more jobs, idempotent on id.
--
-- KEYS[1..8] the queue's keys (common.lua)
-- ARGV[1..2] key base and wake channel (common.lua)
-- ARGV[3]    n, the number of jobs; then 6 ARGV per job:
--            id, payload (JSON text), priority (0-9), delay_ms (0 = now),
--            max_attempts ("" for DEFAULT_MAX_ATTEMPTS), backoff
--            ("type:delay_ms:max_delay_ms" or "")
--
-- Returns {fresh, replies}: fresh is 1 when the queue had no meta hash
-- before (a new queue, or one obliterated), so that the service adds it to
-- the queues set; replies has one reply per job, in order: {created, job}
-- where created is 1 for a new job and 0 when a job with that id already
-- exists (it is returned as it is, untouched). A new job is pending, or delayed until
-- now + delay_ms. Wakes one claimer per new job: for a delayed job, so that
-- a waiting claimer learns its run-at and looks again when it comes due.
-- Errors: none (the service validates every argument first).

-- put adds field and value to a row being built, unless value is false.
local function put(row, field, value)
  if value then
    row[#row + 1], row[#row + 2] = field, value
  end
end

local now = now_ms()
local fresh = redis.call('EXISTS', META) == 0 and 1 or 0
local n = tonumber(ARGV[3])
local replies, created_n = {}, 0
for i = 0, n - 1 do
  local at = 4 + i * 6
  local id, payload, priority = ARGV[at], ARGV[at + 1], ARGV[at + 2]
  local delay_ms, max_attempts, backoff = tonumber(ARGV[at + 3]), ARGV[at + 4], ARGV[at + 5]
  local key = job_key(id)
  local created = 0
  if redis.call('EXISTS', key) == 0 then
    created = 1
    created_n = created_n + 1
    -- Only what differs from a default is stored (see common.lua), so a
    -- small row stays one listpack; it is written in one HSET and is the
    -- reply as it is.
    local state = delay_ms > 0 and 'delayed' or 'pending'
    local row = { 'payload', payload, 'created_at', int(now), 'state', state }
    put(row, 'priority', priority ~= '0' and priority)
    put(row, 'max_attempts', max_attempts ~= '' and max_attempts)
    put(row, 'backoff', backoff ~= '' and backoff)
    if state == 'delayed' then
      local run_at = int(now + delay_ms)
      put(row, 'run_at', run_at)
      redis.call('ZADD', DELAYED, run_at, id)
    else
      add_pending(id, tonumber(priority), false)
    end
    redis.call('HSET', key, unpack(row))
    emit('enqueued', id, state)
    table.insert(row, 1, id)
    replies[#replies + 1] = { created, row }
  else
    replies[#replies + 1] = { created, job_reply(id) }
  end
end
redis.call('HINCRBY', META, 'enqueued', created_n)
wake(created_n)
return { fresh, replies }
