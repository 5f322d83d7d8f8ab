-- pause.lua: pause or resume a queue's claims.
--
-- KEYS[1] meta
-- KEYS[2] pending
-- KEYS[3] events
-- ARGV[3] "1" to pause, "0" to resume
-- ARGV[4] actor, ARGV[5] role: who asked, for the event
--
-- A paused queue answers claims with nothing; its active jobs go on and
-- can still extend, complete and fail. Resuming wakes waiting claimers.
-- Returns 1 when the flag changed, 0 when it already was so.
-- Errors: none.

local pause = ARGV[3] == '1'
local was = redis.call('HGET', META, 'paused') ~= false
if pause == was then
  return 0
end
if pause then
  redis.call('HSET', META, 'paused', '1')
  emit('paused', nil, nil, 'actor', ARGV[4], 'role', ARGV[5])
else
  redis.call('HDEL', META, 'paused')
  emit('resumed', nil, nil, 'actor', ARGV[4], 'role', ARGV[5])
  wake(redis.call('ZCARD', PENDING))
end
return 1
