-- schedule_fire.lua: fire planned ticks of a queue's schedules, or run one
-- schedule now (schedules.lua).
--
-- KEYS[1] meta
-- KEYS[2] pending
-- KEYS[3] delayed
-- KEYS[4] events
-- KEYS[5] schedules
-- KEYS[6] schedule_due
-- KEYS[7] stats
-- KEYS[8] due
-- KEYS[9..] rows: the row of every job id the fires name, in ARGV order
-- ARGV[3] n, the number of fires; then 14 ARGV per fire:
--         name; version, the schedule's version the fire was planned
--         from; tick, the next tick it was planned for ("" for a run now,
--         which fires outside the cadence and leaves it as it is); ids,
--         the jobs to enqueue, comma-separated, oldest tick first ("" for
--         none: only missed ticks); next, the tick after them ("" for
--         none: past the schedule's end); missed, the ticks the plan
--         passed over; overlap ("skip" or "allow"); then the job: payload,
--         priority, max_attempts, backoff, group ("" none), as enqueue.lua
--         takes them, and expires_in_ms, timeout_ms ("" none) as its
--         admission options (admission.lua)
--
-- A planned fire does nothing ("stale") unless the schedule's version and
-- next tick are still the ones it was planned from: of several replicas
-- that planned one tick, one fires it. Otherwise ("done") it moves the
-- schedule's next tick on and enqueues its jobs as enqueue.lua does,
-- pending now, but for overlap "skip": while the last job the schedule
-- enqueued is pending, delayed or active, a tick enqueues nothing and
-- counts in skipped, and of several ticks at once only the first is
-- enqueued. last_run_at, last_job_id and runs count the jobs made; an id
-- that exists already (a schedule made again under an old name) makes
-- none and counts in no run. Missed ticks count in missed.
-- Returns {fresh, earliest, outcomes}: fresh as enqueue.lua's, earliest
-- the earliest next tick of the queue's schedules (-1: none), outcomes
-- one {outcome, skipped, replies} per fire, in order: replies are
-- enqueue.lua's {created, job}, one per job enqueued.
-- Errors: TRYAGAIN (here.lua) when a job row the script looks at, or the
-- flow control keys a grouped job needs, are away on a migrating slot.

local n = tonumber(ARGV[3])
local WIDTH = 14

-- live reports whether the job id is pending, delayed or active.
local function live(id)
  local row = id and row_here(id)
  local state = row and row.state
  return state == 'pending' or state == 'delayed' or state == 'active'
end

-- Reads first (here.lua): each fire's record, and the state of the last
-- job of an overlap "skip" schedule.
local plans = {}
for i = 0, n - 1 do
  local at = 4 + i * WIDTH
  local name, version, tick = ARGV[at], ARGV[at + 1], ARGV[at + 2]
  local record = schedule_record(name)
  local plan = { at = at, name = name, ids = {}, skipped = 0, stale = true }
  if record and record[3] == version and (tick == '' or record[5] == tick) then
    plan.stale = false
    for id in string.gmatch(ARGV[at + 3], '[^,]+') do
      plan.ids[#plan.ids + 1] = id
    end
    if tick ~= '' and ARGV[at + 6] == 'skip' and #plan.ids > 0 then
      local keep = live(record[7]) and 0 or 1
      plan.skipped = #plan.ids - keep
      plan.ids = { plan.ids[keep] }
    end
    if #plan.ids > 0 and (ARGV[at + 11] ~= '' or ARGV[at + 12] ~= '' or ARGV[at + 13] ~= '') then
      flow_here()
    end
  end
  plans[i] = plan
end

-- Then the jobs, in one enqueue.
local jobs, groups, options, k = {}, nil, nil, 0
for i = 0, n - 1 do
  local plan, at = plans[i], plans[i].at
  plan.first = k
  for _, id in ipairs(plan.ids) do
    for _, v in ipairs({ id, ARGV[at + 7], ARGV[at + 8], '0', ARGV[at + 9], ARGV[at + 10] }) do
      jobs[#jobs + 1] = v
    end
    if ARGV[at + 11] ~= '' then
      groups = groups or {}
      groups[k] = ARGV[at + 11]
    end
    if ARGV[at + 12] ~= '' or ARGV[at + 13] ~= '' then
      options = options or {}
      options[k] = { expires = tonumber(ARGV[at + 12]), timeout = ARGV[at + 13] ~= '' and ARGV[at + 13] or nil }
    end
    k = k + 1
  end
end
local fresh, replies = 0, {}
if k > 0 then
  local enqueued = enqueue_jobs(jobs, 1, k, groups, options)
  fresh, replies = enqueued[1], enqueued[2]
end

-- Then the records.
local now = int(now_ms())
local outcomes = {}
for i = 0, n - 1 do
  local plan = plans[i]
  local at, name = plan.at, plan.name
  local outcome = { 'stale', 0, {} }
  if not plan.stale then
    if ARGV[at + 2] ~= '' then
      schedule_next(name, ARGV[at + 4])
    end
    local missed = tonumber(ARGV[at + 5])
    if missed > 0 then
      redis.call('HINCRBY', SCHEDULES, schedule_field(name, 'missed'), missed)
    end
    if plan.skipped > 0 then
      redis.call('HINCRBY', SCHEDULES, schedule_field(name, 'skipped'), plan.skipped)
    end
    local made, mine = 0, {}
    for j = 1, #plan.ids do
      local reply = replies[plan.first + j]
      mine[j] = reply
      made = made + reply[1]
    end
    if made > 0 then
      redis.call('HSET', SCHEDULES, schedule_field(name, 'last_run_at'), now,
        schedule_field(name, 'last_job_id'), plan.ids[#plan.ids])
      redis.call('HINCRBY', SCHEDULES, schedule_field(name, 'runs'), made)
    end
    outcome = { 'done', plan.skipped, mine }
  end
  outcomes[#outcomes + 1] = outcome
end
return { fresh, schedule_earliest(), outcomes }
