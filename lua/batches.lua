-- batches.lua: batches and dependencies (docs/design.md#batches-and-dependencies).
--
-- A job of a batch carries batch_id in its row; a job that others wait on
-- carries dependants = "1"; a job that waits carries depends_on (its
-- dependencies' ids, comma-separated), deps_left (how many have not
-- ended yet) and, with on_dependency_failure "run", dep_failure = "run".
-- Their keys, under the queue's hash tag and found through rows, so never
-- declared (a script on such a row calls flow_check, which makes sure the
-- slot is not moving before the first write):
--   waiting          ZSET  jobs waiting on dependencies, score created_at
--   deps:<id>        ZSET  the ids of the jobs waiting on job <id>, score
--                          their created_at: released in enqueue order
--   batch:<b>        HASH  state (open, running, done), total, left,
--                          completed, dead, cancelled, success, created_at,
--                          finished_at, callback_queue, callback_payload,
--                          callback_when, callback_job_id
--   batch_jobs:<b>   SET   the batch's job ids (not batch:<b>:jobs, which
--                          the hash of batch "<b>:jobs" would be)
--   batches          ZSET  the queue's batches: score +inf until done, then
--                          when their keys expire
--   batches_created  ZSET  the same batches, score created_at: the listing's
--                          order (batch_list.lua); an entry goes when the
--                          batch's goes from batches (batches.forget)
--   batches_due      ZSET  done batches whose callback is owed; score when
--                          a dispatcher may take it (batch_take.lua)
--
-- left counts the batch's jobs not ended, plus one while the batch is open:
-- it is 0 exactly when a committed batch has no job left, so the call that
-- ends the last job (or the commit) is the one that finishes the batch.

-- batches holds this file's functions and constants, one local for all of
-- them (a script's EVAL form is one Lua function, and Lua allows it 200
-- locals).
local batches = {}

-- KEEP_MS is how long a done batch is kept: 7 days.
batches.KEEP_MS = 7 * 24 * 3600 * 1000

-- FIELDS are the fields of a batch hash a reply carries.
batches.FIELDS = { 'state', 'total', 'completed', 'dead', 'cancelled', 'success', 'created_at',
  'finished_at', 'callback_queue', 'callback_payload', 'callback_when', 'callback_job_id' }

function batches.key(b)
  return BASE .. 'batch:' .. b
end

function batches.jobs_key(b)
  return BASE .. 'batch_jobs:' .. b
end

-- reply is batch b's id and fields (batches.FIELDS, false for absent
-- ones), or nil when there is no such batch.
function batches.reply(b)
  local fields = redis.call('HMGET', batches.key(b), unpack(batches.FIELDS))
  if not fields[1] then
    return nil
  end
  table.insert(fields, 1, b)
  return fields
end

-- finish makes batch b done, now that no job of it is left: it owes
-- its callback (batches_due) when callback_when is complete, or success
-- and every job completed (none without callback_when: a batch made
-- without a callback); its keys expire batches.KEEP_MS from now; event
-- batch_done says so.
function batches.finish(b, now)
  local key = batches.key(b)
  local total, completed, when = unpack(redis.call('HMGET', key, 'total', 'completed', 'callback_when'))
  local success = (tonumber(completed) or 0) == (tonumber(total) or 0)
  redis.call('HSET', key, 'state', 'done', 'finished_at', int(now), 'success', success and '1' or '0')
  EVENTS = EVENTS or BASE .. 'events' -- the commit declares none: flow_here made sure the slot is here
  emit('batch_done', nil, nil, 'batch', b, 'reason', success and 'success' or 'not every job completed')
  if when == 'complete' or (when == 'success' and success) then
    redis.call('ZADD', BASE .. 'batches_due', int(now), b)
    if due.key ~= nil then -- the reaper makes sure a dispatcher looks (settle.lua)
      due.at(now)
    end
  end
  redis.call('ZADD', BASE .. 'batches', int(now + batches.KEEP_MS), b)
  redis.call('PEXPIRE', key, batches.KEEP_MS)
  redis.call('PEXPIRE', batches.jobs_key(b), batches.KEEP_MS)
end

