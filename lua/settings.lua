-- settings.lua: set a queue's settings: flow control (flow.lua), job
-- defaults (newjobs.lua's job_defaults) and retention (lifecycle.lua's
-- retention).
--
-- KEYS[1] meta
-- KEYS[2] pending
-- KEYS[3] events
-- KEYS[4] due
-- ARGV[3] the settings as flow.lua keeps them, "c,rl,rw,gc,grl,grw,order"
--         (an empty entry for no limit), or "" for none at all
-- ARGV[4] the settings as JSON, for the "settings" event
-- ARGV[5] actor, ARGV[6] role: who asked, for the event
-- ARGV[7] the job defaults, "max_attempts,backoff,priority,timeout_ms,
--         expires_in_ms" (an empty entry for none; backoff as a row keeps
--         it), or "" for none at all
-- ARGV[8] the retention, "c,d,x" as lifecycle.lua's retention reads it,
--         or "" for none at all
--
-- The settings replace the old ones whole. Every group a limit held back
-- gets its turn again, so that the next claim looks at it under the new
-- settings, and waiting claimers are woken to look again. The job
-- defaults are kept with the name of the due index this call was given
-- (due.lua), for an enqueue whose default expiry must be indexed when the
-- service did not pass the index (one it took for a plain enqueue), and
-- the queue's layout says whether it has defaults or a retention ("1.0"
-- or "1", prelude.lua's LAYOUT), so that an enqueue or a finish reads
-- them only then. A retention has the
-- reaper look at the queue now, for the jobs it already lets go.
-- Returns 1.
-- Errors: TRYAGAIN (flow.lua's flow_here).

flow_here()
local fields = { flow = ARGV[3], defaults = ARGV[7] ~= '' and ARGV[7] .. ',' .. due.index() or '', retention = ARGV[8] }
for _, name in ipairs({ 'flow', 'defaults', 'retention' }) do
  if fields[name] == '' then
    redis.call('HDEL', META, name)
  else
    redis.call('HSET', META, name, fields[name])
  end
end
-- A queue that has a layout says in it whether it has job defaults or a
-- retention (prelude.lua's LAYOUT); one that has none yet gets it at its
-- first enqueue (newjobs.lua), which looks for them then.
local layout = redis.call('HGET', META, 'layout')
if layout then
  redis.call('HSET', META, 'layout', tonumber(layout) .. ((ARGV[7] ~= '' or ARGV[8] ~= '') and '.0' or ''))
end
if ARGV[8] ~= '' then
  due.at(now_ms())
end
for _, g in ipairs(redis.call('ZRANGE', fkey('parked'), '0', '-1')) do
  unpark(g)
end
emit('settings', nil, nil, 'settings', ARGV[4], 'actor', ARGV[5], 'role', ARGV[6])
wake(math.min(redis.call('ZCARD', PENDING), 1000))
return 1
