-- flow.lua: flow control (docs/design.md#flow-control): the queue's limits
-- (concurrency, rate_limit), its groups and their limits
-- (group_concurrency, group_rate_limit, group_order "fifo") and the
-- round-robin rotation that keeps a large group from starving a small one.
--
-- A queue without settings and without grouped jobs never comes here: its
-- claim is the plain ZPOPMIN of lifecycle.lua. The keys below exist only
-- for a queue that has flow control, so the scripts do not declare them
-- (a declared key that does not exist makes Redis refuse the call for as
-- long as its slot migrates, and every queue would pay). A script reaches
-- them only after flow_here, before its first write: that stops the
-- script with TRYAGAIN (here.lua) when this node is moving a slot, so
-- nothing undeclared is read or written while a key may be on its way.
--
--   gpending  ZSET  the grouped pending jobs, score 0, by member
--                   "<group>|<priority><seq, 16 digits>|<id>": one group's
--                   jobs are one lexicographic range, priority then FIFO
--   rotation  ZSET  the groups whose turn may come, score = turn (lowest
--                   first); UNGROUPED stands for the jobs without a group
--   parked    ZSET  groups a limit holds back, score = when to look again
--                   (ms, server clock), +inf until a slot frees
--   groups    ZSET  every group with jobs (or paused), score 0, by name
--   starts    ZSET  the rate limits' log of claim starts, score 0, by
--                   member "<scope>|<ms, 14 digits>|<tag>|<n>", scope a
--                   group or QUEUE_SCOPE
--   held      STRING set for 2 s (PX) whenever a limit holds a claim back:
--                   while it is, each freed slot wakes a waiting claimer
--   flow      HASH  turn (the rotation's counter); per group g: a:g its
--                   active jobs, d:g its delayed ones, h:g the job that
--                   holds a fifo group, p:g "1" when paused, w:g why it is
--                   parked; r:<scope> the claims in the scope's log
--
-- A grouped job's row carries group and gseq (its place in the group, kept
-- across retries: a retried job keeps its group's head). In the pending
-- set a grouped job scores GROUPED + gseq, above every ungrouped job, so
-- that listings and counts see it and the plain claim order of ungrouped
-- jobs is untouched. A job claimed under flow control carries flow = "1",
-- so that whatever takes it out of the active set frees its slot.
--
-- META's flow field holds the settings ("c,rl,rw,gc,grl,grw,order", an
-- empty entry for no limit) and its grouped field is "1" once a grouped
-- job was enqueued.

local UNGROUPED = ''
local QUEUE_SCOPE = '*'
local GROUPED = 10 * BAND

-- LOOK bounds how many groups one claim looks at beyond the jobs it was
-- asked for: a group a limit holds back is parked when seen, so each is
-- looked at once per change that could free it.
local LOOK = 100

local function fkey(name)
  return BASE .. name
end

-- flow_here stops the script (try_again) when this node is moving a
-- slot; once per call. Call it before a script's first write whenever the
-- call may touch the keys above.
local function flow_here()
  if not FLOW_HERE then
    if slot_migrating() then
      try_again('flow control')
    end
    FLOW_HERE = true
  end
end

-- flow_check is flow_here for a call on a row (a read_row table) of a
-- grouped job or one claimed under flow control, and of a job in a batch,
-- waited on or waiting (batches.lua): each has keys no script declares.
local function flow_check(row)
  if row and (row.group or row.flow or row.batch_id or row.dependants or row.depends_on) then
    flow_here()
  end
end

-- settings_of parses META's flow field; nil when the queue has none.
local function settings_of(text)
  if not text then
    return nil
  end
  local f = {}
  for v in string.gmatch(text .. ',', '([^,]*),') do
    f[#f + 1] = v
  end
  return {
    c = tonumber(f[1]), rl = tonumber(f[2]), rw = tonumber(f[3]),
    gc = tonumber(f[4]), grl = tonumber(f[5]), grw = tonumber(f[6]),
    fifo = f[7] == 'fifo',
  }
end

local function next_turn()
  return redis.call('HINCRBY', fkey('flow'), 'turn', 1)
end

-- member_of is a grouped pending job's member of gpending.
local function member_of(group, priority, gseq, id)
  return group .. '|' .. (priority or '0') .. string.format('%016d', tonumber(gseq)) .. '|' .. id
end

local function group_range(g)
  return '[' .. g .. '|', '(' .. g .. '}' -- '}' sorts after '|', and after every name character
end

-- group_count adds delta to the group's counter ('a' active, 'd' delayed).
local function group_count(g, counter, delta)
  redis.call('HINCRBY', fkey('flow'), counter .. ':' .. g, delta)
end

-- unpark gives a parked group its turn again (at the back of the
-- rotation): something that held it back may have gone. The next claim
-- looks at it again.
local function unpark(g)
  if redis.call('ZREM', fkey('parked'), g) == 1 then
    redis.call('ZADD', fkey('rotation'), next_turn(), g)
  end
end

-- group_ready gives group g, which has a claimable job now, a turn unless
-- it already has one or is parked.
local function group_ready(g)
  if not redis.call('ZSCORE', fkey('parked'), g) then
    redis.call('ZADD', fkey('rotation'), 'NX', next_turn(), g)
  end
end

-- group_known lists group g (for GET .../groups), marks the queue grouped
-- and, the first time, gives the ungrouped jobs their place in the
-- rotation.
local function group_known(g)
  redis.call('ZADD', fkey('groups'), 'NX', '0', g)
  if not redis.call('HGET', META, 'grouped') then
    redis.call('HSET', META, 'grouped', '1')
    redis.call('ZADD', fkey('rotation'), 'NX', next_turn(), UNGROUPED)
  end
end

-- group_pending puts grouped job id (row) in pending, at its place in its
-- group, and counts it out of delayed when it came from there; the group
-- is listed again if it had left the listing (a dead job retried). A fifo
-- group's holder pending again (a retry, a stall) lets its group go on.
local function group_pending(id, row)
  flow_here()
  local g = row.group
  redis.call('ZADD', fkey('groups'), 'NX', '0', g)
  redis.call('ZADD', PENDING, int(GROUPED + tonumber(row.gseq)), id)
  redis.call('ZADD', fkey('gpending'), '0', member_of(g, row.priority, row.gseq, id))
  if row.state == 'delayed' then
    group_count(g, 'd', -1)
  end
  if redis.call('HGET', fkey('flow'), 'h:' .. g) == id then
    unpark(g)
  end
  group_ready(g)
end

-- group_unpending takes grouped job id (row), pending, out of its group.
local function group_unpending(id, row)
  redis.call('ZREM', fkey('gpending'), member_of(row.group, row.priority, row.gseq, id))
end

-- group_info is one group's reply: {name, paused (0 or 1), pending,
-- active, delayed}.
local function group_info(g)
  local f = redis.call('HMGET', fkey('flow'), 'p:' .. g, 'a:' .. g, 'd:' .. g)
  local lo, hi = group_range(g)
  return { g, f[1] and 1 or 0, redis.call('ZLEXCOUNT', fkey('gpending'), lo, hi),
    tonumber(f[2]) or 0, tonumber(f[3]) or 0 }
end

-- flow_unqueued takes grouped job id (row, as read: pending or delayed)
-- out of its group's pending jobs or its delayed count.
local function flow_unqueued(id, row)
  if row.state == 'pending' then
    group_unpending(id, row)
  elseif row.state == 'delayed' then
    group_count(row.group, 'd', -1)
  end
end

-- group_tidy drops group g from the listing when nothing of it is left:
-- no job pending, active or delayed, no fifo holder, not paused. Its rate
-- log stays until its entries age out. f is the group's a, d, h and p
-- fields of the flow hash when the caller read them, else nil.
local function group_tidy(g, f)
  f = f or redis.call('HMGET', fkey('flow'), 'a:' .. g, 'd:' .. g, 'h:' .. g, 'p:' .. g)
  if (tonumber(f[1]) or 0) > 0 or (tonumber(f[2]) or 0) > 0 or f[3] or f[4] then
    return
  end
  local lo, hi = group_range(g)
  if redis.call('ZLEXCOUNT', fkey('gpending'), lo, hi) > 0 then
    return
  end
  redis.call('ZREM', fkey('groups'), g)
  redis.call('HDEL', fkey('flow'), 'a:' .. g, 'd:' .. g, 'w:' .. g)
end

-- FLOW_KEYS are the flow control keys' names, for obliterate.
local FLOW_KEYS = { 'gpending', 'rotation', 'parked', 'groups', 'starts', 'flow', 'held' }

-- HELD_MS is how long after a claim was held back a freed slot still wakes
-- a waiting claimer (a waiter looks again within a second by itself).
local HELD_MS = '2000'

-- flow_dropped takes the jobs a drain step is about to delete (plan, as
-- plan_delete read it: pending and delayed ids) out of their groups: a
-- pending one's index entry, a delayed one's count, a fifo group's holder
-- (the group may go on). Each step does it for its own jobs, so a drain
-- stopped half way leaves no group behind. O(jobs of the step).
local function flow_dropped(plan)
  flow_here()
  local touched = {}
  for _, step in ipairs(plan) do
    for _, id in ipairs(step[2]) do
      local f = redis.call('HMGET', job_key(id), 'group', 'priority', 'gseq', 'state')
      local g = f[1]
      if g then
        flow_unqueued(id, { group = g, priority = f[2] or false, gseq = f[3], state = f[4] })
        if redis.call('HGET', fkey('flow'), 'h:' .. g) == id then
          redis.call('HDEL', fkey('flow'), 'h:' .. g)
          unpark(g)
        end
        touched[g] = true
      end
    end
  end
  return touched
end

-- wake_held wakes one waiting claimer while claims are being held back
-- (the held key): a slot freed, or a fifo group may go on.
local function wake_held()
  if redis.call('EXISTS', fkey('held')) == 1 then
    wake(1)
  end
end

-- flow_left is told that job id (row), claimed under flow control, left
-- the active set: its group's slot is free, and a claimer waiting on a
-- limit may go on (woken only while claims are being held back, so that a
-- queue whose limits do not bind publishes nothing). It needs flow_check
-- first.
local function flow_left(id, row)
  if row.group then
    group_count(row.group, 'a', -1)
    unpark(row.group)
  end
  wake_held()
end

-- flow_finished is told that grouped job id (row) is done for good
-- (completed, dead, cancelled or removed): a fifo group it held may start
-- its next job. It needs flow_check first.
local function flow_finished(id, row)
  local g = row.group
  if not g then
    return
  end
  local f = redis.call('HMGET', fkey('flow'), 'a:' .. g, 'd:' .. g, 'h:' .. g, 'p:' .. g)
  if f[3] == id then
    redis.call('HDEL', fkey('flow'), 'h:' .. g)
    unpark(g)
    wake_held()
    f[3] = false
  end
  group_tidy(g, f)
end

-- pad writes a time in ms with 14 digits, so that it sorts as text.
local function pad(ms)
  return string.format('%014d', ms)
end

-- rate_room is how many more claims scope may start now under limit per
-- window ms, and, when fewer than want, in how many ms the oldest start in
-- the window leaves it. It first drops from the log (up to 100) starts that have left
-- the window; any left over still count, so the room is never
-- overstated.
local function rate_room(scope, limit, window, now, want)
  local log, total = fkey('starts'), 'r:' .. scope
  local lo = '[' .. scope .. '|'
  local gone = redis.call('ZRANGEBYLEX', log, lo, '(' .. scope .. '|' .. pad(now - window + 1), 'LIMIT', '0', '100')
  local n = tonumber(redis.call('HGET', fkey('flow'), total) or '0')
  if #gone > 0 then
    local dropped = 0
    for _, m in ipairs(gone) do
      dropped = dropped + tonumber(string.match(m, '|(%d+)$'))
    end
    redis.call('ZREM', log, unpack(gone))
    n = redis.call('HINCRBY', fkey('flow'), total, -dropped)
  end
  local room = limit - n
  if room >= want then
    return room, 0
  end
  local oldest = redis.call('ZRANGEBYLEX', log, lo, '(' .. scope .. '}', 'LIMIT', '0', '1')[1]
  if not oldest then
    return room, window -- the claim's own starts, logged at now, are the oldest
  end
  return room, math.max(tonumber(string.match(oldest, '^[^|]*|(%d+)|')) + window - now, 1)
end

-- rate_add logs n claim starts of scope at now; tag sets the entry apart
-- from the others of the same ms. A tag met before (a claim's random first
-- token, lifecycle.lua's flow_claim, may be drawn twice) is made longer
-- until the entry is new: two claims in one entry would leave the
-- scope's count n too high when it is dropped. Returns the entry.
local function rate_add(scope, n, now, tag)
  local head, tail = scope .. '|' .. pad(now) .. '|' .. tag, '|' .. n
  while redis.call('ZADD', fkey('starts'), '0', head .. tail) == 0 do
    head = head .. '.'
  end
  redis.call('HINCRBY', fkey('flow'), 'r:' .. scope, n)
  return head .. tail
end

-- slot_wait is how long a claim that a concurrency limit held back should
-- wait before it looks again, once its own jobs are leased: until the
-- earliest lease lapses, at most a second. A lease that lapsed already
-- holds its slot until the reaper sweeps it: a second, too. (A long poll
-- is woken as soon as a slot frees.)
local function slot_wait(now)
  local first = redis.call('ZRANGE', ACTIVE, '0', '0', 'WITHSCORES')
  local lapse = first[1] and tonumber(first[2]) - now or 0
  if lapse <= 0 then
    return 1000
  end
  return math.min(lapse, 1000)
end

-- pending_member finds grouped job id's member of gpending from its row.
local function pending_member(g, id)
  local f = redis.call('HMGET', job_key(id), 'priority', 'gseq')
  return member_of(g, f[1], f[2], id)
end

-- take_head takes the next job of group g (UNGROUPED: of the jobs without
-- a group) out of pending, when the settings s let it start: its id; or
-- nil, why it cannot ('empty', or the limit that holds it back) and until
-- when (ms, or '+inf' until a slot frees).
local function take_head(g, s, now)
  if g == UNGROUPED then
    local first = redis.call('ZRANGE', PENDING, '0', '0', 'WITHSCORES')
    if first[1] and tonumber(first[2]) < GROUPED then
      redis.call('ZREM', PENDING, first[1])
      return first[1]
    end
    return nil, 'empty'
  end
  local flow = fkey('flow')
  local f = redis.call('HMGET', flow, 'p:' .. g, 'h:' .. g, 'a:' .. g)
  local member, id
  local lo, hi = group_range(g)
  if s.fifo and f[2] then
    -- A fifo group's holder is its only job that may start: when it is
    -- pending again (a retry, a stall), it starts before any other.
    if not redis.call('ZSCORE', PENDING, f[2]) then
      if not redis.call('ZRANGEBYLEX', fkey('gpending'), lo, hi, 'LIMIT', '0', '1')[1] then
        return nil, 'empty' -- nothing waits behind the holder
      end
      return nil, 'group_order', '+inf'
    end
    id = f[2]
    member = pending_member(g, id)
  else
    member = redis.call('ZRANGEBYLEX', fkey('gpending'), lo, hi, 'LIMIT', '0', '1')[1]
    if not member then
      return nil, 'empty'
    end
    local gseq
    gseq, id = string.match(member, '|%d(%d+)|(.*)$')
    if redis.call('ZSCORE', PENDING, id) ~= int(GROUPED + tonumber(gseq)) then
      -- Not this group's pending job (it left pending without its group
      -- knowing): the entry goes, and the group's next one is looked at.
      redis.call('ZREM', fkey('gpending'), member)
      return take_head(g, s, now)
    end
    if s.fifo and (tonumber(f[3]) or 0) > 0 then
      -- Fifo was turned on while jobs of the group ran: none starts before
      -- they have finished.
      return nil, 'group_order', '+inf'
    end
  end
  if f[1] then
    return nil, 'group_paused', '+inf'
  end
  if s.gc and (tonumber(f[3]) or 0) >= s.gc then
    return nil, 'group_concurrency', '+inf'
  end
  if s.grl then
    local room, wait = rate_room(g, s.grl, s.grw, now, 1)
    if room < 1 then
      return nil, 'group_rate_limit', int(now + wait)
    end
  end
  redis.call('ZREM', fkey('gpending'), member)
  redis.call('ZREM', PENDING, id)
  group_count(g, 'a', 1)
  if s.fifo then
    redis.call('HSET', flow, 'h:' .. g, id)
  end
  return id
end

-- take_rotating takes up to want jobs, one group's turn at a time, in the
-- rotation's order: a group that gave a job goes to the back, one with
-- none leaves the rotation, one a limit holds back is parked. Returns the
-- ids, and when it took fewer than want because of a group limit, the
-- limit and how many ms until a claim could go on: 'slot' until a slot
-- frees (slot_wait, once the claim's jobs are leased), a second for a
-- paused group (only a resume frees it, and a resume wakes long polls).
-- groups gets each id's group, RATED the group rate limit start it logged.
local function take_rotating(s, want, now, groups)
  local rotation, parked = fkey('rotation'), fkey('parked')
  for _, g in ipairs(redis.call('ZRANGEBYSCORE', parked, '-inf', int(now), 'LIMIT', '0', '100')) do
    unpark(g)
  end
  local ids, looks, empty_at = {}, 0, -1
  while #ids < want and looks < want + LOOK do
    looks = looks + 1
    local g = redis.call('ZRANGE', rotation, '0', '0')[1]
    if not g then
      break
    end
    local id, why, until_ms = take_head(g, s, now)
    if id then
      ids[#ids + 1] = id
      groups[id] = g
      local turn = next_turn()
      redis.call('ZADD', rotation, turn, g)
      if s.grl then
        RATED = RATED or {}
        RATED[id] = rate_add(g, 1, now, turn) -- the turn makes the entry unique
      end
    elseif why ~= 'empty' then
      redis.call('ZREM', rotation, g)
      redis.call('ZADD', parked, until_ms, g)
      redis.call('HSET', fkey('flow'), 'w:' .. g, why)
    elseif g ~= UNGROUPED then
      redis.call('ZREM', rotation, g)
    elseif empty_at == #ids then
      break -- round the whole rotation without a job
    else
      empty_at = #ids
      redis.call('ZADD', rotation, next_turn(), g) -- the ungrouped jobs keep their turn
    end
  end
  if #ids >= want then
    return ids
  end
  local first = redis.call('ZRANGE', parked, '0', '0', 'WITHSCORES')
  if not first[1] then
    return ids
  end
  local why = redis.call('HGET', fkey('flow'), 'w:' .. first[1]) or 'group_concurrency'
  local at = tonumber(first[2]) -- nil for "inf" where Lua's tonumber does not read it
  if why == 'group_paused' then
    return ids, why, 1000
  end
  if not at or at == math.huge then
    return ids, why, 'slot'
  end
  return ids, why, math.max(at - now, 1)
end

-- flow_take takes the ids of up to count pending jobs that the queue's
-- settings s let start now: within the queue's concurrency and rate
-- limit, then round the rotation when the queue has groups. Returns the
-- ids, and when a limit cut them short, which one and how many ms until a
-- claim could go on (-1 for none) and whether a claim waits for a slot
-- too (slot_wait, once the ids are leased); and each id's group
-- (UNGROUPED for none).
local function flow_take(s, grouped, count, now)
  local want, held, retry, slot = count, nil, -1, false
  local function cut(room, why, wait)
    if room < want then
      want, held = math.max(room, 0), held or why
      if wait == 'slot' then
        slot = true
      else
        retry = math.max(retry, wait)
      end
    end
  end
  if s.c then
    cut(s.c - redis.call('ZCARD', ACTIVE), 'concurrency', 'slot')
  end
  if s.rl then
    local room, wait = rate_room(QUEUE_SCOPE, s.rl, s.rw, now, want)
    cut(room, 'rate_limit', wait)
  end
  local ids, groups = {}, {}
  if want > 0 and grouped then
    local why, wait
    ids, why, wait = take_rotating(s, want, now, groups)
    if why and not held then
      held = why
      if wait == 'slot' then
        slot = true
      else
        retry = wait
      end
    end
  elseif want > 0 then
    local popped = redis.call('ZPOPMIN', PENDING, want)
    for i = 1, #popped, 2 do
      ids[#ids + 1] = popped[i]
    end
  end
  if held and redis.call('ZCARD', PENDING) == 0 then
    held, retry, slot = nil, -1, false -- nothing was held back: nothing else waits
  end
  if held then
    redis.call('SET', fkey('held'), '1', 'PX', HELD_MS)
  end
  return ids, held, retry, groups, slot
end

-- flow_untake gives back what take_head counted for job id of group g,
-- which the claim could not lease after all (its row was lost outside a
-- migration, or it expired): its group's active count, fifo hold and rate
-- limit start.
local function flow_untake(id, g)
  if g and g ~= UNGROUPED then
    group_count(g, 'a', -1)
    if RATED and RATED[id] then
      redis.call('ZREM', fkey('starts'), RATED[id])
      redis.call('HINCRBY', fkey('flow'), 'r:' .. g, -1)
      RATED[id] = nil
    end
    if redis.call('HGET', fkey('flow'), 'h:' .. g) == id then
      redis.call('HDEL', fkey('flow'), 'h:' .. g)
    end
    unpark(g)
  end
end
