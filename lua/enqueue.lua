-- enqueue.lua: add one or more jobs, idempotent on id.
--
-- KEYS[1] meta
-- KEYS[2] pending
-- KEYS[3] delayed
-- KEYS[4] events
-- KEYS[5..] rows, one per job, in ARGV order
-- ARGV[3] n, the number of jobs; then 6 ARGV per job:
--         id, payload (JSON text), priority (0-9), delay_ms (0 = now),
--         max_attempts ("" for DEFAULT_MAX_ATTEMPTS), backoff
--         ("type:delay_ms:max_delay_ms" or "");
--         then g, the number of jobs with a group, and 2 ARGV for each:
--         the job's place in the list (0 for the first), its group
--         (so that a batch without groups pays nothing per job for them)
--
-- Returns {fresh, replies}: fresh is 1 when the queue had enqueued nothing
-- before (a new queue, or one obliterated), so that the service adds it to
-- the queues set; replies has one reply per job, in order: {created, job}
-- where created is 1 for a new job and 0 when a job with that id already
-- exists (it is returned as it is, untouched). A new job is pending, or
-- delayed until now + delay_ms. Wakes one claimer per new job: for a
-- delayed job, so that a waiting claimer learns its run-at and looks again
-- when it comes due. A grouped job takes its place in its group
-- (flow.lua): its gseq is drawn whether it is pending or delayed.
-- Errors: TRYAGAIN (flow.lua's flow_here, for grouped jobs only); none
-- else (the service validates every argument first).

local n = tonumber(ARGV[3])

-- The jobs' groups, by place: nil when none has one.
local groups
local g_at = 4 + n * 6
for k = 0, tonumber(ARGV[g_at]) - 1 do
  groups = groups or {}
  groups[tonumber(ARGV[g_at + 1 + 2 * k])] = ARGV[g_at + 2 + 2 * k]
end
return enqueue_jobs(ARGV, 4, n, groups)
