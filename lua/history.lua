-- history.lua: the queue's last 24 hours, minute by minute
-- (docs/design.md#history).
--
-- stats  STRING a ring of STATS_SLOTS slots, one per minute of the day
--               (slot = minute % STATS_SLOTS, minute = server ms / 60000),
--               each STATS_SLOT_BITS wide, read and written with BITFIELD:
--                 u32 the minute the slot holds (any other: the slot is
--                     from a day before, and reads as zeros)
--                 u32 enqueued, started, completed, failed (retried),
--                     dead, cancelled, runs (attempts that ended on their
--                     holder's report)
--                 u48 wait_ms (the started jobs' waits, summed), run_ms
--                     (the runs' times, summed)
--               Its size is fixed (STATS_BYTES) from its first write on.
--
-- A script counts as it goes (emit counts the state changes it writes;
-- stat_wait and stat_run add times) into the queue's pending counts of the
-- minute, and stats_flush, which wraps every script (lua.go), writes them
-- into the ring in one BITFIELD: at once when the script runs by EVAL;
-- run as a library function, whose Lua state lives on between calls, at
-- most every STATS_WRITE_MS per queue, and when the minute turns. So a
-- busy queue pays one write a second, not one a call; stats.lua answers
-- the counts not written yet. A script that counts declares stats: the
-- queue's first count writes it, so that it is moved with the queue's
-- other keys when a Cluster slot migrates.

local STATS_SLOTS, STATS_SLOT_BITS = 1440, 352
local STATS_BYTES = STATS_SLOTS * STATS_SLOT_BITS / 8

-- The counters of a slot, in order: their BITFIELD type and bit offset in
-- the slot. The stamp (u32 at 0) comes before them.
local STAT_TYPES = { 'u32', 'u32', 'u32', 'u32', 'u32', 'u32', 'u32', 'u48', 'u48' }
local STAT_OFFSETS = { 32, 64, 96, 128, 160, 192, 224, 256, 304 }
local STAT_WAIT, STAT_RUNS, STAT_RUN_MS = 8, 7, 9

-- STAT_OF is the counter an event kind counts (events.lua's emit counts
-- each event of a kind it has): a stall recovered and a timed-out attempt
-- retried are failed attempts too.
local STAT_OF = { enqueued = 1, claimed = 2, completed = 3, failed = 4, recovered = 4, dead = 5, cancelled = 6 }

-- STATS_WRITE_MS is how long counts may wait in the library's memory
-- before they are written: what a failover or a restart of Redis can lose.
local STATS_WRITE_MS = 1000

-- STATS_PENDING holds, by stats key, the counts of the minute not written
-- yet: {minute = m, counter 1, ..., counter 9}; STATS_WRITTEN when each
-- queue's counts were last written (ms). Both live on between the calls of
-- a library function and start empty in an EVAL.
local STATS_PENDING, STATS_WRITTEN = {}, {}

local stats_write -- below: it needs the ring's layout

-- stats_pending are this call's queue's pending counts of the current
-- minute: the ones of a minute that has ended are written first.
local function stats_pending()
  if not STATS then
    error('the script counts changes but does not declare stats')
  end
  local now = NOW or now_ms() -- a call reads TIME once
  local minute = (now - now % 60000) / 60000
  local p = STATS_PENDING[STATS]
  if p and p.minute ~= minute then
    stats_write(p)
    p = nil
  end
  if not p then
    p = { 0, 0, 0, 0, 0, 0, 0, 0, 0, minute = minute }
    STATS_PENDING[STATS] = p
  end
  return p
end

-- stat_add adds n to counter i of the queue's pending counts; STATS_N
-- (prelude.lua), which bind clears, holds them once this call counted.
local function stat_add(i, n)
  if not STATS_N then
    STATS_N = stats_pending()
  end
  STATS_N[i] = STATS_N[i] + n
end

-- stat_wait adds the wait of a job that starts now: since it became
-- claimable (ready_at; for a row written before ready_at was kept, its
-- run_at or created_at, as internal/lease's waitOf reads it).
local function stat_wait(row, now)
  stat_add(STAT_WAIT, math.max(now - tonumber(row.ready_at or row.run_at or row.created_at or now), 0))
end

-- stat_run counts an attempt that ended now on its holder's report, and
-- its time since it started.
local function stat_run(row, now)
  stat_add(STAT_RUNS, 1)
  stat_add(STAT_RUN_MS, math.max(now - tonumber(row.started_at or now), 0))
end

-- stats_sized makes the ring its full size, zeros after what it holds: a
-- string grown by BITFIELD a slot at a time would keep up to twice its
-- size allocated. It runs once per new slot at most, off the hot path.
local function stats_sized()
  local len = redis.call('STRLEN', STATS)
  if len < STATS_BYTES then
    redis.call('SET', STATS, (redis.call('GET', STATS) or '') .. string.rep('\0', STATS_BYTES - len))
  end
end

-- STATS_MAX is each counter's ceiling (BITFIELD's OVERFLOW SAT).
local STATS_MAX = { 2 ^ 32 - 1, 2 ^ 32 - 1, 2 ^ 32 - 1, 2 ^ 32 - 1, 2 ^ 32 - 1, 2 ^ 32 - 1, 2 ^ 32 - 1, 2 ^ 48 - 1, 2 ^ 48 - 1 }

-- stats_add_bitfield adds counts p to the slot at bit offset at for
-- minute, in one BITFIELD that also sets the slot's stamp. When the stamp
-- held another minute (a day before, or never written), the counts just
-- added went onto old ones: they are written again as the slot's whole
-- content. Returns false when the store has no BITFIELD (the embedded one).
local function stats_add_bitfield(p, at, minute)
  local args = { 'BITFIELD', STATS, 'OVERFLOW', 'SAT', 'SET', 'u32', at, minute }
  for i = 1, #STAT_TYPES do
    if p[i] > 0 then
      args[#args + 1], args[#args + 2] = 'INCRBY', STAT_TYPES[i]
      args[#args + 1], args[#args + 2] = at + STAT_OFFSETS[i], p[i]
    end
  end
  local reply = redis.pcall(unpack(args))
  if reply.err then
    local err = string.lower(reply.err)
    if string.find(err, 'unknown', 1, true) and string.find(err, 'command', 1, true) then
      return false
    end
    error(reply.err)
  end
  if reply[1] ~= minute then
    stats_sized()
    local set = { 'BITFIELD', STATS }
    for i = 1, #STAT_TYPES do
      set[#set + 1], set[#set + 2] = 'SET', STAT_TYPES[i]
      set[#set + 1], set[#set + 2] = at + STAT_OFFSETS[i], p[i]
    end
    redis.call(unpack(set))
  end
  return true
end

-- big_endian is n as width bytes, most significant first, as BITFIELD
-- lays it out; from_big_endian reads one back from s at byte i.
local function big_endian(n, width)
  local bytes = {}
  for k = width, 1, -1 do
    bytes[k] = n % 256
    n = math.floor(n / 256)
  end
  return string.char(unpack(bytes))
end
local function from_big_endian(s, i, width)
  local n = 0
  for k = i, i + width - 1 do
    n = n * 256 + (string.byte(s, k) or 0)
  end
  return n
end

-- stats_add_range is stats_add_bitfield for a store without BITFIELD: the
-- slot is read, added to and written back whole (GETRANGE, SETRANGE).
local function stats_add_range(p, at, minute)
  local first = at / 8
  local slot = redis.call('GETRANGE', STATS, first, first + STATS_SLOT_BITS / 8 - 1)
  local fresh = from_big_endian(slot, 1, 4) ~= minute
  if fresh then
    stats_sized()
  end
  local parts = { big_endian(minute, 4) }
  for i = 1, #STAT_TYPES do
    local width = STAT_TYPES[i] == 'u32' and 4 or 6
    local old = fresh and 0 or from_big_endian(slot, STAT_OFFSETS[i] / 8 + 1, width)
    parts[i + 1] = big_endian(math.min(old + p[i], STATS_MAX[i]), width)
  end
  redis.call('SETRANGE', STATS, first, table.concat(parts))
end

-- stats_write writes the pending counts p into their minute's slot, and
-- forgets them. The script has written already, and Redis keeps what it
-- wrote: a history that cannot be written (an ACL without BITFIELD, a
-- stats key of another type) loses these counts, never the call's reply.
stats_write = function(p)
  STATS_PENDING[STATS], STATS_WRITTEN[STATS] = nil, NOW
  local at = (p.minute % STATS_SLOTS) * STATS_SLOT_BITS
  local ok, err = pcall(function()
    if not stats_add_bitfield(p, at, p.minute) then
      stats_add_range(p, at, p.minute)
    end
  end)
  if not ok then
    redis.log(redis.LOG_WARNING, 'echo_mq: the history of ' .. BASE .. ' was not written: ' .. tostring(err))
  end
end

-- stats_flush returns reply, the script's, as it is, once the queue's
-- pending counts are written if this call counted and they are due: at
-- once, or when STATS_WRITE_MS has passed since the queue's last write.
local function stats_flush(reply, at_once)
  local p = STATS_N
  if p and (at_once or NOW - (STATS_WRITTEN[STATS] or 0) >= STATS_WRITE_MS) then
    stats_write(p)
  end
  return reply
end

-- stats_unwritten are the counts of the queue whose stats key is key not
-- written yet: {minute, counter 1, ..., counter 9}, or {} when none.
local function stats_unwritten(key)
  local p = STATS_PENDING[key]
  if not p then
    return {}
  end
  return { p.minute, p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9] }
end

-- ready_at is when a job that becomes pending now became claimable: its
-- run_at when that has come (a delayed job promoted late still waited
-- from then), else now.
local function ready_at(row, now)
  local run_at = tonumber(row.run_at)
  if run_at and run_at < now then
    return int(run_at)
  end
  return int(now)
end
