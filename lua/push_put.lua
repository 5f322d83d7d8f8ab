-- push_put.lua: set a queue's push target, or take it away (push.lua).
--
-- KEYS[1] meta
-- KEYS[2] events
-- KEYS[3] push
-- ARGV[3] url, "" to take the target away (then ARGV[4..7] are "")
-- ARGV[4] timeout_ms, ARGV[5] concurrency, ARGV[6] lease_ms
-- ARGV[7] secret, "" for none
-- ARGV[8] actor, ARGV[9] role: who asked, for the event
-- ARGV[10] headers sent with every delivery, a JSON object; "" for none
--
-- A target replaces the old one whole, its secret and headers too. The
-- "push_set" event names the url and who asked, never the secret nor the
-- headers; "push_deleted" who
-- took it away (only when there was one). The delivery errors kept stay:
-- they say what happened before.
-- Returns {existed (0/1), updated_at (ms; 0 once taken away)}.

local existed = redis.call('EXISTS', BASE .. 'push')
if ARGV[3] == '' then
  if existed == 1 then
    redis.call('DEL', BASE .. 'push')
    emit('push_deleted', nil, nil, 'actor', ARGV[8], 'role', ARGV[9])
  end
  return { existed, 0 }
end
redis.call('DEL', BASE .. 'push')
local now = int(now_ms())
local fields = { 'url', ARGV[3], 'timeout_ms', ARGV[4], 'concurrency', ARGV[5], 'lease_ms', ARGV[6], 'updated_at', now }
if ARGV[7] ~= '' then
  fields[#fields + 1], fields[#fields + 2] = 'secret', ARGV[7]
end
if ARGV[10] ~= '' then
  fields[#fields + 1], fields[#fields + 2] = 'headers', ARGV[10]
end
redis.call('HSET', BASE .. 'push', unpack(fields))
emit('push_set', nil, nil, 'url', ARGV[3], 'actor', ARGV[8], 'role', ARGV[9])
return { existed, tonumber(now) }
