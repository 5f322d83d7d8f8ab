-- group_pause.lua: pause or resume one group of a queue (flow.lua).
--
-- KEYS[1] meta
-- KEYS[2] events
-- ARGV[3] group
-- ARGV[4] "1" to pause, "0" to resume
-- ARGV[5] actor, ARGV[6] role: who asked, for the event
--
-- A paused group's jobs are not claimed; its active jobs run on. Pausing
-- a group that has no jobs yet lists it, so that its first jobs wait.
-- Pausing a paused group, or resuming one that is not, changes nothing
-- and emits nothing. A resumed group gets its turn again and waiting
-- claimers are woken.
-- Returns the group (group_info).
-- Errors: TRYAGAIN (flow.lua's flow_here).

flow_here()
local g, flow = ARGV[3], fkey('flow')
if ARGV[4] == '1' then
  if redis.call('HSETNX', flow, 'p:' .. g, '1') == 1 then
    group_known(g)
    emit('group_paused', nil, nil, 'group', g, 'actor', ARGV[5], 'role', ARGV[6])
  end
elseif redis.call('HDEL', flow, 'p:' .. g) == 1 then
  unpark(g)
  emit('group_resumed', nil, nil, 'group', g, 'actor', ARGV[5], 'role', ARGV[6])
  local lo, hi = group_range(g)
  wake(math.min(redis.call('ZLEXCOUNT', fkey('gpending'), lo, hi), 1000))
  local info = group_info(g)
  group_tidy(g)
  return info
end
return group_info(g)
