-- stats.lua: a queue's history and its latency now (history.lua).
--
-- KEYS[1] meta (it routes the call to the queue's node; not read)
-- ARGV[3] n, the minutes of history to answer (0 to 1,440; 0: the latency
--         alone)
--
-- Returns {now, oldest_ready, window, unwritten}: now the server's time in ms;
-- oldest_ready when the claimable job that has waited longest became
-- claimable (ms: a pending job's ready_at, or run_at or created_at for a
-- row older than ready_at; a due delayed job's run_at), or -1 when none
-- is; window the stats key's records (history.lua's layout, 44 bytes each)
-- from the first of the n minutes up to now's on, in minute order, one per
-- minute (any ahead of now too: a record counts for the minute its stamp
-- names); unwritten the counts this node holds for the queue that are not
-- in the stats key yet ({minute, counter 1, ..., counter 9}, history.lua's
-- order; {} when none).
-- Reads only, through call_here: while the queue's slot migrates, what has
-- left this node reads as empty.

local pending = BASE .. 'pending'

-- oldest_of lowers oldest to job id's ready time, when it is older.
local function oldest_of(id, oldest)
  local at = call_here('HMGET', BASE .. 'job:' .. id, 'ready_at', 'run_at', 'created_at')
  local ready = at and tonumber(at[1] or at[2] or at[3])
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

-- due_delayed lowers oldest to the run_at of the delayed job that came
-- due first, when that is older: a claim would promote it, so it is
-- claimable, and waiting, from then.
local function due_delayed(now, oldest)
  local due = call_here('ZRANGEBYSCORE', BASE .. 'delayed', '-inf', int(now), 'LIMIT', '0', '1', 'WITHSCORES')
  local run_at = due and #due > 0 and tonumber(due[2])
  if run_at and (oldest < 0 or run_at < oldest) then
    return run_at
  end
  return oldest
end

-- window is the queue's records from the first of the n minutes up to
-- now's on.
local function window(now, n)
  local s = call_here('GET', BASE .. 'stats') or ''
  return stats_window(s, math.floor(now / 60000) - n + 1)
end

local now = now_ms()
local n = tonumber(ARGV[3])
return { now, due_delayed(now, oldest_ready()), n > 0 and window(now, n) or '', stats_unwritten(BASE .. 'stats') }
