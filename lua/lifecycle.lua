-- lifecycle.lua: the moves of a job between states that several scripts
-- make. Each script reads first and writes after (here.lua): the plan_*
-- functions only read, the others write.

-- add_pending puts job id in the pending set: at the back of its priority
-- band, or at the front when front is true (a job recovered from a stall).
-- It does not touch the row.
local function add_pending(id, priority, front)
  local seq = redis.call('HINCRBY', META, 'seq', '1')
  local score = priority * BAND + seq
  if front then
    score = priority * BAND - seq
  end
  redis.call('ZADD', PENDING, int(score), id)
end

-- push_pending makes job id, whose row (a table) the script read, pending
-- (a grouped job at its place in its group, flow.lua), claimable since
-- its run_at or now (history.lua's ready_at).
local function push_pending(id, row, front)
  if row.group then
    group_pending(id, row)
  else
    add_pending(id, tonumber(row.priority or '0'), front)
  end
  row.state, row.ready_at = 'pending', ready_at(row, NOW or now_ms())
  redis.call('HSET', job_key(id), 'state', 'pending', 'ready_at', row.ready_at)
  del_fields(id, row, { 'run_at' })
end

-- plan_due reads up to limit delayed jobs whose run-at has come, in run-at
-- order, with their rows: a list of {id, row}, row nil for a row lost.
-- delayed is the delayed set's key, declared or not (a claim promotes
-- only when the set is on this node, and leaves the rest to the reaper).
local function plan_due(delayed, now, limit)
  local due = call_here('ZRANGEBYSCORE', delayed, '-inf', int(now), 'LIMIT', '0', limit) or {}
  local plan = {}
  for i, id in ipairs(due) do
    plan[i] = { id, row_here(id) }
    flow_check(plan[i][2])
  end
  return plan
end

-- promote moves the jobs plan_due read to the back of pending and
-- returns how many it moved.
local function promote(delayed, plan)
  for _, due in ipairs(plan) do
    redis.call('ZREM', delayed, due[1])
    if due[2] then
      push_pending(due[1], due[2], false)
      emit('due', due[1], 'pending')
    end
  end
  return #plan
end

-- due_in is how many ms from now the earliest delayed job comes due (0 if
-- it is due), or -1 when none is delayed (or the set is not here). It is a
-- span on the server's clock, so a waiter needs no clock of its own.
local function due_in(delayed, now)
  local first = call_here('ZRANGE', delayed, '0', '0', 'WITHSCORES')
  if not first or #first == 0 then
    return -1
  end
  return math.max(tonumber(first[2]) - now, 0)
end

-- plan_due_first is plan_due for a claim, which also answers due_in: it
-- reads the earliest delayed job first, and the due ones only when it is
-- due, so that a queue with nothing due pays one read of the set, not
-- two, and one with nothing delayed does not read the time for it.
-- While the due index holds the queue at a time to come (meta's due, which
-- bind read for a claim), no delayed job runs before it (due.lua): the
-- claim does not read the delayed set, and due_in is that time, when a
-- waiter looks again. A queue the index does not hold (one written before
-- it) has its delayed set read.
-- Returns the plan and due_in's answer when no job is due (nil
-- otherwise: the promotion changes it).
local function plan_due_first(delayed)
  local indexed = QUEUE_STATE and QUEUE_STATE[5]
  if indexed then
    local at, now = tonumber(indexed), NOW or now_ms()
    if at > now then
      return {}, at - now
    end
  end
  local first = call_here('ZRANGE', delayed, '0', '0', 'WITHSCORES')
  if not first or #first == 0 then
    return {}, -1
  end
  local at, now = tonumber(first[2]), NOW or now_ms()
  if at > now then
    return {}, at - now
  end
  return plan_due(delayed, now, '1000'), nil
end

-- job_ended tells a job's batch and dependants that it ended (batches.lua,
-- which comes after this file).
local job_ended

-- finish moves a job that has left the active set (or its waiting set)
-- into a terminal state; row (the fields the script read: at least its
-- dedupe ones, batch_id and dependants) lets go of its dedupe key
-- (admission.lua) and tells its batch and dependants (job_ended).
local function finish(id, row, state, now)
  redis.call('ZADD', set_of(state), int(now), id)
  redis.call('HSET', job_key(id), 'state', state, 'finished_at', int(now))
  dedupe_released(id, row)
  job_ended(id, row, state, now)
