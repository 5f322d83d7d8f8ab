-- remove.lua: delete a job, its row and its log (log_append.lua).
--
-- KEYS[1] pending
-- KEYS[2] active
-- KEYS[3] delayed
-- KEYS[4] completed
-- KEYS[5] dead
-- KEYS[6] cancelled
-- KEYS[7] events
-- KEYS[8] job
-- KEYS[9] meta
-- KEYS[10] due
-- ARGV[3] id
-- ARGV[4] "1" to remove an active job too (its holder's next call is
--         answered EMQGONE), else "0"
-- ARGV[5] actor, ARGV[6] role: who asked, for the event
--
-- A job enqueued again under the same id gets random tokens (lifecycle.lua's
-- lease): one an earlier holder knows only by a chance of 2^-53
-- (docs/design.md#fencing).
-- A job removed before it ended counts as cancelled in its batch, and its
-- dependants learn that it ended "removed" (batches.lua).
-- Returns the state the job was in.
-- Errors: EMQGONE no such job; EMQSTATE the job is active and force is not set.

local id = ARGV[3]
local state, group, flowed, dedupe_key, dedupe_mode, batch_id, dependants, depends_on, logs =
  unpack(redis.call('HMGET', JOB, 'state', 'group', 'flow', 'dedupe_key', 'dedupe_mode',
    'batch_id', 'dependants', 'depends_on', 'logs'))
if not state then
  return error_reply('EMQGONE', id)
end
if state == 'active' and ARGV[4] ~= '1' then
  return error_reply('EMQSTATE', id, state, 'remove it with ?force=true, or cancel it first')
end
local row = (group or flowed or batch_id or dependants or depends_on) and read_row(id)
flow_check(row)
if logs then
  flow_here() -- a job's log is a key no script declares
  redis.call('DEL', BASE .. 'logs:' .. id)
end
redis.call('ZREM', set_of(state), id)
if group or flowed then
  if state == 'active' then
    flow_left(id, row)
  end
  if group then
    flow_unqueued(id, row)
  end
  redis.call('DEL', JOB)
  flow_finished(id, row)
else
  redis.call('DEL', JOB)
end
dedupe_released(id, { dedupe_key = dedupe_key, dedupe_mode = dedupe_mode })
if row and state ~= 'completed' and state ~= 'dead' and state ~= 'cancelled' then
  job_ended(id, row, 'removed', now_ms()) -- its batch counts it cancelled
end
emit('removed', id, nil, 'actor', ARGV[5], 'role', ARGV[6])
due.at(now_ms()) -- the reaper looks whether the queue is left empty (settle.lua)
return state