-- ended counts a job of batch b that ended in state (a removed job
-- counts as cancelled), and finishes the batch when it was its last.
function batches.ended(b, state, now)
  local key = batches.key(b)
  if state ~= 'completed' and state ~= 'dead' then
    state = 'cancelled'
  end
  local left = redis.call('HINCRBY', key, 'left', -1)
  if left < 0 then -- no such batch (its keys were deleted): leave none behind
    redis.call('DEL', key)
    return
  end
  redis.call('HINCRBY', key, state, 1)
  if left == 0 then
    batches.finish(b, now)
  end
end

-- reopened takes back the count of job id of batch b, which ended
-- in state and is retried: it is the batch's again, unless the batch is
-- done or is not the one it joined (a batch of the same id made after the
-- old one expired): then the job leaves it, and true is returned.
function batches.reopened(b, id, state)
  local key = batches.key(b)
  local current = redis.call('HGET', key, 'state')
  if not current or current == 'done' or redis.call('SISMEMBER', batches.jobs_key(b), id) == 0 then
    return true
  end
  redis.call('HINCRBY', key, state, -1)
  redis.call('HINCRBY', key, 'left', 1)
  return false
end

-- use_sets names the queue's pending, delayed and cancelled sets, its
-- meta hash and its history where the script did not declare them: a
-- release or a cancellation of a dependant writes them, after flow_check
-- made sure that the slot is here.
function batches.use_sets()
  META = META or BASE .. 'meta'
  PENDING = PENDING or BASE .. 'pending'
  DELAYED = DELAYED or BASE .. 'delayed'
  CANCELLED = CANCELLED or BASE .. 'cancelled'
  STATS = STATS or BASE .. 'stats'
end

-- release makes waiting job id (row), whose dependencies have all ended,
-- delayed until its run_at when that is still to come, else pending.
function batches.release(id, row, now)
  batches.use_sets()
  redis.call('ZREM', BASE .. 'waiting', id)
  del_fields(id, row, { 'deps_left' })
  if row.run_at and tonumber(row.run_at) > now then
    redis.call('ZADD', DELAYED, row.run_at, id)
    due.at(tonumber(row.run_at))
    set_fields(id, row, { 'state', 'delayed' })
    emit('released', id, 'delayed')
  else
    push_pending(id, row, false)
    emit('released', id, 'pending')
    -- A claim later in this call (a complete's claim-next) read its rows
    -- before: it takes this one's from here (lifecycle.lua's claim).
    RELEASED = RELEASED or {}
    RELEASED[id] = row
  end
  wake(1)
end

-- dependency_cancel cancels waiting job id (row): its dependency dep ended
-- in state.
function batches.dependency_cancel(id, row, dep, state, now)
  batches.use_sets()
  local reason = 'dependency ' .. dep .. ' ' .. state
  redis.call('ZREM', BASE .. 'waiting', id)
  del_fields(id, row, { 'deps_left', 'run_at' })
  set_fields(id, row, { 'cancel_reason', reason })
  finish(id, row, 'cancelled', now)
  emit('cancelled', id, 'cancelled', 'reason', reason)
end

-- release_dependants tells the jobs waiting on job dep that it ended in
-- state: completed (or any state, for one that runs anyway) counts down
-- its deps_left, and the last releases it; else it is cancelled. A job
-- that no longer waits (cancelled, removed) is passed over.
function batches.release_dependants(dep, state, now)
  local key = BASE .. 'deps:' .. dep
  local ids = redis.call('ZRANGE', key, 0, -1)
  redis.call('DEL', key)
  for _, id in ipairs(ids) do
    local row = read_row(id)
    -- A job removed while it waited may be made again under its id,
    -- waiting on others: only one that still names dep is told.
    if row.state == 'waiting' and string.find(',' .. (row.depends_on or '') .. ',', ',' .. dep .. ',', 1, true) then
      if state == 'completed' or row.dep_failure == 'run' then
        local left = redis.call('HINCRBY', job_key(id), 'deps_left', -1)
        if left <= 0 then
          batches.release(id, row, now)
        end
      else
        batches.dependency_cancel(id, row, dep, state, now)
      end
    end
  end
end

