-- batch_take.lua: take the done batches whose callback is owed, for a
-- while, so that one dispatcher enqueues each callback (batches.lua).
--
-- KEYS[1] meta
-- KEYS[2] due
-- ARGV[3] how long the dispatcher has each, in ms: until then no other
--         takes it; after, another may (the first one stopped)
-- ARGV[4] at most this many
--
-- Returns the batches' replies (batches.lua's batches.reply), earliest owed
-- first. A batch whose keys are gone is dropped.
-- Errors: TRYAGAIN (flow.lua's flow_here: the keys are not declared).

flow_here()
local now = now_ms()
local due = BASE .. 'batches_due'
local ids = redis.call('ZRANGEBYSCORE', due, '-inf', int(now), 'LIMIT', '0', ARGV[4])
local until_ms = int(now + tonumber(ARGV[3]))
local taken = {}
for _, b in ipairs(ids) do
  local reply = batches.reply(b)
  if reply then
    redis.call('ZADD', due, until_ms, b)
    taken[#taken + 1] = reply
  else
    redis.call('ZREM', due, b)
  end
end
return taken
