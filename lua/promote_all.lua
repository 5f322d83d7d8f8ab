-- promote_all.lua: an operator makes a queue's delayed jobs pending now,
-- earliest run-at first, up to a limit per call
-- (docs/design.md#bulk-actions).
--
-- KEYS[1] meta
-- KEYS[2] pending
-- KEYS[3] delayed
-- KEYS[4] events
-- KEYS[5] due
-- ARGV[3] limit: at most this many jobs
-- ARGV[4] actor, ARGV[5] role: who asked, for the events
--
-- Each job is promoted as promote.lua promotes one: to the back of its
-- priority in pending (a grouped job at its place in its group, and out
-- of its group's delayed count), its run_at gone; one "promoted" event
-- each, with the actor; the claimers are woken for them. The rows are
-- read before the first write (here.lua): a row on the other node of a
-- migration stops the call with TRYAGAIN, having written nothing. A row
-- lost outside a migration is dropped from the set, and not counted.
-- Returns {promoted, more}: more is 1 when delayed jobs are left.
-- Errors: TRYAGAIN (here.lua).

local limit = tonumber(ARGV[3])

-- FIELDS are what a promotion reads of a row: what push_pending
-- (lifecycle.lua) and flow_check use, never the payload.
local FIELDS = { 'state', 'priority', 'group', 'gseq', 'flow', 'batch_id', 'dependants', 'depends_on', 'run_at' }

local ids = redis.call('ZRANGE', DELAYED, 0, limit)
local more = #ids > limit
ids[limit + 1] = nil
if #ids == 0 then
  return { 0, 0 }
end
rows_here(ids)
local plan, leaving = {}, {}
for _, id in ipairs(ids) do
  local values = redis.call('HMGET', job_key(id), unpack(FIELDS))
  local row = {}
  for i, field in ipairs(FIELDS) do
    row[field] = values[i] or nil
  end
  if not row.state or row.state == 'delayed' then
    leaving[#leaving + 1] = id
  end
  if row.state == 'delayed' then
    flow_check(row)
    plan[#plan + 1] = { id, row }
  end
end

each_chunk(leaving, 1, 'ZREM', DELAYED)
for _, step in ipairs(plan) do
  push_pending(step[1], step[2], false)
  emit('promoted', step[1], 'pending', 'actor', ARGV[4], 'role', ARGV[5])
end
wake(#plan)
return { #plan, more and 1 or 0 }
