-- events.lua: the queue's event stream and the claimers' wake channel.

-- EVENTS_KEPT is about how many entries the event stream keeps (MAXLEN ~):
-- a string, as every constant argument of a hot call is, because Redis
-- formats a Lua number argument with snprintf on every call.
local EVENTS_KEPT = '10000'

-- emit appends one state change to the queue's event stream, in the same
-- atomic step as the change: kind, then the job's id and new state (nil
-- for a queue-level change), then field/value pairs (actor, role, reason,
-- error, count). The entry's id carries the server's time. It counts the
-- change for the queue's history (history.lua).
local function emit(kind, id, state, ...)
  local counter = STAT_OF[kind]
  if counter then
    stat_add(counter, 1)
  end
  local extra = select('#', ...)
  if extra == 0 and id and state then -- a job's change, the common case: no table
    redis.call('XADD', EVENTS, 'MAXLEN', '~', EVENTS_KEPT, '*', 'kind', kind, 'job', id, 'state', state)
    return
  elseif extra == 2 and id and state then -- one field (a claim's worker): no table either
    local name, value = ...
    if value and value ~= '' then
      redis.call('XADD', EVENTS, 'MAXLEN', '~', EVENTS_KEPT, '*', 'kind', kind, 'job', id, 'state', state,
        name, type(value) == 'string' and value or tostring(value))
    else
      redis.call('XADD', EVENTS, 'MAXLEN', '~', EVENTS_KEPT, '*', 'kind', kind, 'job', id, 'state', state)
    end
    return
  end
  local entry = { 'XADD', EVENTS, 'MAXLEN', '~', EVENTS_KEPT, '*', 'kind', kind }
  if id then
    entry[#entry + 1] = 'job'
    entry[#entry + 1] = id
  end
  if state then
    entry[#entry + 1] = 'state'
    entry[#entry + 1] = state
  end
  for i = 1, select('#', ...), 2 do
    local name, value = select(i, ...)
    if value and value ~= '' then
      entry[#entry + 1] = name
      entry[#entry + 1] = tostring(value)
    end
  end
  redis.call(unpack(entry))
end

-- wake wakes n long-polling claimers, on any service replica: jobs became
-- pending (claim them), or delayed (a waiter looks again at its run-at).
local function wake(n)
  if n > 0 then
    redis.call('PUBLISH', WAKE, n)
  end
end
