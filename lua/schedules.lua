-- schedules.lua: a queue's schedules (docs/design.md#schedules), kept in
-- three keys of the queue's slot that only the schedule scripts declare:
--
--   schedules       HASH  per schedule <name>: its definition (JSON, as
--                         the service wrote it), and <name>:<field> for
--                         each field of RECORD below (a name has no ":")
--   schedule_names  ZSET  every schedule's name, score 0: listed by name
--   schedule_due    ZSET  the schedules that will fire, score = next tick
--                         (ms since the epoch); a paused or ended one is
--                         not in it
--
-- The service computes every tick (cron in a time zone, in Go); the
-- scripts keep the record and make each move atomic: a fire names the
-- version and next tick it was planned from, and does nothing when either
-- has changed (another replica fired it, or the schedule was replaced,
-- paused or deleted meanwhile).

-- RECORD is a schedule's state, in the order a record reply gives it
-- after its name and definition: version (bumped by every change of the
-- definition or of paused), paused ("1"), next (the next tick, ms),
-- last_run_at (ms), last_job_id, runs, skipped (ticks overlap: skip
-- passed over), missed (ticks misfire passed over), created_at and
-- updated_at (ms).
local RECORD = { 'version', 'paused', 'next', 'last_run_at', 'last_job_id', 'runs', 'skipped', 'missed',
  'created_at', 'updated_at' }

-- SCHEDULE_KEYS are the schedule keys' names, for obliterate.
local SCHEDULE_KEYS = { 'schedules', 'schedule_names', 'schedule_due' }

-- schedule_field is the schedules hash's field of name's field f.
local function schedule_field(name, f)
  return name .. ':' .. f
end

-- schedule_record is name's record reply, {name, definition, then RECORD's
-- fields} (false for an absent one), or nil when there is no such
-- schedule.
local function schedule_record(name)
  local fields = { name }
  for i, f in ipairs(RECORD) do
    fields[i + 1] = schedule_field(name, f)
  end
  local values = redis.call('HMGET', SCHEDULES, unpack(fields))
  if not values[1] then
    return nil
  end
  table.insert(values, 1, name)
  return values
end

-- schedule_next sets (or, for "", clears) name's next tick, in its record
-- and in the due set.
local function schedule_next(name, next)
  if next == '' then
    redis.call('HDEL', SCHEDULES, schedule_field(name, 'next'))
    redis.call('ZREM', SCHEDULE_DUE, name)
  else
    redis.call('HSET', SCHEDULES, schedule_field(name, 'next'), next)
    redis.call('ZADD', SCHEDULE_DUE, next, name)
  end
end

-- schedule_bump bumps name's version and returns it. A schedule made anew
-- (first made, or made again after a delete or an obliterate) starts at
-- the server's time in microseconds, above any version an old one under
-- the name had (each change adds one: it would have taken more changes
-- than microseconds went by), so that a fire planned from the old one can
-- never pass for the new.
local function schedule_bump(name)
  local field = schedule_field(name, 'version')
  local version = redis.call('HINCRBY', SCHEDULES, field, 1)
  if version == 1 then
    local t = redis.call('TIME')
    version = tonumber(t[1]) * 1000000 + tonumber(t[2])
    redis.call('HSET', SCHEDULES, field, int(version))
  end
  return version
end

-- schedule_passed reports whether next, a next tick a caller computed
-- ("" for none), has passed by now (ms): the caller read the clock too
-- long ago, and a fire may have taken that tick meanwhile.
local function schedule_passed(next, now)
  return next ~= '' and tonumber(next) <= now
end

-- schedule_earliest is the earliest next tick of the queue's schedules
-- (ms), or -1 when none will fire: what a replica's timer waits for.
local function schedule_earliest()
  local first = redis.call('ZRANGE', SCHEDULE_DUE, '0', '0', 'WITHSCORES')
  if #first == 0 then
    return -1
  end
  return tonumber(first[2])
end
