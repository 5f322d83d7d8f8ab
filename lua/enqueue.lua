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
    -- Only what differs from a default is stored (see common.lua): a
    -- small row stays one listpack.
    redis.call('HSET', key, 'payload', payload, 'created_at', int(now))
    if priority ~= '0' then
      redis.call('HSET', key, 'priority', priority)
    end
    if max_attempts ~= '' then
      redis.call('HSET', key, 'max_attempts', max_attempts)
    end
    if backoff ~= '' then
      redis.call('HSET', key, 'backoff', backoff)
    end
    if delay_ms > 0 then
      local run_at = now + delay_ms
      redis.call('HSET', key, 'state', 'delayed', 'run_at', int(run_at))
      redis.call('ZADD', DELAYED, int(run_at), id)
      emit('enqueued', id, 'delayed')
    else
      push_pending(id, false)
      emit('enqueued', id, 'pending')
    end
  end
  replies[#replies + 1] = { created, job_reply(id) }
end
redis.call('HINCRBY', META, 'enqueued', created_n)
wake(created_n)
return { fresh, replies }
