-- schedule_due.lua: read the schedules whose next tick has come
-- (schedules.lua), for a replica to plan their fires. It writes nothing.
--
-- KEYS[1] schedules
-- KEYS[2] schedule_due
-- ARGV[3] limit: at most this many records
--
-- Returns {now, earliest, records}: the server's time (ms), the earliest
-- next tick of any schedule (-1: none will fire), and the records of up
-- to limit due schedules, earliest first.

local now = now_ms()
local records = {}
for _, name in ipairs(redis.call('ZRANGEBYSCORE', SCHEDULE_DUE, '-inf', int(now), 'LIMIT', '0', ARGV[3])) do
  records[#records + 1] = schedule_record(name)
end
return { now, schedule_earliest(), records }
