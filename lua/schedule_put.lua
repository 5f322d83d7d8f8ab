-- schedule_put.lua: create or replace one schedule (schedules.lua).
--
-- KEYS[1] events
-- KEYS[2] schedules
-- KEYS[3] schedule_names
-- KEYS[4] schedule_due
-- KEYS[5] meta
-- ARGV[3] name
-- ARGV[4] the definition, as JSON
-- ARGV[5] its next tick (ms since the epoch), or "" for none (paused, or
--         past its end)
-- ARGV[6] "1" paused, else "0"
-- ARGV[7] actor, ARGV[8] role: who asked, for the "schedule_set" event
--
-- A replaced schedule keeps its history (last_run_at, last_job_id, runs,
-- skipped, missed) and takes the new definition, paused flag and next
-- tick whole; its version is bumped (schedule_bump), so that a fire
-- planned from the old one does nothing.
-- Returns {created (1 new, 0 replaced), record} (schedules.lua).
-- Errors: EMQCHANGED the next tick given has passed (the service reads the
-- clock again and retries); nothing is written.

local name = ARGV[3]
local ms = now_ms()
if schedule_passed(ARGV[5], ms) then
  return redis.error_reply('EMQCHANGED the next tick has passed')
end
local now = int(ms)
local created = redis.call('HEXISTS', SCHEDULES, name) == 0 and 1 or 0
redis.call('HSET', SCHEDULES, name, ARGV[4], schedule_field(name, 'updated_at'), now)
schedule_bump(name)
if created == 1 then
  redis.call('HSET', SCHEDULES, schedule_field(name, 'created_at'), now)
end
if ARGV[6] == '1' then
  redis.call('HSET', SCHEDULES, schedule_field(name, 'paused'), '1')
else
  redis.call('HDEL', SCHEDULES, schedule_field(name, 'paused'))
end
schedule_next(name, ARGV[5])
redis.call('ZADD', SCHEDULE_NAMES, '0', name)
emit('schedule_set', nil, nil, 'schedule', name, 'actor', ARGV[7], 'role', ARGV[8])
return { created, schedule_record(name) }
