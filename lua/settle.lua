-- settle.lua: the queue's place in the due index (due.lua) once the
-- reaper has done its due work: the time of its next work, none, or for
-- an empty queue whose events have aged out, forgetting it.
--
-- KEYS[1] meta
-- KEYS[2] pending
-- KEYS[3] active
-- KEYS[4] delayed
-- KEYS[5] completed
-- KEYS[6] dead
-- KEYS[7] cancelled
-- KEYS[8] events
-- KEYS[9] due
-- ARGV[3] max_age_ms: events older than this are trimmed (XTRIM MINID,
--         beside the stream's MAXLEN), and an empty queue is forgotten
--         this long after its last event
-- ARGV[4] keep: how many completed jobs a queue whose settings name no
--         completed retention keeps (EMQ_KEEP_COMPLETED; 0 all)
--
-- It trims the queue's events by age and, when they are few, compacts
-- the stream (below). The next time is the earliest of: the active set's
-- first lease end, the delayed set's first run-at, the first expiry and
-- the first throttle window's end (admission.lua), and a second on while
-- a batch callback is owed (batches.lua), and when finished jobs a
-- retention rule lets go age out (now, when some are due: trim.lua's
-- work); for a queue with none of those
-- that is empty, its forgetting time. Empty: no job in any state, no batch, no
-- schedule, no push target, no settings, not paused. An empty
-- queue whose last event is max_age_ms old (or that has none) is forgotten
-- at once: every key deleted (queues.lua's queue_deleted), as obliterate
-- leaves it. A job enqueued after that makes the queue anew.
-- Returns {next, forgotten, owes, work}: next the time the index holds
-- for the queue now (ms), -1 for none; forgotten 1 when the queue was
-- forgotten, else 0; owes 1 when a batch callback of it is owed now
-- (batches_due), for the service to make sure its batch dispatchers look
-- at the queue; work 1 when a lease has lapsed, a delayed job, an expiry
-- or a throttle window is due now: the reaper's work, which it does and
-- then settles the queue again. So a visit that finds nothing due (a busy
-- queue whose leases ended in completes) is this one call.
-- Errors: TRYAGAIN (here.lua).

local now = now_ms()
local max_age = tonumber(ARGV[3])

-- first_score is the lowest score of sorted set key, or nil.
local function first_score(key)
  local first = call_here('ZRANGE', key, 0, 0, 'WITHSCORES')
  if first == false then
    try_again(key)
  end
  return tonumber(first[2])
end

local next
for _, key in ipairs({ ACTIVE, DELAYED, BASE .. 'expiring', BASE .. 'dedupe_ttl' }) do
  local at = first_score(key)
  if at and (not next or at < next) then
    next = at
  end
end
-- Retention (lifecycle.lua's retention): finished jobs a rule lets go now
-- are the reaper's work (trim.lua); under an age rule, so is the oldest
-- job's ageing out, when it comes, on an idle queue too.
local kept = redis.call('HGET', META, 'retention')
for _, state in ipairs({ 'completed', 'dead', 'cancelled' }) do
  local rule, set, at = retention.rule(kept, state, tonumber(ARGV[4]) or 0), set_of(state), nil
  if rule and retention.excess(set, rule, now) > 0 then
    at = now
  elseif rule and rule[2] > 0 then
    local first = first_score(set)
    at = first and first + rule[2]
  end
  if at and (not next or at < next) then
    next = at
  end
end
local work = next and next <= now and 1 or 0 -- the reaper's, due now
-- A batch callback owed (batches.lua) is the dispatchers' work; the
-- service makes sure they look at the queue (owes), and the reaper looks
-- again while it owes one.
local owed = first_score(BASE .. 'batches_due')
local owes = owed and owed <= now and 1 or 0
if owed and (not next or owed < next) then
  next = math.max(owed, now + 1000)
end

-- A batch's entry in the batches set outlives its keys (batches.lua's
-- KEEP_MS): the entries of batches whose keys have expired go (from the
-- listing's index too: batches.forget), and the queue is looked at again
-- when the next one's do.
local batches_key = BASE .. 'batches'
if not batches.forget(now) then
  try_again(batches_key)
end
local kept = first_score(batches_key)
if kept and (not next or kept < next) then -- an open batch's is inf: nil
  next = kept
end

-- empty reports whether the queue holds nothing a user made: it was made
-- (a queue named but never written, one a batch reserved for its
-- callback, is left to its maker), and has no job, no batch, no schedule,
-- no push target, no settings, no pause, no paused group (the flow
-- control keys a grouped job left are not the user's).
local function empty()
  local meta = redis.call('HMGET', META, 'layout', 'paused', 'flow', 'defaults', 'retention')
  if not meta[1] or meta[2] or meta[3] or meta[4] or meta[5] then
    return false
  end
  for _, key in ipairs({ PENDING, COMPLETED, DEAD, CANCELLED }) do
    if redis.call('ZCARD', key) > 0 then
      return false
    end
  end
  for _, name in ipairs({ 'waiting', 'batches', 'schedule_names', 'push' }) do
    local n = call_here('EXISTS', BASE .. name)
    if n ~= 0 then
      return false -- a key of it here, or not here (migrating): not empty
    end
  end
  local paused = call_here('HSCAN', BASE .. 'flow', '0', 'MATCH', 'p:*', 'COUNT', '1000')
  return paused ~= false and #paused[2] == 0
end

local forgotten = 0
if not next and empty() then
  local last = redis.call('XREVRANGE', EVENTS, '+', '-', 'COUNT', 1)[1]
  local last_ms = last and tonumber(string.match(last[1], '^(%d+)'))
  if not last_ms or last_ms + max_age <= now then
    flow_here() -- it deletes keys it does not declare
    queue_deleted()
    -- With no batches left, what the listing's index still holds are
    -- batches an earlier release forgot from batches alone (batches.lua).
    redis.call('DEL', BASE .. 'batches_created')
    return { -1, 1, 0, 0 }
  end
  next = last_ms + max_age
end

-- compacted gives back the room Redis keeps after a stream's last node
-- (stream-node-max-bytes, 4 KB by default, taken whole by its first
-- entry): a stream of one node, of at most COMPACT_ENTRIES entries, is
-- written anew by RESTORE, which loads it at its size. Its ids, its last
-- id and its entries are the same; a reader sees no change. A store that
-- cannot DUMP a stream (the embedded one) keeps it as it is.
local COMPACT_ENTRIES = 100
local function compacted()
  local n = redis.call('XLEN', EVENTS)
  if n > 0 and n <= COMPACT_ENTRIES then
    local dump = redis.pcall('DUMP', EVENTS)
    if type(dump) == 'string' then
      redis.call('RESTORE', EVENTS, 0, dump, 'REPLACE')
    end
  end
end

if redis.call('EXISTS', EVENTS) == 1 then
  redis.call('XTRIM', EVENTS, 'MINID', '~', int(now - max_age))
  compacted()
end
if next then
  redis.call('ZADD', due.index(), int(next), BASE)
  redis.call('HSET', META, 'due', int(next))
  due.set(next)
  return { next, forgotten, owes, work }
end
redis.call('ZREM', due.index(), BASE)
redis.call('HDEL', META, 'due')
due.set(false)
return { -1, forgotten, owes, work }
