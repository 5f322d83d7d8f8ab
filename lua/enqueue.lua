-- enqueue.lua: add one or more jobs, idempotent on id.
--
-- KEYS[1] meta
-- KEYS[2] pending
-- KEYS[3] delayed
-- KEYS[4] events
-- KEYS[5..] rows, one per job, in ARGV order
-- ARGV[3] n, the number of jobs; then 6 ARGV per job:
--         id, payload (JSON text), priority (0-9), delay_ms (0 = now),
--         max_attempts ("" for DEFAULT_MAX_ATTEMPTS), backoff
--         ("type:delay_ms:max_delay_ms" or "");
--         then g, the number of jobs with a group, and 2 ARGV for each:
--         the job's place in the list (0 for the first), its group
--         (so that a batch without groups pays nothing per job for them)
--
-- Returns {fresh, replies}: fresh is 1 when the queue had enqueued nothing
-- before (a new queue, or one obliterated), so that the service adds it to
-- the queues set; replies has one reply per job, in order: {created, job}
-- where created is 1 for a new job and 0 when a job with that id already
-- exists (it is returned as it is, untouched). A new job is pending, or
-- delayed until now + delay_ms. Wakes one claimer per new job: for a
-- delayed job, so that a waiting claimer learns its run-at and looks again
-- when it comes due. A grouped job takes its place in its group
-- (flow.lua): its gseq is drawn whether it is pending or delayed.
-- Errors: TRYAGAIN (flow.lua's flow_here, for grouped jobs only); none
-- else (the service validates every argument first).

-- put adds field and value to a row being built, unless value is false.
local function put(row, field, value)
  if value then
    row[#row + 1], row[#row + 2] = field, value
  end
end

local now = now_ms()
local n = tonumber(ARGV[3])

-- The jobs' groups, by place: nil when none has one.
local groups
local g_at = 4 + n * 6
for k = 0, tonumber(ARGV[g_at]) - 1 do
  groups = groups or {}
  groups[tonumber(ARGV[g_at + 1 + 2 * k])] = ARGV[g_at + 2 + 2 * k]
end

-- First the ids that are new: not in Redis, and not an earlier job of this
-- batch (a repeated id is the existing job the second time).
local new, seen, pending_n, created_n = {}, {}, 0, 0
for i = 0, n - 1 do
  local at = 4 + i * 6
  local id = ARGV[at]
  if not seen[id] and redis.call('EXISTS', job_key(id)) == 0 then
    new[i] = true
    created_n = created_n + 1
    local grouped = groups and groups[i]
    if tonumber(ARGV[at + 3]) <= 0 or grouped then
      pending_n = pending_n + 1
    end
    if grouped then
      flow_here()
    end
  end
  seen[id] = true
end
if created_n == 0 then
  local replies = {}
  for i = 0, n - 1 do
    replies[#replies + 1] = { 0, job_reply(ARGV[4 + i * 6]) }
  end
  return { 0, replies }
end

-- Then write each new job: one HSET and one event per job; the pending
-- order for all of them in one draw, the sets in one ZADD each (a grouped
-- job's own, flow.lua).
local seq = pending_n > 0 and redis.call('HINCRBY', META, 'seq', pending_n) - pending_n or 0
local pending, delayed, rows = {}, {}, {}
for i = 0, n - 1 do
  if new[i] then
    local at = 4 + i * 6
    local id, payload, priority = ARGV[at], ARGV[at + 1], ARGV[at + 2]
    local delay_ms, max_attempts, backoff = tonumber(ARGV[at + 3]), ARGV[at + 4], ARGV[at + 5]
    local group = groups and groups[i]
    -- Only what differs from a default is stored (row.lua), so a small
    -- row stays one listpack; the row written is the reply.
    local state = delay_ms > 0 and 'delayed' or 'pending'
    local row = { 'payload', payload, 'created_at', int(now), 'state', state }
    put(row, 'priority', priority ~= '0' and priority)
    put(row, 'max_attempts', max_attempts ~= '' and max_attempts)
    put(row, 'backoff', backoff ~= '' and backoff)
    if group then
      seq = seq + 1
      put(row, 'group', group)
      put(row, 'gseq', int(seq))
      group_known(group)
    end
    if state == 'delayed' then
      local run_at = int(now + delay_ms)
      put(row, 'run_at', run_at)
      delayed[#delayed + 1], delayed[#delayed + 2] = run_at, id
      if group then
        group_count(group, 'd', 1)
      end
    elseif group then
      redis.call('ZADD', fkey('gpending'), '0', member_of(group, priority, seq, id))
      pending[#pending + 1], pending[#pending + 2] = int(GROUPED + seq), id
      group_ready(group)
    else
      seq = seq + 1
      pending[#pending + 1], pending[#pending + 2] = int(tonumber(priority) * BAND + seq), id
    end
    redis.call('HSET', job_key(id), unpack(row))
    emit('enqueued', id, state)
    table.insert(row, 1, id)
    rows[i] = row
  end
end
each_chunk(pending, 2, function(...) redis.call('ZADD', PENDING, ...) end)
each_chunk(delayed, 2, function(...) redis.call('ZADD', DELAYED, ...) end)

local replies = {}
for i = 0, n - 1 do
  if rows[i] then
    replies[#replies + 1] = { 1, rows[i] }
  else
    replies[#replies + 1] = { 0, job_reply(ARGV[4 + i * 6]) }
  end
end
-- The counter's first jobs mark a queue the service has not listed yet
-- (a queue made by a pause alone is listed again: harmless).
local fresh = redis.call('HINCRBY', META, 'enqueued', created_n) == created_n and 1 or 0
wake(created_n)
return { fresh, replies }
