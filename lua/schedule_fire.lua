-- schedule_fire.lua: fire planned ticks of a queue's schedules, or run one
-- schedule now (schedules.lua).
--
-- KEYS[1] meta
-- KEYS[2] pending
-- KEYS[3] delayed
-- KEYS[4] events
-- KEYS[5] schedules
-- KEYS[6] schedule_due
-- KEYS[7..] rows: the job row of each fire that makes a job, in ARGV order
-- ARGV[3] n, the number of fires; then 12 ARGV per fire:
--         name; version, the schedule's version the fire was planned
--         from; tick, the next tick it was planned for ("" for a run now,
--         which fires outside the cadence and leaves it as it is); the
--         job's id ("" for none: the tick was missed, misfire "skip");
--         next, the tick after it ("" for none: past the schedule's end);
--         missed, the ticks the plan passed over; overlap ("skip" or
--         "allow"); then the job: payload, priority, max_attempts,
--         backoff, group ("" none), as enqueue.lua takes them
--
-- A planned fire does nothing ("stale") unless the schedule's version and
-- next tick are still the ones it was planned from: of several replicas
-- that planned one tick, one fires it. Otherwise it moves the schedule's
-- next tick on and
--   - with overlap "skip", while the last job it enqueued is pending,
--     delayed or active, counts the tick in skipped ("skipped");
--   - else enqueues the job as enqueue.lua does, pending now ("fired"),
--     or finds it made already ("exists": a schedule made again under an
--     old name), and sets last_run_at, last_job_id and runs.
-- Missed ticks count in missed.
-- Returns {fresh, earliest, outcomes}: fresh as enqueue.lua's, earliest
-- the earliest next tick of the queue's schedules (-1: none), outcomes
-- one {outcome, job or false} per fire, in order.
-- Errors: TRYAGAIN (here.lua) when a job row the script looks at, or the
-- flow control keys a grouped job needs, are away on a migrating slot.

local n = tonumber(ARGV[3])
local WIDTH = 12

-- Reads first (here.lua): each fire's record, and the state of the last
-- job of an overlap "skip" schedule.
local plans = {}
for i = 0, n - 1 do
  local at = 4 + i * WIDTH
  local name, version, tick, id = ARGV[at], ARGV[at + 1], ARGV[at + 2], ARGV[at + 3]
  local record = schedule_record(name)
  local plan = { at = at, name = name, id = id, outcome = 'stale' }
  if record and record[3] == version and (tick == '' or record[5] == tick) then
    plan.outcome = id == '' and 'missed' or 'fired'
    if id ~= '' and tick ~= '' and ARGV[at + 6] == 'skip' and record[7] then
      local last = row_here(record[7])
      local state = last and last.state
      if state == 'pending' or state == 'delayed' or state == 'active' then
        plan.outcome = 'skipped'
      end
    end
    if plan.outcome == 'fired' and ARGV[at + 11] ~= '' then
      flow_here()
    end
  end
  plans[i] = plan
end

-- Then the jobs, in one enqueue.
local jobs, groups, places, k = {}, nil, {}, 0
for i = 0, n - 1 do
  local plan = plans[i]
  if plan.outcome == 'fired' then
    local at = plan.at
    for _, v in ipairs({ plan.id, ARGV[at + 7], ARGV[at + 8], '0', ARGV[at + 9], ARGV[at + 10] }) do
      jobs[#jobs + 1] = v
    end
    if ARGV[at + 11] ~= '' then
      groups = groups or {}
      groups[k] = ARGV[at + 11]
    end
    places[i] = k
    k = k + 1
  end
end
local fresh, replies = 0, {}
if k > 0 then
  local enqueued = enqueue_jobs(jobs, 1, k, groups)
  fresh, replies = enqueued[1], enqueued[2]
end

-- Then the records.
local now = int(now_ms())
local outcomes = {}
for i = 0, n - 1 do
  local plan = plans[i]
  local at, name = plan.at, plan.name
  local reply = false
  if plan.outcome ~= 'stale' then
    if ARGV[at + 2] ~= '' then
      schedule_next(name, ARGV[at + 4])
    end
    local missed = tonumber(ARGV[at + 5])
    if missed > 0 then
      redis.call('HINCRBY', SCHEDULES, schedule_field(name, 'missed'), missed)
    end
  end
  if plan.outcome == 'skipped' then
    redis.call('HINCRBY', SCHEDULES, schedule_field(name, 'skipped'), 1)
  elseif plan.outcome == 'fired' then
    local r = replies[places[i] + 1]
    if r[1] == 0 then
      plan.outcome = 'exists'
    end
    reply = r[2]
    redis.call('HSET', SCHEDULES, schedule_field(name, 'last_run_at'), now, schedule_field(name, 'last_job_id'), plan.id)
    redis.call('HINCRBY', SCHEDULES, schedule_field(name, 'runs'), 1)
  end
  outcomes[#outcomes + 1] = { plan.outcome, reply }
end
return { fresh, schedule_earliest(), outcomes }
