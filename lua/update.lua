-- update.lua: an operator changes a job that has not started: its payload,
-- its priority, when it runs (docs/design.md#run-times-and-changes-to-a-job-that-waits).
--
-- KEYS[1] meta
-- KEYS[2] pending
-- KEYS[3] delayed
-- KEYS[4] events
-- KEYS[5] job
-- KEYS[6] due
-- ARGV[3] id
-- ARGV[4] "1" to replace the payload with ARGV[5] (JSON text), else "0"
-- ARGV[6] the new priority (0-9), or "" to keep it
-- ARGV[7] when it runs: "" unchanged, "delay" ARGV[8] ms from now (the
--         server's), or "at" ARGV[8] ms since the epoch
-- ARGV[9] actor, ARGV[10] role: who asked, for the event
--
-- A pending job given a new priority moves to that priority's band and
-- keeps its place among the jobs enqueued before and after it (its seq;
-- a grouped job its gseq, flow.lua's member_of). A run time to come makes
-- a pending job delayed (it leaves its group's pending jobs for the
-- group's delayed count) and moves a delayed one; one that has come (a
-- delay of 0, a run_at passed) makes a delayed job pending, as a promote
-- does, and leaves a pending one where it is. A waiting job keeps waiting:
-- its run time is when it runs once its dependencies have ended (none:
-- at once). Writes the event "updated" in the job's state after the call,
-- and wakes one claimer when the job became pending or a delayed job's run
-- time moved (a waiting claimer learns it).
-- Returns the job reply.
-- Errors: EMQGONE no such job; EMQSTATE the job is active or finished;
-- TRYAGAIN (flow.lua's flow_check).

local id, payload, priority, when = ARGV[3], ARGV[4] == '1' and ARGV[5], ARGV[6], ARGV[7]

-- The way out of each state the change does not apply in.
local refused = {
  active = 'only a pending, delayed or waiting job can be changed: its worker has it (cancel it and enqueue anew)',
  completed = 'only a pending, delayed or waiting job can be changed: enqueue a new job',
  dead = 'only a pending, delayed or waiting job can be changed: enqueue a new job, or retry it as it is',
  cancelled = 'only a pending, delayed or waiting job can be changed: enqueue a new job, or retry it as it is',
}

local row = read_row(id)
if not row.state then
  return error_reply('EMQGONE', id)
end
if refused[row.state] then
  return error_reply('EMQSTATE', id, row.state, refused[row.state])
end
flow_check(row)
local now = now_ms()
local run_at
if when == 'delay' then
  run_at = now + tonumber(ARGV[8])
elseif when == 'at' then
  run_at = tonumber(ARGV[8])
end

-- rescore moves pending job id from the band of priority old to the one
-- its row now names, keeping its seq (a grouped job its gseq).
local function rescore(old)
  if row.group then
    redis.call('ZREM', fkey('gpending'), member_of(row.group, old, row.gseq, id))
    redis.call('ZADD', fkey('gpending'), '0', member_of(row.group, row.priority, row.gseq, id))
    return
  end
  local score = tonumber(redis.call('ZSCORE', PENDING, id))
  local band = zero_or_number(row.priority or '0') - zero_or_number(old)
  redis.call('ZADD', PENDING, int(score + band * BAND), id)
end

-- delay makes pending job id (its priority old still in pending) delayed
-- until run_at.
local function delay(old)
  redis.call('ZREM', PENDING, id)
  if row.group then
    redis.call('ZREM', fkey('gpending'), member_of(row.group, old, row.gseq, id))
    group_count(row.group, 'd', 1)
  end
  redis.call('ZADD', DELAYED, int(run_at), id)
  due.at(run_at)
  del_fields(id, row, { 'ready_at' })
  set_fields(id, row, { 'state', 'delayed', 'run_at', int(run_at) })
end

-- The row's own fields first: a job made pending below takes its place
-- by its new priority.
local old = row.priority or '0'
local fields = {}
put_field(fields, 'payload', payload)
if priority ~= '' and priority ~= '0' then
  put_field(fields, 'priority', priority)
elseif priority == '0' then
  del_fields(id, row, { 'priority' })
end
if #fields > 0 then
  set_fields(id, row, fields)
end

local state = row.state
if state == 'pending' then
  if run_at and run_at > now then
    delay(old)
  elseif priority ~= '' and priority ~= old then
    rescore(old)
  end
elseif state == 'delayed' and run_at then
  if run_at <= now then
    redis.call('ZREM', DELAYED, id)
    push_pending(id, row, false)
    wake(1)
  else
    redis.call('ZADD', DELAYED, int(run_at), id)
    due.at(run_at)
    set_fields(id, row, { 'run_at', int(run_at) })
    wake(1) -- a waiting claimer learns the new run time
  end
elseif state == 'waiting' and run_at then
  if run_at > now then
    set_fields(id, row, { 'run_at', int(run_at) })
  else
    del_fields(id, row, { 'run_at' })
  end
end
emit('updated', id, row.state, 'actor', ARGV[9], 'role', ARGV[10])
return reply_of(id, row)
