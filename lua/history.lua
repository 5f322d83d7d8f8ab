-- history.lua: the queue's last 24 hours, minute by minute
-- (docs/design.md#history).
--
-- stats  STRING records of STATS_RECORD bytes, one for each minute that
--               had counts (minute = server ms / 60000), each laid out as
--               BITFIELD reads it (big-endian):
--                 u32 the minute it holds (its stamp; 0: a free record)
--                 u32 enqueued, started, completed, failed (retried),
--                     dead, cancelled, runs (attempts that ended on their
--                     holder's report)
--                 u48 wait_ms (the started jobs' waits, summed), run_ms
--                     (the runs' times, summed)
--               in minute order from the one after the newest, round the
--               string's end: a new minute's record takes the place of
--               the one after the newest when that one is free or older
--               than STATS_MINUTES but not than STATS_COMPACT (SETRANGE:
--               the string keeps its size), else the string is written
--               anew (SET of its exact bytes) with the records of the last
--               STATS_MINUTES in order and free ones up to what Redis
--               allocates for them anyway (capacity). Later writes of the
--               minute add to its record in place. A record counts for
--               the minute its stamp names, wherever it lies: so the
--               previous release's ring (STATS_RING_BYTES, slot = minute %
--               STATS_MINUTES, zeros where never written) reads as it is,
--               and is written anew at its first write.
--
-- A script counts as it goes (emit counts the state changes it writes;
-- stat_wait and stat_run add times) into the queue's pending counts of the
-- minute, and stats_flush, which wraps every script (lua.go), writes them:
-- at once when the script runs by EVAL; run as a library function, whose
-- Lua state lives on between calls, at most every STATS_WRITE_MS per
-- queue, and when the minute turns. So a busy queue pays one write a
-- second, not one a call: one BITFIELD, at the place of the minute's
-- record that the library remembers; stats.lua answers the counts not
-- written yet. A script that counts declares stats: the queue's first
-- count writes it, so that it is moved with the queue's other keys when a
-- Cluster slot migrates.

-- The counters of a record, in order, are its fields 2 to 10 (1 is the
-- stamp). STAT_OF is the counter an event kind counts (events.lua's emit
-- counts each event of a kind it has): a stall recovered and a timed-out
-- attempt retried are failed attempts too.
local STAT_WAIT, STAT_RUNS, STAT_RUN_MS = 8, 7, 9
local STAT_OF = { enqueued = 1, claimed = 2, completed = 3, failed = 4, recovered = 4, dead = 5, cancelled = 6 }

-- The functions the other files use; the block below defines them. It
-- keeps the layout's helpers to itself: the library is one chunk that holds
-- every shared file's locals, of which Lua allows 200.
local stat_add, stats_flush, stats_unwritten, stats_window, stats_forget

do
  local STATS_MINUTES, STATS_RECORD = 1440, 44
  local STATS_RING_BYTES = STATS_MINUTES * STATS_RECORD

  -- STATS_COMPACT is how old the record a new minute would take the place
  -- of may be (minutes): an older one shows that the string holds more
  -- records than the queue's traffic needs, and it is written anew.
  local STATS_COMPACT = STATS_MINUTES * 3 / 2

  -- Each counter's BITFIELD type, bit offset in the record, width in bytes
  -- and ceiling (BITFIELD's OVERFLOW SAT).
  local STAT_TYPES = { 'u32', 'u32', 'u32', 'u32', 'u32', 'u32', 'u32', 'u48', 'u48' }
  local STAT_OFFSETS = { 32, 64, 96, 128, 160, 192, 224, 256, 304 }
  local STAT_WIDTHS = { 4, 4, 4, 4, 4, 4, 4, 6, 6 }
  local STATS_MAX = { 2 ^ 32 - 1, 2 ^ 32 - 1, 2 ^ 32 - 1, 2 ^ 32 - 1, 2 ^ 32 - 1, 2 ^ 32 - 1, 2 ^ 32 - 1, 2 ^ 48 - 1, 2 ^ 48 - 1 }

  -- STATS_WRITE_MS is how long counts may wait in the library's memory
  -- before they are written: what a failover or a restart of Redis can
  -- lose.
  local STATS_WRITE_MS = 1000

  -- The library's memory of each queue, by stats key; all of it starts
  -- empty in an EVAL. STATS_PENDING holds the counts of the minute not
  -- written yet, {minute = m, counter 1, ..., counter 9}, until the
  -- queue's next call writes them (or obliterate forgets them).
  -- STATS_WRITTEN holds when a queue's counts were last written (ms), and
  -- STATS_AT where: the minute and index of its record, packed as
  -- minute * 2048 + index (an index is at most STATS_MINUTES + 1). Those
  -- two hold only the queues written lately: every STATS_FORGET_MS each
  -- becomes the OLD one, and the OLD one is dropped, so a queue not
  -- written for that long is forgotten. For STATS_WRITTEN that is what it
  -- would say anyway (its next counts are due at once); for STATS_AT it
  -- costs the next write a GET, to find the record again.
  local STATS_FORGET_MS = 2 * STATS_WRITE_MS
  local STATS_PENDING = {}
  local STATS_WRITTEN, STATS_WRITTEN_OLD, STATS_AT, STATS_AT_OLD = {}, {}, {}, {}
  local STATS_AGED = 0 -- when they last turned

  -- A Lua table keeps the room of the entries it lost until it grows
  -- again: STATS_HELD counts the queues STATS_PENDING holds, and
  -- STATS_HELD_MOST the most it held since it was made, so that age makes
  -- it anew when it is mostly empty (many queues obliterated).
  local STATS_HELD, STATS_HELD_MOST = 0, 0

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

  -- stamp is the minute of the record at byte offset at of s.
  local function stamp(s, at)
    local a, b, c, d = string.byte(s, at + 1, at + 4)
    return ((a * 256 + b) * 256 + c) * 256 + d
  end

  -- record is minute's record with counts c, each at most its ceiling.
  local function record(minute, c)
    local parts = { big_endian(minute, 4) }
    for i = 1, #STAT_TYPES do
      parts[i + 1] = big_endian(math.min(c[i], STATS_MAX[i]), STAT_WIDTHS[i])
    end
    return table.concat(parts)
  end

  -- counts are the counts of the record at byte offset at of s, plus
  -- those of add when given.
  local function counts(s, at, add)
    local c, i = {}, at + STAT_OFFSETS[1] / 8 + 1
    for k = 1, #STAT_TYPES do
      c[k] = from_big_endian(s, i, STAT_WIDTHS[k]) + (add and add[k] or 0)
      i = i + STAT_WIDTHS[k]
    end
    return c
  end

  -- regular reports whether s is records as this release writes them
  -- (see top); else it is the previous release's ring, or was written by
  -- anything else, and is read record by record (sorted).
  local function regular(s)
    return #s % STATS_RECORD == 0 and #s ~= STATS_RING_BYTES
  end

  -- top is the index of the newest record of s, regular (-1 when it has
  -- none): its records run in minute order from the one after the newest,
  -- round the string's end, so the first one older than s's first is the
  -- one after it.
  local function top(s)
    local n = #s / STATS_RECORD
    if n == 0 then
      return -1
    end
    local first, lo, hi = stamp(s, 0), 1, n
    while lo < hi do
      local mid = math.floor((lo + hi) / 2)
      if stamp(s, mid * STATS_RECORD) < first then
        hi = mid
      else
        lo = mid + 1
      end
    end
    return lo - 1
  end

  -- sorted is the records of s from minute from on, in minute order, one
  -- per minute (two of a minute add up): s read record by record, however
  -- they lie (the previous release's ring, or anything left by a stale
  -- offset or an older release's write).
  local function sorted(s, from)
    -- of holds the records by minute - from, a small key: the embedded
    -- store's Lua would make an array as long as a minute.
    local of, minutes = {}, {}
    for at = 0, #s - STATS_RECORD, STATS_RECORD do
      local m = stamp(s, at)
      local k = m - from
      if k >= 0 then
        if of[k] then
          of[k] = record(m, counts(s, at, counts(of[k], 0)))
        else
          minutes[#minutes + 1], of[k] = m, string.sub(s, at + 1, at + STATS_RECORD)
        end
      end
    end
    table.sort(minutes)
    for i, m in ipairs(minutes) do
      minutes[i] = of[m - from]
    end
    return table.concat(minutes)
  end

  -- stats_window is the records of s, a stats string, from minute from
  -- on, in minute order (with any ahead of the clock: a node whose clock
  -- was ahead wrote them). A regular string is read from the record after
  -- its newest, and the first from minute from on found by a binary search.
  stats_window = function(s, from)
    if not regular(s) then
      return sorted(s, from)
    end
    local after = (top(s) + 1) * STATS_RECORD
    if after < #s then
      s = string.sub(s, after + 1) .. string.sub(s, 1, after)
    end
    local lo, hi = 0, #s / STATS_RECORD -- the first record from from on is in [lo, hi]
    while lo < hi do
      local mid = math.floor((lo + hi) / 2)
      if stamp(s, mid * STATS_RECORD) < from then
        lo = mid + 1
      else
        hi = mid
      end
    end
    return string.sub(s, lo * STATS_RECORD + 1)
  end

  -- room is the bytes jemalloc, Redis's allocator, gives an allocation of
  -- b bytes: its size class (four in each doubling, 16 bytes apart up to
  -- 128).
  local function room(b)
    if b <= 128 then
      return math.ceil(b / 16) * 16
    end
    local step = 32
    while step * 8 < b do
      step = step * 2
    end
    return math.ceil(b / step) * step
  end

  -- capacity is how many records a string made for n should hold: as many
  -- as fit in the allocation Redis makes for n (a string's header is 3
  -- bytes under 256, 5 under 65,536, and one more at its end; one of 44 or
  -- fewer lives in its key's object), so the free ones cost nothing. At
  -- most STATS_MINUTES + 1, never the previous release's ring's size.
  local function capacity(n)
    local function bytes(c)
      local len = c * STATS_RECORD
      return len + (len < 256 and 4 or 6)
    end
    if n <= 1 then
      return n
    end
    local c, fits = n, room(bytes(n))
    while c <= STATS_MINUTES and bytes(c + 1) <= fits do
      c = c + 1
    end
    return c == STATS_MINUTES and c + 1 or c
  end

  -- compact writes the stats string s anew (SET): its records of the
  -- STATS_MINUTES minutes up to minute m (and any ahead) in minute order,
  -- with counts p added to m's, then free ones (zeros) up to capacity.
  -- Returns the index of m's record.
  local function compact(s, p, m)
    local w = stats_window(s, m - STATS_MINUTES + 1)
    local n = #w
    local last = n > 0 and stamp(w, n - STATS_RECORD) or -1
    if last < m then
      w = w .. record(m, p)
    elseif last == m then
      w = string.sub(w, 1, n - STATS_RECORD) .. record(m, counts(w, n - STATS_RECORD, p))
    else -- records ahead of m: the clock went back
      w = sorted(w .. record(m, p), m - STATS_MINUTES + 1)
    end
    n = #w / STATS_RECORD
    redis.call('SET', STATS, w .. string.rep('\0', (capacity(n) - n) * STATS_RECORD))
    local i = n - 1
    while stamp(w, i * STATS_RECORD) ~= m do
      i = i - 1
    end
    return i
  end

  -- add adds counts p to minute m's record, and returns its index, with
  -- one read (GET) and one write: in place when the newest record is m's;
  -- for a new minute, in the place of the record after it (SETRANGE) when
  -- that one is free or older than STATS_MINUTES, but not older than
  -- STATS_COMPACT; else by compact (when the string is not regular, or
  -- told to). An error (a key of another type) is raised before any write.
  local function add(p, m, anew)
    local s = redis.call('GET', STATS) or ''
    local i = regular(s) and not anew and top(s) or -1
    local newest = i >= 0 and stamp(s, i * STATS_RECORD) or -1
    if newest == m then
      redis.call('SETRANGE', STATS, i * STATS_RECORD, record(m, counts(s, i * STATS_RECORD, p)))
      return i
    elseif newest >= 0 and newest < m then
      local after = (i + 1) % (#s / STATS_RECORD)
      local old = stamp(s, after * STATS_RECORD)
      if old <= m - STATS_MINUTES and (old == 0 or old > m - STATS_COMPACT) then
        redis.call('SETRANGE', STATS, after * STATS_RECORD, record(m, p))
        return after
      end
    end
    return compact(s, p, m)
  end

  -- add_at adds counts p to minute m's record at index i, as the library
  -- remembers it, in one BITFIELD that also reads the record's stamp. It
  -- returns false when the stamp is not m's (the string was written by
  -- another node, which a failover or a FUNCTION FLUSH makes possible):
  -- the counts just added are taken back, and zeros may be left past the
  -- string's end, which add's compact drops.
  local function add_at(p, i, m)
    local bit = i * STATS_RECORD * 8
    local args = { 'BITFIELD', STATS, 'GET', 'u32', bit, 'OVERFLOW', 'SAT' }
    for k = 1, #STAT_TYPES do
      if p[k] > 0 then
        args[#args + 1], args[#args + 2] = 'INCRBY', STAT_TYPES[k]
        args[#args + 1], args[#args + 2] = bit + STAT_OFFSETS[k], p[k]
      end
    end
    if redis.call(unpack(args))[1] == m then
      return true
    end
    local undo = { 'BITFIELD', STATS, 'OVERFLOW', 'SAT' }
    for k = 8, #args, 4 do -- each INCRBY, type, offset, n
      undo[k - 3], undo[k - 2], undo[k - 1], undo[k] = 'INCRBY', args[k + 1], args[k + 2], -args[k + 3]
    end
    redis.call(unpack(undo))
    return false
  end

  -- held sets the pending counts of the queue whose stats key is key.
  local function held(key, p)
    local was = STATS_PENDING[key]
    if was and not p then
      STATS_HELD = STATS_HELD - 1
    elseif p and not was then
      STATS_HELD = STATS_HELD + 1
      STATS_HELD_MOST = math.max(STATS_HELD_MOST, STATS_HELD)
    end
    STATS_PENDING[key] = p
  end

  -- age turns the memory of the queues written lately when it is due,
  -- and makes STATS_PENDING anew when three quarters of its room is empty.
  local function age(now)
    if now - STATS_AGED < STATS_FORGET_MS then
      return
    end
    STATS_WRITTEN_OLD, STATS_WRITTEN, STATS_AT_OLD, STATS_AT = STATS_WRITTEN, {}, STATS_AT, {}
    STATS_AGED = now
    if STATS_HELD_MOST >= 64 and STATS_HELD * 4 < STATS_HELD_MOST then
      local kept = {}
      for key, p in pairs(STATS_PENDING) do
        kept[key] = p
      end
      STATS_PENDING, STATS_HELD_MOST = kept, STATS_HELD
    end
  end

  -- write writes the pending counts p into their minute's record, and
  -- forgets them. The script has written already, and Redis keeps what it
  -- wrote: a history that cannot be written (an ACL without BITFIELD, a
  -- stats key of another type) loses these counts, never the call's reply.
  local function write(p)
    held(STATS, nil)
    age(NOW)
    STATS_WRITTEN[STATS] = NOW
    local m = p.minute
    local ok, err = pcall(function()
      local known = STATS_AT[STATS] or STATS_AT_OLD[STATS]
      local i = known and known >= m * 2048 and known < (m + 1) * 2048 and known - m * 2048
      if not i then
        i = add(p, m)
      elseif not add_at(p, i, m) then
        i = add(p, m, true)
      end
      STATS_AT[STATS] = m * 2048 + i
    end)
    if not ok then
      STATS_AT[STATS], STATS_AT_OLD[STATS] = nil, nil
      redis.log(redis.LOG_WARNING, 'echo_mq: the history of ' .. BASE .. ' was not written: ' .. tostring(err))
    end
  end

  -- pending are this call's queue's pending counts of the current minute:
  -- the ones of a minute that has ended are written first.
  local function pending()
    if not STATS then
      error('the script counts changes but does not declare stats')
    end
    local now = NOW or now_ms() -- a call reads TIME once
    local minute = (now - now % 60000) / 60000
    local p = STATS_PENDING[STATS]
    if p and p.minute ~= minute then
      write(p)
      p = nil
    end
    if not p then
      p = { 0, 0, 0, 0, 0, 0, 0, 0, 0, minute = minute }
      held(STATS, p)
    end
    return p
  end

  -- stat_add adds n to counter i of the queue's pending counts; STATS_N
  -- (prelude.lua), which bind clears, holds them once this call counted.
  stat_add = function(i, n)
    if not STATS_N then
      STATS_N = pending()
    end
    STATS_N[i] = STATS_N[i] + n
  end

  -- stats_flush returns reply, the script's, as it is, once the queue's
  -- pending counts are written if this call counted and they are due: at
  -- once, or when STATS_WRITE_MS has passed since the queue's last write.
  stats_flush = function(reply, at_once)
    local p = STATS_N
    if p and (at_once or NOW - (STATS_WRITTEN[STATS] or STATS_WRITTEN_OLD[STATS] or 0) >= STATS_WRITE_MS) then
      write(p)
    end
    return reply
  end

  -- stats_unwritten are the counts of the queue whose stats key is key not
  -- written yet: {minute, counter 1, ..., counter 9}, or {} when none.
  stats_unwritten = function(key)
    local p = STATS_PENDING[key]
    if not p then
      return {}
    end
    return { p.minute, p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9] }
  end

  -- stats_forget drops what the library holds for the queue whose stats
  -- key is key (its counts not written yet too): for a script that deletes
  -- the queue, so that the library's memory keeps nothing of it.
  stats_forget = function(key)
    held(key, nil)
    STATS_WRITTEN[key], STATS_WRITTEN_OLD[key], STATS_AT[key], STATS_AT_OLD[key] = nil, nil, nil, nil
  end
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
