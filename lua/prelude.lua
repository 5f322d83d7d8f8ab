-- prelude.lua: the keys and arguments every echo_mq script runs with
-- (docs/design.md#scripts). lua.go puts the shared files first, in this
-- order: prelude.lua, row.lua, due.lua, here.lua, history.lua, events.lua, fence.lua, flow.lua,
-- admission.lua, lifecycle.lua, batches.lua, newjobs.lua, schedules.lua,
-- push.lua, queues.lua; then each script, wrapped in a
-- function of its own, whose reply goes through history.lua's stats_flush.
--
-- A script's header names its KEYS by role, one per line:
--   meta       HASH  layout (LAYOUT below), seq (pending order), paused,
--                    failed total; a queue written by earlier releases
--                    may also keep token (tokens' old counter), enqueued
--                    and completed: no script reads or writes them
--                    (docs/design.md#layout)
--   pending    ZSET  score = priority * BAND +/- seq (claim order)
--   active     ZSET  score = lease deadline, ms, server clock: the lease
--                    itself, which no row keeps (docs/design.md#fencing)
--   delayed    ZSET  score = run-at, ms
--   completed, dead, cancelled
--              ZSET  score = finished-at, ms
--   set        one of the six sets above (list.lua)
--   events     STREAM one entry per state change (events.lua)
--   job        HASH  the one job row the call is about (row.lua)
--   logs       LIST  that job's log (log_append.lua); bind does not name
--                    it: the script builds it from BASE, as job_key does
--   reaper     STRING the reapers' turn of the queue
--   rows       the rows of the jobs the call names, one KEYS each
--   schedules, schedule_names, schedule_due
--              the queue's schedules (schedules.lua)
--   stats      STRING the queue's last 24 hours, minute by minute
--              (history.lua): declared by every script that counts
--   due        ZSET  the due index of the queue's node or slot (due.lua):
--              declared by every script that makes work for the reaper
-- lua.go reads those lines: the Go side builds KEYS in that order from
-- them, and bind below names this call's keys from them, so header, Go
-- and script cannot disagree. A key a script does not declare stays nil
-- here, and using one is an error in every test. A script declares every
-- key it writes and every job row it is told about; rows it finds through
-- a set are read through here.lua. All are under the queue's {queue} hash
-- tag, in one Cluster slot.
--
-- Every script's ARGV starts with these two:
--   ARGV[1] the queue's key base, "<prefix>:{<queue>}:"; a row found by a
--           range scan is BASE .. "job:" .. id
--   ARGV[2] the wake channel, told how many claimers to wake

local META, PENDING, ACTIVE, DELAYED, COMPLETED, DEAD, CANCELLED
local SET, EVENTS, JOB, REAPER
local SCHEDULES, SCHEDULE_NAMES, SCHEDULE_DUE, STATS
local BASE, WAKE, ARGV

-- NOW is the server's time in ms once this call has read it (row.lua's
-- now_ms); STATS_N holds this call's counts once it counted a change
-- (history.lua).
local NOW, STATS_N

-- due is the due index (due.lua): due.key its key when this call
-- declares it (false when the service left it out: due.index); due.known the score it holds for this call's queue as far
-- as this call knows, nil before it looked, false for none.
local due = {}

-- FLOW_HERE is true once this call has made sure it may touch the flow
-- control keys (flow.lua's flow_here) and the other keys found through a
-- row (batches.lua).
local FLOW_HERE

-- ENDED is the list of jobs whose dependants have yet to learn that they
-- ended, while batches.lua's job_ended works through it; nil outside.
-- RELEASED holds, by id, the rows of the jobs this call released into
-- pending (batches.lua's batches.release), for a claim that follows.
-- RATED holds, by id, the group rate limit start a claim logged for a job
-- it took (flow.lua's take_rotating), taken back if the job does not start.
local ENDED, RELEASED, RATED

-- LAYOUT is the version of the stored layout these scripts read and write
-- (docs/design.md#layout): rows, sets, events and meta. A queue's meta
-- holds the version that wrote it as "layout" from its first enqueue on;
-- a queue written before versions were kept has none and is served as
-- this one (its layout is this one's). A script never writes to a queue
-- whose layout is newer: bind refuses the call with EMQLAYOUT. A queue
-- with job defaults or a retention keeps its version as "<LAYOUT>.0" (the
-- same number to every release: settings.lua), which tells an enqueue or
-- a finish, which read the layout anyway, that it has those to read
-- (lifecycle.lua's retention.finished).
local LAYOUT = 1

-- QUEUE_LAYOUT is the queue's layout version as bind read it (false when
-- its meta holds none), for enqueue to stamp a queue that has none.
-- QUEUE_STATE is what a claim reads of meta (lifecycle.lua's plan_claim),
-- read by bind with the layout for a script that claims: {layout, paused,
-- flow, grouped, due (due.lua)}, false for each absent.
-- QUEUE_DEFAULTS is the queue's job defaults (newjobs.lua's job_defaults),
-- false or nil for none: bind reads them for a script that enqueues
-- (claims is 'defaults') when the queue's layout says it has some (or it
-- has no layout yet: its first enqueue), so that an enqueue on a queue
-- without defaults makes no read more than before.
local QUEUE_LAYOUT, QUEUE_STATE, QUEUE_DEFAULTS

-- LIBRARY is true when the scripts run as a Functions library, whose Lua
-- state lives on between calls (lua.go sets it); false under EVAL.
local LIBRARY = false

-- bind names this call's KEYS by the roles of its script's header and
-- takes its ARGV. It returns the call's refusal when the queue's layout is
-- newer than LAYOUT (the script does not run), else nothing. claims is
-- true for a script that may claim (QUEUE_STATE), false for one that
-- never does, the index of the ARGV that says how many this call
-- claims, or 'defaults' for one that enqueues (lua.go's Script.claims). Library functions run with the keys and arguments as
-- parameters, EVAL with them as globals: both come through here. It makes
-- no table: it runs on every call.
local function bind(keys, argv, roles, claims)
  META, PENDING, ACTIVE, DELAYED, COMPLETED, DEAD, CANCELLED = nil, nil, nil, nil, nil, nil, nil
  SET, EVENTS, JOB, REAPER = nil, nil, nil, nil
  SCHEDULES, SCHEDULE_NAMES, SCHEDULE_DUE, STATS = nil, nil, nil, nil
  FLOW_HERE, NOW, STATS_N, ENDED, RELEASED, RATED = nil, nil, nil, nil, nil, nil
  due.key, due.known = nil, nil
  for i = 1, #roles do
    local role, key = roles[i], keys[i]
    if role == 'job' then JOB = key
    elseif role == 'due' then due.key = key or false -- false: on one node, not passed (due.lua)
    elseif role == 'events' then EVENTS = key
    elseif role == 'meta' then META = key
    elseif role == 'stats' then STATS = key
    elseif role == 'active' then ACTIVE = key
    elseif role == 'pending' then PENDING = key
    elseif role == 'completed' then COMPLETED = key
    elseif role == 'delayed' then DELAYED = key
    elseif role == 'dead' then DEAD = key
    elseif role == 'cancelled' then CANCELLED = key
    elseif role == 'set' then SET = key
    elseif role == 'reaper' then REAPER = key
    elseif role == 'schedules' then SCHEDULES = key
    elseif role == 'schedule_names' then SCHEDULE_NAMES = key
    elseif role == 'schedule_due' then SCHEDULE_DUE = key
    end
  end
  BASE, WAKE, ARGV = argv[1], argv[2], argv
  QUEUE_LAYOUT, QUEUE_STATE, QUEUE_DEFAULTS = nil, nil, nil
  if META then
    if claims == 'defaults' then
      QUEUE_LAYOUT = redis.call('HGET', META, 'layout')
      -- "1.0" has job defaults; a plain version (below 100) is at most two
      -- characters: a length, where a call of string.find would cost.
      if not QUEUE_LAYOUT or #QUEUE_LAYOUT > 2 then
        QUEUE_DEFAULTS = redis.call('HGET', META, 'defaults')
      end
    elseif claims == true or (claims and (tonumber(argv[claims]) or 0) > 0) then
      QUEUE_STATE = redis.call('HMGET', META, 'layout', 'paused', 'flow', 'grouped', 'due')
      QUEUE_LAYOUT = QUEUE_STATE[1]
    else
      QUEUE_LAYOUT = redis.call('HGET', META, 'layout')
    end
    if QUEUE_LAYOUT and (tonumber(QUEUE_LAYOUT) or LAYOUT + 1) > LAYOUT then
      return redis.error_reply('EMQLAYOUT ' .. QUEUE_LAYOUT .. ' the queue\'s layout is version ' .. QUEUE_LAYOUT ..
        ', newer than this service knows (' .. LAYOUT .. '): upgrade the service')
    end
  end
end

-- set_of names the declared sorted set that holds a job in state.
local function set_of(state)
  if state == 'pending' then return PENDING
  elseif state == 'active' then return ACTIVE
  elseif state == 'delayed' then return DELAYED
  elseif state == 'completed' then return COMPLETED
  elseif state == 'dead' then return DEAD
  elseif state == 'cancelled' then return CANCELLED
  elseif state == 'waiting' then return BASE .. 'waiting' -- never declared (batches.lua)
  end
end