end

-- DEFAULT_BACKOFF is the retry delay of a job whose enqueue named none.
local DEFAULT_BACKOFF = 'exponential:1000:3600000'

-- backoff_ms is job row's retry delay after its attempt number attempts:
-- exponential (delay_ms * 2^(attempts-1)) or fixed (delay_ms), capped at
-- max_delay_ms.
local function backoff_ms(row, attempts)
  local kind, delay, cap = string.match(row.backoff or DEFAULT_BACKOFF, '^(%a+):(%d+):(%d+)$')
  delay, cap = tonumber(delay), tonumber(cap)
  if kind == 'exponential' then
    delay = delay * 2 ^ math.max(attempts - 1, 0)
  end
  return math.min(delay, cap)
end

-- unheld is token, or the first number above it that job row (a read_row
-- table) neither holds nor remembers a report under (fence.lua's
-- outcomes): a claim never gives a job a token that fence_row would still
-- take from the job's last holder, or from one of the last eight that
-- reported. It skips at most nine. Older tokens of the job, and those of a
-- job removed and enqueued again under its id, are not remembered: that
-- the claim's random first token (claim.lua) meets one of them is a chance
-- of about 2^-53 each (docs/design.md#fencing).
local function unheld(row, token)
  while row.token == int(token)
    or (row.outcomes and string.find(row.outcomes, ':' .. int(token) .. ' ', 1, true)) do
    token = token + 1
  end
  return token
end

-- set_in puts field and value into flat, a row as HGETALL answered it:
-- at the value's place at, or at the end when at is false.
local function set_in(flat, at, field, value)
  if at then
    flat[at] = value
  else
    local n = #flat
    flat[n + 1], flat[n + 2] = field, value
  end
end

-- plain_lease reports whether a pending job's row, flat (as HGETALL
-- answers it), takes the plain lease (lease_plain): it has no expiry and
-- no timeout, which the full lease checks.
local function plain_lease(flat)
  for i = 1, #flat, 2 do
    local field = flat[i]
    if field == 'expires_at' or field == 'timeout_ms' then
      return false
    end
  end
  return true
end

-- plan_pending reads the first count pending jobs' rows into plan (flats
-- and rows, as plan_claim says), and reports whether there were any.
local function plan_pending(plan, count)
  local ids = redis.call('ZRANGE', PENDING, '0', count - 1)
  for _, id in ipairs(ids) do
    local flat = flat_here(id)
    if flat and plain_lease(flat) then
      plan.flats[id] = flat
    elseif flat then
      plan.rows[id] = row_of(flat)
    else
      plan.rows[id] = false
    end
  end
  return #ids > 0
end

-- plan_claim reads what a claim of count jobs needs: the due delayed jobs
-- (plan_due on the set at delayed, which the script may not have
-- declared), whether the queue is paused, and the first count pending
-- jobs with their rows: as HGETALL answered them (plan.flats) when they
-- take the plain lease, else as tables (plan.rows); plan.pending says
-- whether there were any (of a paused queue: whether any job waits
-- behind the pause). A claim takes its jobs from those and the due ones
-- promoted ahead of them (the new first count are among both). (Popping
-- first and putting the jobs back when a row is away cannot work: a pop
-- that empties the set deletes it, and a node handing its slot over
-- cannot make it again.)
local function plan_claim(delayed, count)
  local plan = { delayed = delayed, rows = {} }
  plan.due, plan.due_in = plan_due_first(delayed)
  local meta = QUEUE_STATE -- bind read it, before any write of this call
  plan.paused = meta[2]
  if meta[3] or meta[4] then
    -- Flow control (flow.lua): the jobs are chosen as the claim goes.
    flow_here()
    plan.flow, plan.grouped = settings_of(meta[3]) or {}, meta[4]
  end
  if plan.paused and count > 0 then
    plan.pending = redis.call('EXISTS', PENDING) == 1 -- held back by the pause
  end
  if count == 0 or plan.paused or plan.flow then
    return plan
  end
  plan.flats = {}
  plan.pending = plan_pending(plan, count)
  for _, due in ipairs(plan.due) do
    plan.rows[due[1]] = due[2] or false
  end
  for _, row in pairs(plan.rows) do
    if row and row.expires_at and expired(row, NOW or now_ms()) then
      flow_here() -- expire_claimed writes the undeclared cancelled set
      break
    end
  end
  return plan
