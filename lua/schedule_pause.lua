-- schedule_pause.lua: pause or resume one schedule (schedules.lua).
--
-- KEYS[1] events
-- KEYS[2] schedules
-- KEYS[3] schedule_due
-- KEYS[4] meta
-- ARGV[3] name
-- ARGV[4] "1" pause, "0" resume
-- ARGV[5] on resume: the next tick (ms), or "" for none (past its end)
-- ARGV[6] on resume: the version the next tick was computed from
-- ARGV[7] actor, ARGV[8] role: who asked, for the event
--
-- A paused schedule is out of the due set and fires nothing; resumed, it
-- fires from its next tick after now (missed ticks are not caught up).
-- Pausing a paused schedule, or resuming a running one, changes nothing
-- and writes no event.
-- Returns the record (schedules.lua).
-- Errors: EMQGONE no such schedule; EMQCHANGED the schedule's version is
-- no longer the one given, or the next tick given has passed (the service
-- reads them again and retries).

local name = ARGV[3]
local record = schedule_record(name)
if not record then
  return redis.error_reply('EMQGONE no such schedule')
end
local pause = ARGV[4] == '1'
if pause == (record[4] == '1') then
  return record
end
local now = now_ms()
if not pause and (record[3] ~= ARGV[6] or schedule_passed(ARGV[5], now)) then
  return redis.error_reply('EMQCHANGED the schedule changed meanwhile')
end
schedule_bump(name)
redis.call('HSET', SCHEDULES, schedule_field(name, 'updated_at'), int(now))
if pause then
  redis.call('HSET', SCHEDULES, schedule_field(name, 'paused'), '1')
  schedule_next(name, '')
  emit('schedule_paused', nil, nil, 'schedule', name, 'actor', ARGV[7], 'role', ARGV[8])
else
  redis.call('HDEL', SCHEDULES, schedule_field(name, 'paused'))
  schedule_next(name, ARGV[5])
  emit('schedule_resumed', nil, nil, 'schedule', name, 'actor', ARGV[7], 'role', ARGV[8])
end
return schedule_record(name)
