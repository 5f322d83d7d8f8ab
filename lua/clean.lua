-- clean.lua: an operator deletes a queue's finished jobs of one state that
-- ended before an age, oldest first, up to a limit per call
-- (docs/design.md#bulk-actions).
--
-- KEYS[1] meta
-- KEYS[2] set, the completed, dead or cancelled set
-- KEYS[3] events
-- KEYS[4] due
-- ARGV[3] state: "completed", "dead" or "cancelled", the set's
-- ARGV[4] older_than_ms: only jobs that finished more than this many ms
--         ago on the server's clock (the set's score is finished_at); 0
--         for all of them
-- ARGV[5] limit: at most this many jobs
-- ARGV[6] actor, ARGV[7] role: who asked, for the events
--
-- Each job goes as remove.lua removes a finished one: its row and log
-- (lifecycle.lua's delete_jobs), its dedupe key let go when it still holds
-- one, its group told (a group left with nothing leaves the listing); its
-- batch counted it when it ended and keeps its count. One "removed" event
-- each, with the actor. The rows are checked before the first write
-- (here.lua): a row on the other node of a migration stops the call with
-- TRYAGAIN, having written nothing; so does any slot this node moves, as
-- the logs are keys no script declares (delete_jobs). A row lost outside a
-- migration is dropped from the set, and not counted.
-- Returns {removed, more}: more is 1 when jobs of the state that old are
-- left.
-- Errors: EMQINVALID a state that is not a finished one; TRYAGAIN
-- (here.lua).

local state, older, limit = ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5])
if state ~= 'completed' and state ~= 'dead' and state ~= 'cancelled' then
  return redis.error_reply('EMQINVALID only completed, dead or cancelled jobs can be cleaned, not ' .. state)
end

local before = '+inf'
if older > 0 then
  before = '(' .. int(now_ms() - older)
end
local ids = redis.call('ZRANGEBYSCORE', SET, '-inf', before, 'LIMIT', '0', limit + 1)
local more = #ids > limit
ids[limit + 1] = nil
if #ids == 0 then
  return { 0, 0 }
end
rows_here(ids)
-- What each job's removal tells others: its dedupe key and group. A row
-- in the set under another state (none should be) is left as it is.
local doomed, rows = {}, {}
for _, id in ipairs(ids) do
  local f = redis.call('HMGET', job_key(id), 'state', 'group', 'dedupe_key', 'dedupe_mode')
  if not f[1] or f[1] == state then
    doomed[#doomed + 1] = id
    rows[id] = f[1] and { group = f[2] or nil, dedupe_key = f[3] or nil, dedupe_mode = f[4] or nil }
  end
end

delete_jobs({ { SET, doomed } }, false)
local removed = 0
for _, id in ipairs(doomed) do
  local row = rows[id]
  if row then
    dedupe_released(id, row)
    flow_finished(id, row)
    emit('removed', id, nil, 'actor', ARGV[6], 'role', ARGV[7])
    removed = removed + 1
  end
end
if removed > 0 then
  due.at(now_ms()) -- the reaper looks whether the queue is left empty (settle.lua)
end
return { removed, more and 1 or 0 }