end

-- expire_claimed ends job id (row), taken for a claim that it may not
-- start (expired): cancelled, with cancel_reason "expired", instead of
-- leased. A job taken under flow control gives back what the take counted
-- and lets its group go on (flow.lua).
local function expire_claimed(id, row, now, flowed)
  if flowed then
    flow_untake(id, row.group)
  end
  -- The cancelled set is not declared (a claim declares no set that may
  -- not exist while its slot migrates): plan_claim made sure it is here.
  redis.call('ZADD', BASE .. 'cancelled', int(now), id)
  set_fields(id, row, { 'cancel_reason', 'expired', 'state', 'cancelled', 'finished_at', int(now) })
  dedupe_released(id, row)
  unexpiring(id)
  if flowed then
    flow_finished(id, row)
  end
  emit('cancelled', id, 'cancelled', 'reason', 'expired')
  job_ended(id, row, 'cancelled', now)
end

-- lease_plain is lease's step for one job whose row, flat (HGETALL's
-- reply, as read), takes the plain lease (plain_lease): it writes what
-- lease writes for a job, with no row table, and turns flat in place into
-- the job's fields for its reply ({id, flat}, internal/job's Parse).
-- Returns the token it used (token, or the first above it that the row
-- neither holds nor remembers, as unheld).
local function lease_plain(id, flat, now, deadline, started, worker, token, first, first_text)
  local at_state, at_token, at_attempts, at_started, at_lease, at_worker
  local ready, run_at, created, outcomes, held, cancel
  for i = 2, #flat, 2 do
    local field = flat[i - 1]
    if field == 'state' then at_state = i
    elseif field == 'ready_at' then ready = flat[i]
    elseif field == 'created_at' then created = flat[i]
    elseif field == 'attempts' then at_attempts = i
    elseif field == 'token' then at_token, held = i, flat[i]
    elseif field == 'started_at' then at_started = i
    elseif field == 'lease_expires_at' then at_lease = i
    elseif field == 'worker' then at_worker = i
    elseif field == 'run_at' then run_at = flat[i]
    elseif field == 'outcomes' then outcomes = flat[i]
    elseif field == 'cancel_requested' or field == 'cancel_reason' then
      cancel = true
      flat[i] = '' -- a deleted field, in the reply
    end
  end
  -- The last attempt's cancel request and worker go (a new worker name
  -- is written over the old one).
  if at_worker and worker == '' then
    redis.call('HDEL', job_key(id), 'cancel_requested', 'cancel_reason', 'worker', 'lease_expires_at')
    flat[at_worker] = ''
  elseif cancel or at_lease then -- at_lease: a lease a row kept before it was the score alone
    redis.call('HDEL', job_key(id), 'cancel_requested', 'cancel_reason', 'lease_expires_at')
  end
  stat_add(STAT_WAIT, math.max(now - tonumber(ready or run_at or created or now), 0))
  if held or outcomes then -- claimed before: past what its row knows
    token = unheld({ token = held, outcomes = outcomes }, token)
  end
  local text = token == first and first_text or int(token)
  local attempts = string.format('%d', (at_attempts and tonumber(flat[at_attempts]) or 0) + 1)
  if worker ~= '' then
    redis.call('HSET', job_key(id), 'state', 'active', 'token', text, 'started_at', started,
      'attempts', attempts, 'worker', worker)
  else
    redis.call('HSET', job_key(id), 'state', 'active', 'token', text, 'started_at', started,
      'attempts', attempts)
  end
  set_in(flat, at_state, 'state', 'active')
  set_in(flat, at_token, 'token', text)
  set_in(flat, at_started, 'started_at', started)
  set_in(flat, at_lease, 'lease_expires_at', deadline)
  set_in(flat, at_attempts, 'attempts', attempts)
  if worker ~= '' then
    set_in(flat, at_worker, 'worker', worker)
  end
  emit('claimed', id, 'active', 'worker', worker)
  return token
end

