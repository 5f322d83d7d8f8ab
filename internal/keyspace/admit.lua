-- admit.lua: take a place for a queue in the registry, within the limit.
--
-- KEYS[1] the registry, <prefix>:queue_names (ZSET, every score 0)
-- ARGV[1] the queue's name
-- ARGV[2] the most queues the registry may hold; 0: no limit
--
-- Returns 1 when the queue was added, 0 when it was there already, and -1
-- when it is not there and the registry is full (nothing written).
-- Errors: none.

if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return 0
end
local most = tonumber(ARGV[2])
if most > 0 and redis.call('ZCARD', KEYS[1]) >= most then
  return -1
end
redis.call('ZADD', KEYS[1], 0, ARGV[1])
return 1
