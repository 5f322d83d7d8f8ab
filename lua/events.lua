-- events.lua: the queue's event stream and the claimers' wake channel.

-- EVENTS_KEPT is about how many entries the event stream keeps (MAXLEN ~).
local EVENTS_KEPT = 10000

-- emit appends one state change to the queue's event stream, in the same
-- atomic step as the change: kind, then the job's id and new state (nil
-- for a queue-level change), then field/value pairs (actor, role, reason,
-- error, count). The entry's id carries the server's time.
local function emit(kind, id, state, ...)
  local entry = { 'XADD', EVENTS, 'MAXLEN', '~', EVENTS_KEPT, '*', 'kind', kind }
  if id then
    entry[#entry + 1] = 'job'
    entry[#entry + 1] = id
  end
  if state then
    entry[#entry + 1] = 'state'
    entry[#entry + 1] = state
  end
  local extra = { ... }
  for i = 1, #extra, 2 do
    if extra[i + 1] and extra[i + 1] ~= '' then
      entry[#entry + 1] = extra[i]
      entry[#entry + 1] = tostring(extra[i + 1])
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
