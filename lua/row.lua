-- row.lua: a job's row and the small helpers every script uses.
--
-- A job row is a HASH with the job's JSON field names: state, payload,
-- result, progress, priority, attempts, max_attempts, stalled, last_error,
-- cancel_requested ("1" when set), cancel_reason, worker, backoff
-- ("type:delay_ms:max_delay_ms", absent for the default), created_at,
-- run_at, started_at, finished_at (ms), token (the current claim's fencing
-- token), outcomes (fence.lua) and logs (the lines its log was ever
-- given, log_append.lua); not the lease, which is the job's score
-- in the active set (a row claimed by an earlier release may keep a
-- lease_expires_at, which readers pass over). Absent fields mean
-- zero, false or never, and an absent max_attempts DEFAULT_MAX_ATTEMPTS:
-- a row holds only what differs from those, so that a pending job's row is
-- a few small fields that Redis keeps as one listpack (docs/operating.md,
-- "Redis settings", for hash-max-listpack-value).
--
-- Invariant: a job is in exactly one of the six state sets, and its row
-- exists while it is; scripts change both in one step.

-- DEFAULT_MAX_ATTEMPTS is the attempt budget of a row without max_attempts
-- (job.DefaultMaxAttempts in Go).
local DEFAULT_MAX_ATTEMPTS = 3

-- BAND is the width of one priority band of pending scores: a job of
-- priority p scores p * BAND + seq, so lower priorities come first and
-- jobs are FIFO within one. Scores stay exact doubles below 2^53.
local BAND = 1e13

-- int renders a whole number as an integer string, exact below 2^53.
-- string.format's %d (a C long here) is the cheapest way Lua 5.1 has: about
-- half of tostring's cost, which also writes only 14 significant digits.
-- Formatting is a good part of a script's cost (docs/design.md#scripts,
-- "What a call costs"), and a script formats its now many times: the last
-- value is kept.
local int_last, int_text
local function int(n)
  if n ~= int_last then
    int_last = n
    if n < 9007199254740992 and n > -9007199254740992 and n == math.floor(n) then
      int_text = string.format('%d', n)
    else
      int_text = string.format('%.0f', n)
    end
  end
  return int_text
end

-- zero_or_number reads a number argument that is most often "0" (a delay,
-- a priority, a count) without the parse, which costs more than the rest
-- of what a script does with it.
local function zero_or_number(text)
  if text == '0' then
    return 0
  end
  return tonumber(text)
end

-- now_ms is the Redis server's clock in milliseconds: the only clock that
-- leases, delays and finish times are measured on.
local function now_ms()
  local t = redis.call('TIME')
  NOW = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  return NOW
end

local function job_key(id)
  return BASE .. 'job:' .. id
end

-- row_of turns HGETALL's flat reply into a field -> value table.
local function row_of(flat)
  local row = {}
  for i = 1, #flat, 2 do
    row[flat[i]] = flat[i + 1]
  end
  return row
end

-- read_row reads a declared job row (JOB, or one of rows) as a table,
-- empty when there is no such job. Scripts read a row once, change the
-- table as they change the row, and answer reply_of it.
local function read_row(id)
  return row_of(redis.call('HGETALL', job_key(id)))
end

-- reply_of is the reply form of one job: its id, then its row's field and
-- value pairs.
local function reply_of(id, row)
  local reply = { id }
  for field, value in pairs(row) do
    reply[#reply + 1] = field
    reply[#reply + 1] = value
  end
  return reply
end

-- active_lease is the lease of job id when it is active: its score in the
-- active set, which the script need not declare (it reads it only when it
-- is here), as text; nil otherwise. The lease is that score alone
-- (docs/design.md#fencing), so a reply about an active job adds it.
local function active_lease(id, state)
  if state ~= 'active' then
    return nil
  end
  local lease = redis.pcall('ZSCORE', ACTIVE or BASE .. 'active', id)
  if type(lease) == 'string' then
    return lease
  end
  return nil
end

-- leased_reply is reply_of row, with its lease when it is active.
local function leased_reply(id, row)
  row.lease_expires_at = active_lease(id, row.state) or row.lease_expires_at
  return reply_of(id, row)
end

-- job_reply is the reply form of a declared row read now: the row as
-- HGETALL answers it, passed through (internal/job's Parse), with its
-- lease when it is active.
local function job_reply(id)
  local flat = redis.call('HGETALL', job_key(id))
  for i = 1, #flat, 2 do
    if flat[i] == 'state' then
      local lease = active_lease(id, flat[i + 1])
      if lease then
        return { id, flat, { 'lease_expires_at', lease } }
      end
      break
    end
  end
  return { id, flat }
end

-- set_fields writes fields (field, value, ...) to job id's row in one HSET
-- and to row, its table.
local function set_fields(id, row, fields)
  for i = 1, #fields, 2 do
    row[fields[i]] = fields[i + 1]
  end
  redis.call('HSET', job_key(id), unpack(fields))
end

-- del_fields deletes those of names that row has, from the row and the
-- table, in one HDEL (none when it has none).
local function del_fields(id, row, names)
  local present = {}
  for _, name in ipairs(names) do
    if row[name] then
      row[name] = nil
      present[#present + 1] = name
    end
  end
  if #present > 0 then
    redis.call('HDEL', job_key(id), unpack(present))
  end
end

-- CHUNK bounds the arguments of one variadic call made from a list of any
-- length (Lua's unpack has a stack limit).
local CHUNK = 500

-- each_chunk runs the variadic command on key (nil for a command of
-- keys alone, DEL) with the items of list, in chunks of at most CHUNK
-- items (pairs of items when width is 2); nothing for an empty list.
local function each_chunk(list, width, command, key)
  local step, n = CHUNK * width, #list
  for first = 1, n, step do
    local last = math.min(first + step - 1, n)
    if key then
      redis.call(command, key, unpack(list, first, last))
    else
      redis.call(command, unpack(list, first, last))
    end
  end
end

-- error_reply turns an error code into the script's error reply. For
-- EMQSTATE, state and way_out name the job's state and what the caller
-- can do instead.
local function error_reply(code, id, state, way_out)
  if state then
    return redis.error_reply(code .. ' job ' .. id .. ' is ' .. state .. '; ' .. way_out)
  end
  local text = {
    EMQGONE = 'no such job',
    EMQSTALE = 'the token does not hold this job',
    EMQSTATE = 'the verb does not apply in the job\'s state',
  }
  return redis.error_reply(code .. ' ' .. (text[code] or 'error') .. ': ' .. id)
end

-- put_field adds field and value to a row being built, unless value is
-- false.
local function put_field(row, field, value)
  if value then
    row[#row + 1], row[#row + 2] = field, value
  end
end
