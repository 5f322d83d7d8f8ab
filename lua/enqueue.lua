-- enqueue.lua: add one or more jobs, idempotent on id.
--
-- KEYS[1] meta
-- KEYS[2] pending
-- KEYS[3] delayed
-- KEYS[4] events
-- KEYS[5] stats
-- KEYS[6..] rows, one per job, in ARGV order
-- ARGV[3] n, the number of jobs; then 6 ARGV per job:
--         id, payload (JSON text), priority (0-9), delay_ms (0 = now),
--         max_attempts ("" for DEFAULT_MAX_ATTEMPTS), backoff
--         ("type:delay_ms:max_delay_ms" or "");
--         then g, the number of jobs with a group, and 2 ARGV for each:
--         the job's place in the list (0 for the first), its group
--         (so that a batch without groups pays nothing per job for them);
--         then o, the number of jobs with admission options, and 6 ARGV
--         for each: its place, dedupe key ("" none), dedupe mode, the
--         mode's window in ms (ttl_ms for throttle, max_wait_ms for
--         debounce; "" none), expires_in_ms ("" none), timeout_ms ("" none)
--         (admission.lua);
--         then, only when a job has one, t, the number of jobs with a
--         traceparent, and 2 ARGV for each: its place, the W3C traceparent
--         its enqueue sent (kept in the row for its worker,
--         docs/design.md#traces)
--
-- Returns {fresh, replies}: fresh is 1 when the queue had enqueued nothing
-- before (a new queue, or one obliterated), so that the service adds it to
-- the queues set; replies has one reply per job, in order: {created, job}
-- where created is 1 for a new job and 0 when a job with that id already
-- exists (it is returned as it is, untouched) or when a job holding its
-- dedupe key answers it (untouched, or updated for a debounce). A new job is pending, or
-- delayed until now + delay_ms. Wakes one claimer per new job: for a
-- delayed job, so that a waiting claimer learns its run-at and looks again
-- when it comes due. A grouped job takes its place in its group
-- (flow.lua): its gseq is drawn whether it is pending or delayed.
-- Errors: TRYAGAIN (flow.lua's flow_here, for jobs with a group or
-- options, and here.lua's row_here for the job holding a key); none
-- else (the service validates every argument first).

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
-- Their traceparents, by place: nil when none has one.
local traces
local t_at = o_at + 1 + (options and 6 * tonumber(ARGV[o_at]) or 0)
if ARGV[t_at] then
  traces = {}
  for k = 0, tonumber(ARGV[t_at]) - 1 do
    traces[tonumber(ARGV[t_at + 1 + 2 * k])] = ARGV[t_at + 2 + 2 * k]
  end
end
return enqueue_jobs(ARGV, 4, n, groups, options, traces)
