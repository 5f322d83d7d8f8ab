-- enqueue.lua: add one or more jobs, idempotent on id.
--
-- KEYS[1] meta
-- KEYS[2] pending
-- KEYS[3] delayed
-- KEYS[4] events
-- KEYS[5] stats
-- KEYS[6..] rows, one per job, in ARGV order
-- (enqueue_later, lua.go, is this script with due declared before the rows:
-- the service calls it for jobs that make work for the reaper, due.lua)
-- ARGV[3] n, the number of jobs; then 6 ARGV per job:
--         id, payload (JSON text), priority (0-9), delay_ms (0 = now),
--         max_attempts ("" for none named: the queue's default, else
--         DEFAULT_MAX_ATTEMPTS), backoff ("type:delay_ms:max_delay_ms" or
--         "" for none named); what a job does not name it takes from the
--         queue's job defaults (newjobs.lua's job_defaults);
--         then g, the number of jobs with a group, and 2 ARGV for each:
--         the job's place in the list (0 for the first), its group
--         (so that a batch without groups pays nothing per job for them);
--         then o, the number of jobs with admission options, and 6 ARGV
--         for each: its place, dedupe key ("" none), dedupe mode, the
--         mode's window in ms (ttl_ms for throttle, max_wait_ms for
--         debounce; "" none), expires_in_ms ("" none), timeout_ms ("" none)
--         (admission.lua);
--         then, only when a call has them, tagged sections, in any order:
--         "t", the number of jobs with a traceparent, and 2 ARGV for each:
--           its place, the W3C traceparent its enqueue sent (kept in the
--           row for its worker, docs/design.md#traces);
--         "d", the number of jobs with dependencies, and for each: its
--           place, "cancel" or "run" (on_dependency_failure), the number of
--           its dependencies and their ids (batches.lua);
--         "b", the batch the new jobs join, 6 ARGV: its id, "new" (make it)
--           or "add" (an open one), "1" when a new one stays open for more,
--           its callback's queue ("" the batch's), payload (JSON text, ""
--           none) and when ("complete" or "success");
--         "r", the number of jobs with a run time, and 2 ARGV for each:
--           its place, its run_at in ms since the epoch; its delay_ms is
--           then the time from the server's now to it (0 when it has
--           passed), so that the job runs at it on the server's clock;
--         "n", the number of jobs whose enqueue named priority 0, and the
--           place of each: the queue's default priority does not replace
--           it (newjobs.lua's job_defaults), as it does an absent one
--
-- Returns {fresh, replies, batch}: fresh is 1 when the queue had enqueued nothing
-- before (a new queue, or one obliterated), so that the service adds it to
-- the queues set; replies has one reply per job, in order: {created, job}
-- where created is 1 for a new job and 0 when a job with that id already
-- exists (it is returned as it is, untouched) or when a job holding its
-- dedupe key answers it (untouched, or updated for a debounce). A new job is pending, or
-- delayed until now + delay_ms. Wakes one claimer per new job: for a
-- delayed job, so that a waiting claimer learns its run-at and looks again
-- when it comes due. A grouped job takes its place in its group
-- (flow.lua): its gseq is drawn whether it is pending or delayed. A job
-- with dependencies waits (state waiting) until each has ended; batch is
-- the batch's reply (batches.lua's batches.reply) when the call names one,
-- and a "new" batch that exists already is answered as it is, with no job
-- enqueued: {0, {}, batch, 1}.
-- Errors: TRYAGAIN (flow.lua's flow_here, for jobs with a group, options
-- or dependencies, and here.lua's row_here for the job holding a key);
-- EMQINVALID a dependency that is neither a job of the queue nor one of
-- the call; EMQGONE no such batch, EMQSTATE the batch is committed (mode
-- "add"); none else (the service validates every argument first).

local n = tonumber(ARGV[3])

-- The jobs' groups, by place: nil when none has one.
local groups
local g_at = 4 + n * 6
local g_n = tonumber(ARGV[g_at])
for k = 0, g_n - 1 do
  groups = groups or {}
  groups[tonumber(ARGV[g_at + 1 + 2 * k])] = ARGV[g_at + 2 + 2 * k]
end
-- Their admission options, by place: nil when none has any (a string
-- test, so that a plain enqueue pays no number parse for them).
local options
local o_at = g_at + 1 + 2 * g_n
if ARGV[o_at] ~= '0' then
  for k = 0, tonumber(ARGV[o_at]) - 1 do
    local at = o_at + 1 + 6 * k
    options = options or {}
    options[tonumber(ARGV[at])] = {
      key = ARGV[at + 1] ~= '' and ARGV[at + 1] or nil, mode = ARGV[at + 2],
      window = tonumber(ARGV[at + 3]), expires = tonumber(ARGV[at + 4]),
      timeout = ARGV[at + 5] ~= '' and ARGV[at + 5] or nil,
    }
  end
end
-- The tagged sections (traceparents, dependencies, the batch, the named
-- built-in values), by place: nil when the call has none.
local traces, deps, batch, named
local at = o_at + 1 + (options and 6 * tonumber(ARGV[o_at]) or 0)
while ARGV[at] do
  local tag = ARGV[at]
  local count = tag ~= 'b' and tonumber(ARGV[at + 1]) -- a batch's section has no count
  if tag == 't' then
    traces, at = {}, at + 2
    for _ = 1, count do
      traces[tonumber(ARGV[at])] = ARGV[at + 1]
      at = at + 2
    end
  elseif tag == 'd' then
    deps, at = {}, at + 2
    for _ = 1, count do
      local m = tonumber(ARGV[at + 2])
      deps[tonumber(ARGV[at])] = { ARGV[at + 1], unpack(ARGV, at + 3, at + 2 + m) }
      at = at + 3 + m
    end
  elseif tag == 'b' then
    batch = { id = ARGV[at + 1], mode = ARGV[at + 2], open = ARGV[at + 3],
      callback_queue = ARGV[at + 4], callback_payload = ARGV[at + 5], callback_when = ARGV[at + 6] }
    at = at + 7
  elseif tag == 'r' then
    local now = NOW or now_ms()
    at = at + 2
    for _ = 1, count do
      -- The job's delay_ms, its fourth ARGV, becomes the time to its run_at.
      ARGV[4 + tonumber(ARGV[at]) * 6 + 3] = int(math.max(tonumber(ARGV[at + 1]) - now, 0))
      at = at + 2
    end
  elseif tag == 'n' then
    named, at = {}, at + 2
    for _ = 1, count do
      named[tonumber(ARGV[at])] = true
      at = at + 1
    end
  else
    return redis.error_reply('ERR enqueue.lua: unknown section ' .. tag)
  end
end
if batch then
  flow_here() -- the batch's keys are not declared
end
if batch and batch.mode == 'new' and redis.call('EXISTS', batches.key(batch.id)) == 1 then
  return { 0, {}, batches.reply(batch.id), 1 }
end
return enqueue_jobs(ARGV, 4, n, groups, options, traces,
  (deps or batch or named) and { deps = deps, batch = batch, named = named })
