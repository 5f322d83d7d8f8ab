-- newjobs.lua: the writing of new jobs, which enqueue.lua and
-- schedule_fire.lua share, so that a scheduled job is written as any
-- other: ids, dedupe keys (admission.lua), groups (flow.lua), batches and
-- dependencies (batches.lua).

-- enqueue_replies are enqueue_jobs' replies, one {created, job} per job in
-- order: rows[i] the row written for a new job i; else the job its dedupe
-- key answered (p.same[i]: a place of the batch, or an {id, row} as now),
-- else the job that has its id, read now.
local function enqueue_replies(list, first, n, rows, p)
  local replies = {}
  for i = 0, n - 1 do
    local same = p and p.same[i]
    if rows[i] then
      replies[#replies + 1] = { 1, rows[i] }
    elseif type(same) == 'number' then
      replies[#replies + 1] = { 0, rows[same] }
    elseif same then
      replies[#replies + 1] = { 0, leased_reply(same[1], same[2]) }
    else
      replies[#replies + 1] = { 0, job_reply(list[first + i * 6]) }
    end
  end
  return replies
end

-- plan_dedupe decides, before any write, what enqueue i (its options opt,
-- its six fields from list[at]) does with its dedupe key, in the batch
-- plan p: p.keyed[key] is the place of the batch's new job with the key,
-- p.held[key] the {id, row} of a job in Redis that holds it. It returns
-- true when the enqueue makes a new job; else p.same[i] is what it answers
-- (a place of the batch, or an {id, row}), and a debounce updates that job:
-- a new one of the batch at once (its fields in list), one in Redis later
-- (p.debounced, for debounce_job).
local function plan_dedupe(p, list, i, at, opt, now)
  local key, mode, window = opt.key, opt.mode, opt.window
  local j = p.keyed[key]
  if j then
    p.same[i] = j
    if mode == 'debounce' then
      -- The batch's own job takes this enqueue's payload, priority and
      -- delay (bounded by the wait, from now: it was created now).
      local jat = p.first + j * 6
      local delay = tonumber(list[at + 3])
      list[jat + 1], list[jat + 2] = list[at + 1], list[at + 2]
      list[jat + 3] = tostring(window and math.min(delay, window) or delay)
    end
    return false
  end
  local held = p.held[key]
  if not held then
    local id = redis.call('HGET', BASE .. 'dedupe', key)
    held = { id, id and row_here(id) }
  end
  if dedupe_live(held[2], key, mode, window, now) then
    p.held[key], p.same[i] = held, held
    if mode == 'debounce' and not held[2].group then
      p.debounced[#p.debounced + 1] = { held, list[at + 1], list[at + 2], tonumber(list[at + 3]), window }
    end
    return false
  end
  p.keyed[key] = i
  if mode == 'debounce' and window then -- its own run time is bounded too
    list[at + 3] = tostring(math.min(tonumber(list[at + 3]), window))
  end
  return true
end

-- debounce_job gives job id (row, pending or delayed, not started) a new
-- payload and priority and moves its run time to now + delay_ms, but never
-- past created_at + window (when given). Returns 1 when it is now pending.
local function debounce_job(id, row, payload, priority, delay_ms, window, now)
  local run_at = now + delay_ms
  if window then
    run_at = math.min(run_at, tonumber(row.created_at) + window)
  end
  redis.call('ZREM', set_of(row.state), id)
  local fields = { 'payload', payload }
  if priority ~= '0' then
    fields[#fields + 1], fields[#fields + 2] = 'priority', priority
  else
    del_fields(id, row, { 'priority' })
  end
  local state = 'delayed'
  if run_at <= now then
    state = 'pending'
    add_pending(id, tonumber(priority), false)
    del_fields(id, row, { 'run_at' })
    fields[#fields + 1], fields[#fields + 2] = 'ready_at', int(now)
  else
    redis.call('ZADD', DELAYED, int(run_at), id)
    due.at(run_at)
    fields[#fields + 1], fields[#fields + 2] = 'run_at', int(run_at)
  end
  fields[#fields + 1], fields[#fields + 2] = 'state', state
  set_fields(id, row, fields)
  emit('debounced', id, state)
  return state == 'pending' and 1 or 0
end

-- admit writes what a new job's options (opt, or nil) add: its row's
-- fields (to row, the list being built) and the queue's indexes (the key it
-- holds, its throttle window, its expiry).
local function admit(id, row, opt, now)
  if opt.key then
    put_field(row, 'dedupe_key', opt.key)
    put_field(row, 'dedupe_mode', opt.mode)
    redis.call('HSET', BASE .. 'dedupe', opt.key, id)
    if opt.mode == 'throttle' then
      redis.call('ZADD', BASE .. 'dedupe_ttl', int(now + opt.window), opt.key)
      due.at(now + opt.window)
      throttles_ended(now, 10)
    end
  end
  if opt.expires then
    local at = int(now + opt.expires)
    put_field(row, 'expires_at', at)
    redis.call('ZADD', BASE .. 'expiring', at, id)
    due.at(now + opt.expires)
  end
  put_field(row, 'timeout_ms', opt.timeout)
end

-- job_defaults gives the n jobs of list (six fields each from first, as
-- enqueue_jobs takes them) the queue's job defaults for what they do not
-- name (docs/design.md#job-defaults): QUEUE_DEFAULTS, which bind read,
-- "max_attempts,backoff,priority,timeout_ms,expires_in_ms,due index" as
-- settings.lua keeps it. A job named priority 0 (which its field cannot
-- tell from none) when named[i] is true; an empty max_attempts or backoff
-- is one not named. timeout_ms and expires_in_ms become admission options
-- (options[i], made as needed); a job with dependencies (deps[i]) gets no
-- expiry, which an enqueue may not give it either. A call that declares
-- no due index (the service took the enqueue for a plain one) indexes a
-- default expiry in the one settings.lua kept (due.lua).
-- Returns options.
local function job_defaults(list, first, n, options, named, deps)
  local max_attempts, backoff, priority, timeout, expires, index =
    string.match(QUEUE_DEFAULTS, '^([^,]*),([^,]*),([^,]*),([^,]*),([^,]*),(.*)$')
  for i = 0, n - 1 do
    local at, opt = first + i * 6, options and options[i]
    if priority ~= '' and list[at + 2] == '0' and not (named and named[i]) then
      list[at + 2] = priority
    end
    if max_attempts ~= '' and list[at + 4] == '' then
      list[at + 4] = max_attempts
    end
    if backoff ~= '' and list[at + 5] == '' then
      list[at + 5] = backoff
    end
    local timed = timeout ~= '' and not (opt and opt.timeout)
    local expiring = expires ~= '' and not (opt and opt.expires) and not (deps and deps[i])
    if timed or expiring then
      options, opt = options or {}, opt or {}
      options[i] = opt
      opt.timeout = timed and timeout or opt.timeout
      opt.expires = expiring and tonumber(expires) or opt.expires
    end
  end
  if expires ~= '' and due.key == nil then
    due.key = index
  end
  return options
end

-- enqueue_jobs adds n jobs, idempotent on id: job i's six fields are
-- list[first + i * 6 ..] (id, payload, priority, delay_ms, max_attempts,
-- backoff: enqueue.lua's ARGV per job, for i from 0), groups[i] its group
-- or nil (groups nil when none has one), options[i] its admission options
-- ({key, mode, window, expires, timeout}, admission.lua) or nil (options
-- nil when none has any), traces[i] its traceparent or nil (traces nil when
-- none has one); extra, when not nil, their deps and batch (batches.lua)
-- and which named a built-in value (named, job_defaults). The queue's job
-- defaults fill in what the jobs do not name (job_defaults). The rows of
-- the jobs must be declared KEYS.
-- Returns {fresh, replies} as enqueue.lua does: fresh is 1 when the queue
-- had enqueued nothing before, replies one {created, job} per job in
-- order. A caller that writes before it calls flow_here first when a job
-- has a group or options. enqueue.lua and schedule_fire.lua call it, so
-- that a scheduled job is written as any other.
--
-- An id that exists wins over a dedupe key; a key held by a job the mode
-- counts (dedupe_live) answers that job, updated when the mode is
-- debounce; within a batch, the first job with a key holds it for the
-- ones after it. Its time is the call's (NOW, when the caller read it: an
-- enqueue's run_at became a delay from it).
local function enqueue_jobs(list, first, n, groups, options, traces, extra)
  local now = NOW or now_ms()
  local deps, batch = extra and extra.deps, extra and extra.batch
  if QUEUE_DEFAULTS then
    options = job_defaults(list, first, n, options, extra and extra.named, deps)
  end
  -- First the ids that are new: not in Redis, and not an earlier job of this
  -- batch (a repeated id is the existing job the second time), and not
  -- answered by a job that holds their dedupe key.
  local new, seen, created_n, pending_n = {}, {}, 0, 0
  local p = options and { first = first, keyed = {}, held = {}, same = {}, debounced = {} }
  for i = 0, n - 1 do
    local at = first + i * 6
    local id = list[at]
    if not seen[id] and redis.call('EXISTS', job_key(id)) == 0 then
      local grouped, opt = groups and groups[i], options and options[i]
      if grouped or opt then
        flow_here()
      end
      if not (opt and opt.key) or plan_dedupe(p, list, i, at, opt, now) then
        new[i] = true
        created_n = created_n + 1
        seen[id] = true
        if not p and not (deps and deps[i]) and (grouped or list[at + 3] == '0' or tonumber(list[at + 3]) <= 0) then
          pending_n = pending_n + 1
        end
      end
    else
      seen[id] = true
    end
  end
  if p then
    -- A debounce within the batch may have moved an earlier job's delay:
    -- the pending ones are counted once the plan is made.
    for i = 0, n - 1 do
      if new[i] and not (deps and deps[i]) and ((groups and groups[i]) or list[first + i * 6 + 3] == '0'
        or tonumber(list[first + i * 6 + 3]) <= 0) then
        pending_n = pending_n + 1
      end
    end
  end
  -- The dependencies of the new jobs: each an earlier job of the queue or
  -- a new one of this call (batches.lua); an unknown one refuses the call.
  local waits
  if deps then
    flow_here() -- the dependencies' rows and keys are not declared
    local new_ids = {}
    for i = 0, n - 1 do
      if new[i] then
        new_ids[list[first + i * 6]] = true
      end
    end
    local refusal
    waits, refusal = batches.plan_dependencies(deps, new, new_ids)
    if not waits then
      return refusal
    end
  end
  if batch then
    flow_here() -- the batch's keys are not declared
    local refusal = batches.open(batch, now)
    if refusal then
      return refusal
    end
  end
  if created_n == 0 and not (p and #p.debounced > 0) then
    if batch then
      batches.counted(batch, {}, now)
    end
    return { 0, enqueue_replies(list, first, n, {}, p), batch and batches.reply(batch.id) }
  end

  -- Then write each new job: one HSET and one event per job; the pending
  -- order for all of them in one draw, the sets in one ZADD each (a grouped
  -- job's own, flow.lua).
  local seq = pending_n > 0 and redis.call('HINCRBY', META, 'seq', pending_n) - pending_n or 0
  local pending, delayed, rows = {}, {}, {}
  for i = 0, n - 1 do
    if new[i] then
      local at = first + i * 6
      local id, payload, priority = list[at], list[at + 1], list[at + 2]
      local delay_ms, max_attempts, backoff = zero_or_number(list[at + 3]), list[at + 4], list[at + 5]
      local group = groups and groups[i]
      -- Only what differs from a default is stored (row.lua), so a small
      -- row stays one listpack; the row written is the reply.
      local state = delay_ms > 0 and 'delayed' or 'pending'
      local wait = waits and waits[i]
      if wait then
        state = 'waiting'
      end
      local row = { 'payload', payload, 'created_at', int(now), 'state', state }
      put_field(row, 'priority', priority ~= '0' and priority)
      put_field(row, 'max_attempts', max_attempts ~= '' and max_attempts)
      put_field(row, 'backoff', backoff ~= '' and backoff)
      if traces then
        put_field(row, 'traceparent', traces[i])
      end
      if options and options[i] then
        admit(id, row, options[i], now)
      end
      if group then
        seq = seq + 1
        put_field(row, 'group', group)
        put_field(row, 'gseq', int(seq))
        group_known(group)
      end
      if batch then
        put_field(row, 'batch_id', batch.id)
      end
      if wait then
        batches.wait_fields(row, wait)
        put_field(row, 'run_at', delay_ms > 0 and int(now + delay_ms))
        redis.call('ZADD', BASE .. 'waiting', int(now), id)
      elseif state == 'delayed' then
        local run_at = int(now + delay_ms)
        put_field(row, 'run_at', run_at)
        delayed[#delayed + 1], delayed[#delayed + 2] = run_at, id
        due.at(now + delay_ms)
        if group then
          group_count(group, 'd', 1)
        end
      elseif group then
        redis.call('ZADD', fkey('gpending'), '0', member_of(group, priority, seq, id))
        pending[#pending + 1], pending[#pending + 2] = int(GROUPED + seq), id
        group_ready(group)
      else
        seq = seq + 1
        pending[#pending + 1], pending[#pending + 2] = int(zero_or_number(priority) * BAND + seq), id
      end
      redis.call('HSET', job_key(id), unpack(row))
      emit('enqueued', id, state)
      rows[i] = { id, row } -- the reply form, the row as written (internal/job's Parse)
    end
  end
  each_chunk(pending, 2, 'ZADD', PENDING)
  each_chunk(delayed, 2, 'ZADD', DELAYED)
  if batch then
    batches.counted(batch, rows, now)
  end
  if deps or batch then
    redis.call('HSET', META, 'linked', '1') -- a drain tells their batches and dependants (batches.lua)
  end
  if waits then
    batches.waited(waits, list, first, rows, now)
  end
  local woken = created_n
  if p then
    for _, d in ipairs(p.debounced) do
      woken = woken + debounce_job(d[1][1], d[1][2], d[2], d[3], d[4], d[5], now)
    end
  end

  -- A queue's first jobs stamp its layout (prelude.lua) and mark it for
  -- the service to list (a queue made by a pause alone, or written before
  -- layouts were kept, is listed again: harmless). A call that declares
  -- the due index (the service's first enqueue of a queue new to its
  -- registry does) has the reaper settle the queue a while later, which
  -- compacts its events (due.lua's SETTLE_NEW_MS).
  local fresh = 0
  if created_n > 0 and not QUEUE_LAYOUT then
    -- (with job defaults or a retention, as settings.lua stamps it:
    -- "<LAYOUT>.0"; the look for a retention is once a queue)
    local own = QUEUE_DEFAULTS or redis.call('HEXISTS', META, 'retention') == 1
    redis.call('HSET', META, 'layout', own and LAYOUT .. '.0' or LAYOUT)
    QUEUE_LAYOUT, fresh = LAYOUT, 1
    if due.key ~= nil then
      due.at(now + due.SETTLE_NEW_MS)
    end
  end
  wake(woken)
  return { fresh, enqueue_replies(list, first, n, rows, p), batch and batches.reply(batch.id) }
end
