-- queues.lua: what deleting a whole queue deletes (obliterate.lua, and
-- settle.lua when it forgets an empty queue).

-- queue_deleted deletes every key of the queue but its job rows and its
-- batches (batches.deleted): the meta hash, the state sets, the event
-- stream, the reapers' turn, the flow control keys (flow.lua), the
-- admission keys (admission.lua), the push target and its errors
-- (push.lua), the schedules (schedules.lua) and the history (history.lua);
-- and takes the queue out of the due index (due.lua) and the library's
-- memory. The caller has made sure with flow_here that the keys are here.
local function queue_deleted()
  redis.call('DEL', META, BASE .. 'pending', BASE .. 'active', BASE .. 'delayed', BASE .. 'completed',
    BASE .. 'dead', BASE .. 'cancelled', BASE .. 'events', BASE .. 'reaper')
  for _, state in ipairs({ 'completed', 'dead', 'cancelled' }) do
    retention.since[BASE .. state] = nil -- the library's count of its finishes (lifecycle.lua)
  end
  for _, names in ipairs({ FLOW_KEYS, ADMISSION_KEYS, PUSH_KEYS, SCHEDULE_KEYS }) do
    for _, name in ipairs(names) do
      redis.call('DEL', fkey(name))
    end
  end
  redis.call('DEL', fkey('stats'))
  stats_forget(fkey('stats')) -- and what the library holds of it (history.lua)
  if due.key ~= nil then
    redis.call('ZREM', due.index(), BASE)
  end
  due.set(false)
end