-- lease leases the jobs of list (every step-th item is an id: step 2 for
-- a ZPOPMIN reply of ids and scores, 1 for a list of ids) for lease_ms,
-- each under a fresh fencing token, and returns their replies. The tokens
-- are first, first + 1, ... in list order, past any a job's row holds or
-- remembers (unheld). first is the random number the service drew for
-- this call (lua/token.go), as the call's ARGV gave it: text, read as a
-- number only by a call that leases (a claim of an empty queue pays
-- nothing for it). A call's tokens are consecutive, but all go to
-- its one caller (a worker, or the queue's push target): they tell the
-- caller nothing it does not hold already, and nothing of another call's
-- tokens. rows holds their rows: false for a row lost outside a
-- migration (dropped); nil for a popped job plan_claim did not read
-- (never so, but should it be, it goes back to pending with its score
-- rather than be lost). extra is a field every leased row gets set to
-- "1", or nil (then the jobs were taken under flow control).
-- A job whose expiry has come is cancelled instead (expire_claimed), and a
-- job with a timeout gets a lease that ends by it (admission.lua).
-- Returns the replies, the token after the last one used, and how many
-- jobs were expired instead.
-- Per job: one HSET (one HDEL if the last attempt left a cancel request or
-- a worker), one event; per call: one ZADD. Keep it so: this runs for
-- every job the service hands out.
local function lease(list, step, rows, now, lease_ms, worker, first, extra, flats)
  local jobs, leased, expiring = {}, {}, 0
  local token = tonumber(first)
  local first_token = token
  local deadline, started = int(now + lease_ms), int(now)
  local soonest = now + lease_ms -- the earliest lease's end (due.lua)
  for i = 1, #list, step do
    local id = list[i]
    local row, flat = rows[id], flats and flats[id]
    if flat then
      token = lease_plain(id, flat, now, deadline, started, worker, token, first_token, first) + 1
      leased[#leased + 1], leased[#leased + 2] = deadline, id
      jobs[#jobs + 1] = { id, flat }
    elseif row == nil and step == 2 then
      redis.call('ZADD', PENDING, list[i + 1], id)
    elseif row and row.expires_at and expired(row, now) then
      expire_claimed(id, row, now, extra)
      expiring = expiring + 1
    elseif row then
      -- The last attempt's cancel request and worker go (a new worker name
      -- is written over the old one).
      del_fields(id, row, worker == '' and { 'cancel_requested', 'cancel_reason', 'worker', 'lease_expires_at' }
        or { 'cancel_requested', 'cancel_reason', 'lease_expires_at' })
      stat_wait(row, now)
      local ends = deadline
      if row.timeout_ms or row.expires_at then
        ends = int(run_deadline(row, now, now + lease_ms))
        soonest = math.min(soonest, tonumber(ends))
        if row.expires_at and not row.started_at then
          unexpiring(id)
        end
      end
      if row.token or row.outcomes then -- claimed before: past what its row knows
        token = unheld(row, token)
      end
      local fields = { 'state', 'active', 'token', int(token), 'started_at', started,
        'attempts', string.format('%d', (tonumber(row.attempts) or 0) + 1) }
      if worker ~= '' then
        fields[#fields + 1], fields[#fields + 2] = 'worker', worker
      end
      if extra then
        fields[#fields + 1], fields[#fields + 2] = extra, '1'
      end
      set_fields(id, row, fields)
      row.lease_expires_at = ends -- answered, not stored: the lease is the job's active score
      leased[#leased + 1], leased[#leased + 2] = ends, id
      emit('claimed', id, 'active', 'worker', worker)
      jobs[#jobs + 1] = reply_of(id, row)
      token = token + 1
    end
  end
  if #leased > 0 then
    each_chunk(leased, 2, 'ZADD', ACTIVE)
    due.at(soonest, soonest == now + lease_ms and deadline, started)
  end
  if expiring > 0 then
    wake(expiring) -- a claimer cut short by them looks again
  end
  return jobs, token, expiring
end

-- SKIP_EXPIRED is how many expired jobs one claim cancels on its way to
-- jobs it may start, at most: the reaper ends the rest.
local SKIP_EXPIRED = 100

-- append adds the items of more to list.
local function append(list, more)
  for _, item in ipairs(more) do
    list[#list + 1] = item
  end
end

-- flow_claim is claim on a queue with flow control: flow_take chooses the
-- jobs; plan.held and plan.retry_after say which limit cut the claim
-- short, and when it could go on (a wait for a slot counts the leases
-- the claim made, which a job's timeout may cut short).
-- Expired jobs it took instead count against neither limit, and it takes
-- on past them (up to SKIP_EXPIRED).
local function flow_claim(plan, now, count, lease_ms, worker, first)
  local jobs, skipped, token, slot = {}, 0, first, false
  repeat
    local ids, held, retry, groups
    ids, held, retry, groups, slot = flow_take(plan.flow, plan.grouped, count - #jobs, now)
    plan.held, plan.retry_after = held, retry
    if #ids == 0 then
      break
    end
    local rows = {}
    for _, id in ipairs(ids) do
      rows[id] = row_here(id) or false
      if not rows[id] then
        flow_untake(id, groups[id])
      end
    end
    local leased, next_token, expired = lease(ids, 1, rows, now, lease_ms, worker, token, 'flow')
    if plan.flow.rl and #ids > expired then
      rate_add(QUEUE_SCOPE, #ids - expired, now, token) -- random, so apart from other claims' tags
    end
    append(jobs, leased)
    token, skipped = int(next_token), skipped + expired
  until expired == 0 or #jobs >= count or skipped >= SKIP_EXPIRED
  if slot then
    plan.retry_after = math.max(plan.retry_after, slot_wait(now))
  end
  return jobs
end

-- claim_pending is claim's lease of up to count pending jobs, once the due
-- ones are promoted: under flow control those the limits let start.
local function claim_pending(plan, now, count, lease_ms, worker, first)
  if count == 0 then
    return {}
  end
  if plan.flow then
    return flow_claim(plan, now, count, lease_ms, worker, first)
  end
  if RELEASED then -- released by this call's complete, after plan_claim read
    for id, row in pairs(RELEASED) do
      plan.rows[id] = row
    end
  end
  if not plan.pending and #plan.due == 0 and not RELEASED then
    return {} -- plan_claim read nothing pending, and nothing came since: no pop
  end
  local popped = redis.call('ZPOPMIN', PENDING, count)
  if #popped == 0 then
    return {}
  end
  local jobs, token, expired = lease(popped, 2, plan.rows, now, lease_ms, worker, first, nil, plan.flats)
  local skipped = expired
  -- Expired jobs at the head are cancelled, and the claim takes on past
  -- them, rather than answer empty while jobs wait behind them.
  -- (Only on a node known not to be moving the slot, flow_here: the rows
  -- read now must be here, as this call has written.)
  while expired > 0 and FLOW_HERE and #jobs < count and skipped < SKIP_EXPIRED do
    local want = math.min(count - #jobs, SKIP_EXPIRED - skipped)
    if not plan_pending(plan, want) then
      break
    end
    local leased
    leased, token, expired = lease(redis.call('ZPOPMIN', PENDING, want), 2, plan.rows, now, lease_ms,
      worker, int(token), nil, plan.flats)
    append(jobs, leased)
    skipped = skipped + expired
  end
  return jobs
end

-- claim promotes the due jobs of plan, then leases up to count pending
-- jobs for lease_ms (lease), their tokens from first (text) on. A paused
-- queue claims nothing. The due jobs it moved and did not take wake other
-- claimers (a long poll trusts a queue it found empty until a wake,
-- docs/design.md#long-polls). Returns the claimed job replies.
local function claim(plan, now, count, lease_ms, worker, first)
  local promoted = promote(plan.delayed, plan.due)
  if plan.paused then
    if plan.pending or promoted > 0 then
      plan.held, plan.retry_after = 'paused', 1000 -- only a resume frees them
    end
    return {} -- its resume wakes the claimers
  end
  local jobs = claim_pending(plan, now, count, lease_ms, worker, first)
  if promoted > #jobs then
    wake(promoted - #jobs) -- the due jobs this claim moved and did not take are for others
  end
  return jobs
end


-- flow_reply is what claim.lua adds to its reply under flow control, or
-- when a pause held jobs back: how many ms until a claim could go on (-1:
-- no limit cut it short) and the limit that did ('' none, 'paused' the
-- queue's pause). Nothing else.
local function flow_reply(reply, plan)
  if plan and (plan.flow or plan.held) then
    reply[#reply + 1] = plan.retry_after or -1
    reply[#reply + 1] = plan.held or ''
  end
  return reply
end

-- leave_active takes a job out of the active set and drops its lease.
-- Under flow control it frees the job's slot (flow_left), which needs
-- flow_check first.
local function leave_active(id, row)
  redis.call('ZREM', ACTIVE, id)
  del_fields(id, row, { 'lease_expires_at' })
  if row.group or row.flow then
    flow_left(id, row)
  end
end

-- fenced_report reads the row of job id, which its holder under token
-- reports verb about (fail, snooze), and fences it (fence_row): the row when
-- the call goes ahead, else nil and the call's reply (the job as it is, for
-- a repeat of a report that succeeded; an error reply). Reads only.
local function fenced_report(id, token, verb)
  local row = read_row(id)
  local code = fence_row(row, token, verb)
  if code == 'repeat' then
    return nil, leased_reply(id, row)
  elseif code then
    return nil, error_reply(code, id)
  end
  flow_check(row)
  return row
end

-- end_reported ends job id, which has left the active set (leave_active)
-- on its holder's report, in the finished state (cancelled, dead): fields
-- are written with the state and finished_at in one HSET, and its flow
-- control group learns that it finished, and its dedupe key is let go.
local function end_reported(id, row, fields, state, now)
  redis.call('ZADD', set_of(state), int(now), id)
  fields[#fields + 1], fields[#fields + 2] = 'state', state
  fields[#fields + 1], fields[#fields + 2] = 'finished_at', int(now)
  set_fields(id, row, fields)
  flow_finished(id, row)
  dedupe_released(id, row)
  job_ended(id, row, state, now)
end

-- requeue puts job id, which has left the active set (leave_active), back
-- to wait: pending (a grouped job at its place in its group) when delay <=
-- 0, else delayed until now + delay. fields (name, value pairs) are
-- written with its new state and run_at in one HSET. Returns the state.
local function requeue(id, row, fields, delay, now)
  local state = 'delayed'
  if delay <= 0 then
    state = 'pending'
    if row.group then
      group_pending(id, row)
    else
      add_pending(id, tonumber(row.priority or '0'), false)
    end
    del_fields(id, row, { 'run_at' })
    fields[#fields + 1], fields[#fields + 2] = 'ready_at', int(now)
  else
    local run_at = int(now + delay)
    redis.call('ZADD', DELAYED, run_at, id)
    due.at(now + delay)
    if row.group then
      group_count(row.group, 'd', 1)
    end
    fields[#fields + 1], fields[#fields + 2] = 'run_at', run_at
  end
  fields[#fields + 1], fields[#fields + 2] = 'state', state
  set_fields(id, row, fields)
  return state
end

-- complete_plain is complete_one for a plain job, whose row view (fence.lua's
-- read_report) holds what it needs: the same writes, with no row table; its
-- reply is the row read, changed in place.
local function complete_plain(done, id, view, token, has_result, result, now)
  local flat = view.flat
  local code = fence_row(view, token, 'complete')
  if code == 'repeat' then
    local lease = active_lease(id, view.state) -- claimed again since
    return lease and { id, flat, { 'lease_expires_at', lease } } or { id, flat }, true
  elseif code then
    return nil, code
  end
  stat_add(STAT_RUNS, 1)
  stat_add(STAT_RUN_MS, math.max(now - tonumber(view.started_at or now), 0))
  local finished, outcomes = int(now), outcomes_after(view.outcomes, 'complete', token)
  if has_result == '1' then
    redis.call('HSET', job_key(id), 'state', 'completed', 'finished_at', finished, 'outcomes', outcomes,
      'result', result)
    set_in(flat, view.at_result, 'result', result)
  else
    redis.call('HSET', job_key(id), 'state', 'completed', 'finished_at', finished, 'outcomes', outcomes)
  end
  if view.at_lease then
    redis.call('HDEL', job_key(id), 'lease_expires_at')
    flat[view.at_lease] = ''
  end
  set_in(flat, view.at_state, 'state', 'completed')
  set_in(flat, view.at_finished, 'finished_at', finished)
  set_in(flat, view.at_outcomes, 'outcomes', outcomes)
  -- A batch that names the job again sees it as it is now.
  view.state, view.outcomes = 'completed', outcomes
  emit('completed', id, 'completed')
  done[#done + 1] = id
  return { id, flat }
end

-- complete_one finishes the job id held under token, whose declared row
-- the script read (row), storing result when has_result is '1', and adds
-- its id to done, for finish_completed. Returns the job reply and whether
-- the call was a repeat of a complete that succeeded (answered with the
-- job as it is), or nil and an error code. Per job it makes one HSET and
-- one event (and one HDEL for a row that kept a copy of its lease): the
-- sets are changed once per call, by finish_completed. A plain job takes
-- complete_plain.
local function complete_one(done, id, row, token, has_result, result, now)
  if row.lean then
    return complete_plain(done, id, row, token, has_result, result, now)
  end
  local code = fence_row(row, token, 'complete')
  if code == 'repeat' then
    return leased_reply(id, row), true
  elseif code then
    return nil, code
  end
  stat_run(row, now)
  local fields = { 'state', 'completed', 'finished_at', int(now),
    'outcomes', outcomes_after(row.outcomes, 'complete', token) }
  if has_result == '1' then
    fields[#fields + 1], fields[#fields + 2] = 'result', result
  end
  set_fields(id, row, fields)
  del_fields(id, row, { 'lease_expires_at' })
  if row.dedupe_key then
    dedupe_released(id, row)
  end
  if row.group or row.flow then -- the script made flow_check
    flow_left(id, row)
    flow_finished(id, row)
  end
  emit('completed', id, 'completed')
  job_ended(id, row, 'completed', now)
  done[#done + 1] = id
  return reply_of(id, row)
end

-- retention is the trimming of a queue's finished jobs
-- (docs/design.md#retention): the completed, dead and cancelled sets, each
-- by a count (the newest kept) and an age (ms since the job finished, the
-- set's score), as the queue's settings say. Meta's retention holds them,
-- "c,d,x": for each state "count:age_ms" (0: no such limit), or "" when
-- the settings name none for it (settings.lua); then completed keeps the
-- service's EMQ_KEEP_COMPLETED (keep, an ARGV of the scripts that complete),
-- dead and cancelled keep all. The oldest go first, at most STEP for each
-- job finished since the last look, and the reaper trims the rest
-- (trim.lua), so no call does unbounded work.
-- EVERY is how many finishes go by between two looks at a set: a queue
-- keeps at most count + EVERY. They are counted in since, by set, in the
-- library's memory (which lives on between calls: no write per finish);
-- under EVAL, which keeps nothing, every call looks. A restart of Redis
-- forgets the counts: the next look comes at most EVERY finishes later.
local retention = { STEP = 10, EVERY = 8, PLACE = { completed = 1, dead = 2, cancelled = 3 }, since = {} }

-- retention.rule is the {count, age_ms} that keeps state's jobs under
-- text, meta's retention (nil: none), and keep, the service's
-- EMQ_KEEP_COMPLETED; nil when every one is kept.
function retention.rule(text, state, keep)
  local part = text and select(retention.PLACE[state], string.match(text, '^([^,]*),([^,]*),([^,]*)$'))
  if part and part ~= '' then
    local count, age = string.match(part, '^(%d+):(%d+)$')
    count, age = tonumber(count), tonumber(age)
    return (count > 0 or age > 0) and { count, age } or nil
  end
  if state == 'completed' and keep > 0 then
    return { keep, 0 }
  end
end

-- retention.excess is how many of the oldest jobs of set rule lets go
-- now: those beyond its count, and those that finished its age ago.
function retention.excess(set, rule, now)
  local n = 0
  if rule[1] > 0 then
    n = redis.call('ZCARD', set) - rule[1]
  end
  if rule[2] > 0 then
    n = math.max(n, redis.call('ZCOUNT', set, '-inf', int(now - rule[2])))
  end
  return n
end

-- retention.trim deletes the oldest jobs of set (rows and logs) that rule
-- lets go now, at most limit, and returns how many it deleted. It may run
-- after the script's writes, as it never stops the script: rows that are
-- not all here (a migration) are left for a later call.
function retention.trim(set, rule, now, limit)
  local n = math.min(retention.excess(set, rule, now), limit)
  if n <= 0 then
    return 0
  end
  local ids = redis.call('ZRANGE', set, 0, n - 1)
  -- Each row with its log (log_append.lua), in the one DEL. While the slot
  -- migrates Redis refuses the DEL whole unless every key is here, and a
  -- job without a log has none: outside a migration only a lost row, not
  -- a missing log, can make the count fall short of the rows.
  local keys = {}
  for i, id in ipairs(ids) do
    keys[i], keys[#ids + i] = job_key(id), BASE .. 'logs:' .. id
  end
  local deleted = redis.pcall('DEL', unpack(keys))
  if type(deleted) == 'table' or (deleted < #ids and slot_migrating()) then
    return 0 -- some rows are on the other node: they stay listed, and are trimmed later
  end
  redis.call('ZREM', set, unpack(ids))
  return #ids
end

-- retention.finished is told that n jobs just went into state's set (set,
-- declared, with meta and due): every EVERY of them (always, when look)
-- it reads the queue's rule and trims the set, up to STEP for each finish
-- since the last look (and 1000). Under an age rule, the due index then
-- holds the queue by when its oldest job left ages out, so that the
-- reaper trims an idle queue too (settle.lua).
function retention.finished(state, set, n, now, keep, look)
  local since = (retention.since[set] or 0) + n
  if since < retention.EVERY and LIBRARY and not look then
    retention.since[set] = since
    return
  end
  retention.since[set] = nil
  -- Only a queue whose layout says it has settings of its own ("1.0",
  -- prelude.lua's LAYOUT), or that has no layout string (written before
  -- layouts were kept), may have a retention: a plain queue reads no more.
  local own = type(QUEUE_LAYOUT) ~= 'string' or #QUEUE_LAYOUT > 2
  local rule = retention.rule(own and redis.call('HGET', META, 'retention') or nil, state, keep)
  if not rule then
    return
  end
  retention.trim(set, rule, now, math.min(retention.STEP * since, 1000))
  if rule[2] > 0 then
    local oldest = redis.call('ZRANGE', set, 0, 0, 'WITHSCORES')[2]
    if oldest then
      due.at(tonumber(oldest) + rule[2])
    end
  end
end

-- finish_completed moves the jobs complete_one finished (done) from the
-- active set to the completed set, counts them, and trims completed jobs
-- as the queue's retention says (keep: EMQ_KEEP_COMPLETED): a few calls
-- for the whole batch.
local function finish_completed(done, now, keep)
  if #done == 0 then
    return
  end
  local scored = {}
  for _, id in ipairs(done) do
    scored[#scored + 1], scored[#scored + 2] = int(now), id
  end
  each_chunk(done, 1, 'ZREM', ACTIVE)
  each_chunk(scored, 2, 'ZADD', COMPLETED)
  retention.finished('completed', COMPLETED, #done, now, keep)
end

-- plan_delete reads which jobs delete_jobs will delete: up to limit, taking
-- each of sets in turn from its lowest score. Their rows must be here
-- (rows_here). Returns a list of {set, ids}.
local function plan_delete(sets, limit)
  local plan, n = {}, 0
  for _, set in ipairs(sets) do
    if n >= limit then
      break
    end
    local ids = redis.call('ZRANGE', set, 0, limit - n - 1)
    if #ids > 0 then
      rows_here(ids)
      plan[#plan + 1] = { set, ids }
      n = n + #ids
    end
  end
  return plan
end

-- delete_jobs deletes the jobs plan_delete read, rows and all (their logs
-- too, log_append.lua; and the sets of their dependants, batches.lua, when
-- with_deps), and returns how many. The logs are keys no script declares,
-- which most jobs lack: it stops the script (flow_here) when the node
-- moves a slot, so call it before the script's first write or after a
-- flow_here.
local function delete_jobs(plan, with_deps)
  local deleted = 0
  if #plan > 0 then
    flow_here()
  end
  for _, step in ipairs(plan) do
    local keys = {}
    for _, id in ipairs(step[2]) do
      keys[#keys + 1] = job_key(id)
      keys[#keys + 1] = BASE .. 'logs:' .. id
      if with_deps then
        keys[#keys + 1] = BASE .. 'deps:' .. id
      end
    end
    each_chunk(step[2], 1, 'ZREM', step[1])
    each_chunk(keys, 1, 'DEL')
    deleted = deleted + #step[2]
  end
  return deleted
end
