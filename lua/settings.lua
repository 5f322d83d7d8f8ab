-- settings.lua: set a queue's flow control settings (flow.lua).
--
-- KEYS[1] meta
-- KEYS[2] pending
-- KEYS[3] events
-- ARGV[3] the settings as flow.lua keeps them, "c,rl,rw,gc,grl,grw,order"
--         (an empty entry for no limit), or "" for none at all
-- ARGV[4] the settings as JSON, for the "settings" event
-- ARGV[5] actor, ARGV[6] role: who asked, for the event
--
-- The settings replace the old ones whole. Every group a limit held back
-- gets its turn again, so that the next claim looks at it under the new
-- settings, and waiting claimers are woken to look again.
-- Returns 1.
-- Errors: TRYAGAIN (flow.lua's flow_here).

flow_here()
if ARGV[3] == '' then
  redis.call('HDEL', META, 'flow')
else
  redis.call('HSET', META, 'flow', ARGV[3])
end
for _, g in ipairs(redis.call('ZRANGE', fkey('parked'), '0', '-1')) do
  unpark(g)
end
emit('settings', nil, nil, 'settings', ARGV[4], 'actor', ARGV[5], 'role', ARGV[6])
wake(math.min(redis.call('ZCARD', PENDING), 1000))
return 1