-- job_ended is what every move into a terminal state (and a removal, state
-- "removed") does for batches and dependencies: it counts the job in its
-- batch and tells its dependants. row needs at least batch_id and
-- dependants; a plain job costs two table reads.
job_ended = function(id, row, state, now)
  if row.batch_id then
    batches.ended(row.batch_id, state, now)
  end
  if not row.dependants then
    return
  end
  -- ENDED (prelude.lua) holds the jobs whose dependants are still to be
  -- told: a cancelled dependant's own dependants are told in turn, not by
  -- a deeper call, so that a long chain needs no deep stack.
  if ENDED then
    ENDED[#ENDED + 1] = { id, state }
    return
  end
  ENDED = { { id, state } }
  local i = 1
  while ENDED[i] do
    batches.release_dependants(ENDED[i][1], ENDED[i][2], now)
    i = i + 1
  end
  ENDED = nil
end

-- plan_dependencies checks, before any write, the dependencies of the new
-- jobs of an enqueue: deps[i] = {failure, id, ...} for job i, new[i] true
-- when job i is new, new_ids the new jobs' ids. It returns, by place, each
-- new job's plan: the dependencies that have not ended (open), the first
-- that ended dead or cancelled ({id, state}, or nil), whether it runs
-- anyway (run) and its dependencies' ids (ids); or nil and the error reply
-- for an unknown id.
function batches.plan_dependencies(deps, new, new_ids)
  local plan = {}
  for i, dep in pairs(deps) do
    if new[i] then
      local d = { open = {}, run = dep[1] == 'run', ids = {} }
      for k = 2, #dep do
        local id = dep[k]
        d.ids[#d.ids + 1] = id
        local state = not new_ids[id] and redis.call('HGET', job_key(id), 'state')
        if new_ids[id] or (state and state ~= 'completed' and state ~= 'dead' and state ~= 'cancelled') then
          d.open[#d.open + 1] = id
        elseif not state then
          return nil, redis.error_reply('EMQINVALID unknown dependency: ' .. id)
        elseif state ~= 'completed' then
          d.failed = d.failed or { id, state }
        end
      end
      plan[i] = d
    end
  end
  return plan
end

-- wait_fields adds to a new job's row (a list being built) what waiting
-- on its dependencies (d, its plan_dependencies entry) writes.
function batches.wait_fields(row, d)
  put_field(row, 'depends_on', table.concat(d.ids, ','))
  put_field(row, 'dep_failure', d.run and 'run')
  put_field(row, 'deps_left', #d.open > 0 and tostring(#d.open))
end

-- wait_on writes new waiting job id into its open dependencies' deps sets
-- and marks their rows as depended on.
function batches.wait_on(id, d, now)
  for _, dep in ipairs(d.open) do
    redis.call('ZADD', BASE .. 'deps:' .. dep, int(now), id)
    redis.call('HSET', job_key(dep), 'dependants', '1')
  end
end

-- waited finishes what an enqueue's waiting jobs (waits, by place; their
-- ids in list from first, six ARGV each) need once every row is written:
-- their places in the deps sets, and then a decision about each whose
-- dependencies had all ended already: cancelled when one failed (unless
-- it runs anyway), else released. rows[i], the reply of each, is read
-- again.
function batches.waited(waits, list, first, rows, now)
  for i, d in pairs(waits) do
    batches.wait_on(list[first + i * 6], d, now)
  end
  for i, d in pairs(waits) do
    if #d.open == 0 then
      local id = list[first + i * 6]
      local row = read_row(id)
      if d.failed and not d.run then
        batches.dependency_cancel(id, row, d.failed[1], d.failed[2], now)
      else
        batches.release(id, row, now)
      end
    end
  end
  -- A decision may have cancelled others of this enqueue in turn: every
  -- waiting job's reply is read again.
  for i in pairs(waits) do
    rows[i] = job_reply(list[first + i * 6])
  end
end

-- open checks, before any write, that an enqueue may add jobs to
-- batch ({id, mode, open, callback_queue, callback_payload, callback_when},
-- enqueue.lua): mode "add" needs an open batch; and makes a new one (mode
-- "new", which enqueue.lua has checked does not exist). Returns an error
-- reply, or nil.
function batches.open(batch, now)
  local key = batches.key(batch.id)
  if batch.mode == 'add' then
    local state = redis.call('HGET', key, 'state')
    if not state then
      return redis.error_reply('EMQGONE no such batch: ' .. batch.id)
    elseif state ~= 'open' then
      return redis.error_reply('EMQSTATE the batch is committed: ' .. batch.id)
    end
    return nil
  end
  local open = batch.open == '1'
  local fields = { 'state', open and 'open' or 'running', 'total', '0', 'left', open and '1' or '0',
    'completed', '0', 'dead', '0', 'cancelled', '0', 'created_at', int(now) }
  put_field(fields, 'callback_when', batch.callback_when ~= '' and batch.callback_when) -- none: no callback
  put_field(fields, 'callback_queue', batch.callback_queue ~= '' and batch.callback_queue)
  put_field(fields, 'callback_payload', batch.callback_payload ~= '' and batch.callback_payload)
  redis.call('HSET', key, unpack(fields))
  batches.forget(now) -- the done ones whose keys expired
  redis.call('ZADD', BASE .. 'batches', '+inf', batch.id)
  redis.call('ZADD', BASE .. 'batches_created', int(now), batch.id)
  return nil
end

-- forget takes the batches whose keys have expired (their score in
-- batches has passed now) out of batches and batches_created. It returns
-- false, having written nothing, when batches is on the other node of a
-- migration (here.lua's call_here); a write it leaves undone there is
-- done by the next call.
function batches.forget(now)
  local ids = call_here('ZRANGEBYSCORE', BASE .. 'batches', '-inf', int(now))
  if ids == false then
    return false
  end
  for first = 1, #ids, CHUNK do
    local last = math.min(first + CHUNK - 1, #ids)
    call_here('ZREM', BASE .. 'batches', unpack(ids, first, last))
    call_here('ZREM', BASE .. 'batches_created', unpack(ids, first, last))
  end
  return true
end

-- counted adds the new jobs of an enqueue (rows, their replies by
-- place) to batch, and finishes it when that leaves none (a committed
-- batch whose ids all existed).
function batches.counted(batch, rows, now)
  local key, ids = batches.key(batch.id), {}
  for _, row in pairs(rows) do
    ids[#ids + 1] = row[1]
  end
  each_chunk(ids, 1, 'SADD', batches.jobs_key(batch.id))
  redis.call('HINCRBY', key, 'total', #ids)
  if redis.call('HINCRBY', key, 'left', #ids) == 0 then
    batches.finish(batch.id, now)
  end
end

-- commit closes open batch b: it is done once no job of it is left
-- (at once, when none is). Returns its reply, or nil when there is no
-- such batch; a batch committed already is answered as it is.
function batches.commit(b, now)
  local key = batches.key(b)
  local state = redis.call('HGET', key, 'state')
  if not state then
    return nil
  end
  if state == 'open' then
    redis.call('HSET', key, 'state', 'running')
    if redis.call('HINCRBY', key, 'left', -1) == 0 then
      batches.finish(b, now)
    end
  end
  return batches.reply(b)
end

-- ends_told reads, before a drain deletes the jobs of plan (plan_delete's),
-- what their batches and dependants must be told: the {id, row} of each
-- job with a batch or dependants. A drain calls it only on a queue that
-- has used batches or dependencies (META's linked, which newjobs.lua
-- sets), so a plain drain reads no row.
function batches.ends_told(plan)
  local told = {}
  for _, step in ipairs(plan) do
    for _, id in ipairs(step[2]) do
      local batch_id, dependants = unpack(redis.call('HMGET', job_key(id), 'batch_id', 'dependants'))
      if batch_id or dependants then
        told[#told + 1] = { id, { batch_id = batch_id, dependants = dependants } }
      end
    end
  end
  return told
end

-- tell_removed tells the batches and dependants of the jobs ends_told
-- read that they ended "removed", once they are deleted.
function batches.tell_removed(told, now)
  for _, t in ipairs(told or {}) do
    job_ended(t[1], t[2], 'removed', now)
  end
end

-- deleted deletes up to limit batches of the queue and their
-- keys, and once none is left the queue's waiting set and owed callbacks:
-- obliterate's last steps. Returns whether none is left.
function batches.deleted(limit)
  local key = BASE .. 'batches'
  local ids = redis.call('ZRANGE', key, 0, limit - 1)
  for _, b in ipairs(ids) do
    redis.call('DEL', batches.key(b), batches.jobs_key(b))
  end
  if #ids > 0 then
    redis.call('ZREM', key, unpack(ids))
  end
  if #ids == limit then
    return false
  end
  redis.call('DEL', key, BASE .. 'batches_created', BASE .. 'batches_due', BASE .. 'waiting')
  return true
end
