-- retry_all.lua: an operator sends a queue's dead (or cancelled) jobs back
-- to pending, oldest finished first, up to a limit per call
-- (docs/design.md#bulk-actions).
--
-- KEYS[1] meta
-- KEYS[2] pending
-- KEYS[3] set, the dead or cancelled set
-- KEYS[4] events
-- KEYS[5] due
-- ARGV[3] state: "dead" or "cancelled", the set's
-- ARGV[4] limit: at most this many jobs
-- ARGV[5] actor, ARGV[6] role: who asked, for the events
--
-- Each job is retried as retry.lua retries one, in the same steps: a fresh
-- attempt budget, its stalled count, finish, cancel request and expiry
-- gone, its dedupe key taken again unless another job that waits or runs
-- holds it (one retried earlier in this call included: the key is never
-- held by two waiting jobs), counted in its batch again (or leaving a
-- done one), a grouped job at its place in its group; one "retried" event
-- each, with the actor. The rows are read whole before the first write
-- (here.lua): a row on the other node of a migration stops the call with
-- TRYAGAIN, having written nothing. A row lost outside a migration is
-- dropped from the set, and not counted.
-- Returns {retried, more}: more is 1 when jobs of the state are left.
-- Errors: EMQINVALID a state other than dead or cancelled; TRYAGAIN
-- (here.lua).

local state, limit = ARGV[3], tonumber(ARGV[4])
if state ~= 'dead' and state ~= 'cancelled' then
  return redis.error_reply('EMQINVALID only dead or cancelled jobs can be retried, not ' .. state)
end

-- FIELDS are what a retry reads of a row: what retry.lua's steps use, and
-- never the payload or result, which may be large.
local FIELDS = { 'state', 'priority', 'group', 'gseq', 'flow', 'batch_id', 'dependants', 'depends_on',
  'dedupe_key', 'dedupe_mode', 'attempts', 'stalled', 'finished_at', 'cancel_requested', 'cancel_reason',
  'expires_at', 'run_at' }

-- fields_of reads the FIELDS of job id's row, which rows_here found here,
-- as a row table (row.lua's read_row): empty when there is no such job.
local function fields_of(id)
  local values = redis.call('HMGET', job_key(id), unpack(FIELDS))
  local row = {}
  for i, field in ipairs(FIELDS) do
    row[field] = values[i] or nil
  end
  return row
end

-- holder_live reports whether the job that holds dedupe key is pending,
-- delayed or active (admission.lua's dedupe_live): not when none holds it,
-- nor when a job of this call does (it is dead or cancelled). Once per key.
local listed, holders = {}, {}
local function holder_live(key)
  if holders[key] == nil then
    flow_here() -- the dedupe keys are not declared
    local holder = redis.call('HGET', BASE .. 'dedupe', key)
    holders[key] = holder and not listed[holder] and dedupe_live(row_here(holder), key, 'until_done', nil, 0) or false
  end
  return holders[key]
end

local ids = redis.call('ZRANGE', SET, 0, limit)
local more = #ids > limit
ids[limit + 1] = nil
if #ids == 0 then
  return { 0, 0 }
end
rows_here(ids)
for _, id in ipairs(ids) do
  listed[id] = true
end
-- The plan: each job's row and whether another job holds its key; the
-- ids leaving the set (lost rows too). Reads only.
local plan, leaving = {}, {}
for _, id in ipairs(ids) do
  local row = fields_of(id)
  if not row.state or row.state == state then
    leaving[#leaving + 1] = id
  end
  if row.state == state then
    flow_check(row)
    local key = row.dedupe_mode ~= 'throttle' and row.dedupe_key
    plan[#plan + 1] = { id, row, key, key and holder_live(key) }
  end
end

-- The writes, job by job as retry.lua makes them.
each_chunk(leaving, 1, 'ZREM', SET)
local taken = {} -- the dedupe keys this call gave a job
for _, step in ipairs(plan) do
  local id, row, key, other = step[1], step[2], step[3], step[4]
  if row.batch_id and batches.reopened(row.batch_id, id, row.state) then
    del_fields(id, row, { 'batch_id' }) -- its batch is done: it leaves it
  end
  del_fields(id, row, { 'attempts', 'stalled', 'finished_at', 'cancel_requested', 'cancel_reason', 'expires_at' })
  if other or (key and taken[key]) then
    del_fields(id, row, { 'dedupe_key', 'dedupe_mode' })
  elseif key then
    redis.call('HSET', BASE .. 'dedupe', key, id)
    taken[key] = true
  end
  push_pending(id, row, false)
  emit('retried', id, 'pending', 'actor', ARGV[5], 'role', ARGV[6])
end
wake(#plan)
return { #plan, more and 1 or 0 }
