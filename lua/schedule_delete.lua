-- schedule_delete.lua: delete one schedule (schedules.lua). The jobs it
-- enqueued stay.
--
-- KEYS[1] events
-- KEYS[2] schedules
-- KEYS[3] schedule_names
-- KEYS[4] schedule_due
-- KEYS[5] meta
-- ARGV[3] name
-- ARGV[4] actor, ARGV[5] role: who asked, for the "schedule_deleted" event
--
-- Returns 1, or 0 when there was no such schedule (nothing is written).

local name = ARGV[3]
if redis.call('HEXISTS', SCHEDULES, name) == 0 then
  return 0
end
local fields = { name }
for i, f in ipairs(RECORD) do
  fields[i + 1] = schedule_field(name, f)
end
redis.call('HDEL', SCHEDULES, unpack(fields))
redis.call('ZREM', SCHEDULE_NAMES, name)
redis.call('ZREM', SCHEDULE_DUE, name)
emit('schedule_deleted', nil, nil, 'schedule', name, 'actor', ARGV[4], 'role', ARGV[5])
return 1
