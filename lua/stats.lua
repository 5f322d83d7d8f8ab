-- stats.lua: a queue's history and its latency now (history.lua).
--
-- KEYS[1] meta (it routes the call to the queue's node; not read)
-- ARGV[3] "1" to answer the history ring too, "0" for the latency alone
--
-- Returns {now, oldest_ready, ring}: now the server's time in ms;
-- oldest_ready when the pending job that has waited longest became
-- claimable (ms, its ready_at or created_at), or -1 when none is pending;
-- ring the stats string as it is (history.lua; "" when the queue has
-- none, or ARGV[3] is "0"). Reads only, through call_here: while the
-- queue's slot migrates, what has left this node reads as empty.

local pending = BASE .. 'pending'

-- oldest_of lowers oldest to job id's ready time, when it is older.
local function oldest_of(id, oldest)
  local at = call_here('HMGET', BASE .. 'job:' .. id, 'ready_at', 'created_at')
  local ready = at and tonumber(at[1] or at[2])
  if ready and (oldest < 0 or ready < oldest) then
    return ready
  end
  return oldest
end

-- first_in is the first pending job scored from min to max (ZRANGEBYSCORE
-- bounds), in that order or, with rev, the other way; nil when none.
local function first_in(min, max, rev)
  local found
  if rev then
    found = call_here('ZREVRANGEBYSCORE', pending, max, min, 'LIMIT', '0', '1', 'WITHSCORES')
  else
    found = call_here('ZRANGEBYSCORE', pending, min, max, 'LIMIT', '0', '1', 'WITHSCORES')
  end
  if found and #found > 0 then
    return found[1], tonumber(found[2])
  end
end

-- oldest_ready looks at the jobs that have waited longest in each
-- priority band of pending (lifecycle.lua's add_pending): the first one
-- scored above the band's base (FIFO) and the last one below it (a job put
-- back at the front: the most recent first); and the grouped jobs' first,
-- by their place in their groups (flow.lua). A band with no job costs
-- nothing: each look starts where the last band ended.
local function oldest_ready()
  local oldest, from = -1, '-inf'
  while true do
    local id, score = first_in(from, '+inf')
    if not id then
      return oldest
    end
    if score >= GROUPED then
      return oldest_of(id, oldest)
    end
    local base = math.floor(score / BAND + 0.5) * BAND
    if score < base then
      oldest = oldest_of(first_in(int(base - BAND / 2), '(' .. int(base), true), oldest)
      id = first_in(int(base), '(' .. int(base + BAND / 2))
    end
    if id then
      oldest = oldest_of(id, oldest)
    end
    from = '(' .. int(base + BAND / 2)
  end
end

local now = now_ms()
local ring = ''
if ARGV[3] == '1' then
  ring = call_here('GET', BASE .. 'stats') or ''
end
return { now, oldest_ready(), ring }
