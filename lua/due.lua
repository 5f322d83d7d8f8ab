-- due.lua: the due index (docs/design.md#the-sweep).
--
-- due  ZSET  the queues that have work for the reaper at a time: member
--            the queue's key base (BASE), score the time (ms, server
--            clock) of its earliest lapsing lease, due delayed job,
--            expiry, throttle window's end, or, for an empty queue, when
--            it is forgotten (settle.lua). One per node, or on a Cluster
--            one per slot (internal/keyspace's due.go): in the queue's slot.
-- The queue's meta keeps "due", the score the index holds for it, so that
-- a call that makes such work writes the index only when its time comes
-- before that score: a claim on a busy queue reads one more meta field
-- (bind's HMGET) and writes nothing. The reaper visits the queues whose
-- time has come and settles each (settle.lua): it writes the queue's true
-- next time, or takes it out of the index. So the score is never later
-- than the queue's next work, and the reaper never visits every queue.

-- due.SETTLE_NEW_MS is how long after its first job a new queue is
-- settled (settle.lua), which compacts its event stream: so a queue whose
-- jobs nobody claims gives back the room Redis took for its events too.
due.SETTLE_NEW_MS = 60000

-- due.OVERDUE_MS is how long past its score a queue may wait for the
-- reaper before a call that makes due work writes the score again: had
-- the index lost the queue, the reaper would have settled it by then.
due.OVERDUE_MS = 60000

-- due.at makes sure the index has the queue at time at (ms) or before.
-- A script that calls it declares meta and due. A claim, which calls it
-- for every lease, also gives at and now as int's text (at_text, now_text):
-- the score bind read, of the same width, at or before at and not past,
-- then covers it with no number read (tonumber is no cheap call).
function due.at(at, at_text, now_text)
  local read = QUEUE_STATE and QUEUE_STATE[5]
  if at_text and read and due.known == nil and #read == #at_text and read <= at_text and read >= now_text then
    return
  end
  local known = due.known
  if known == nil then
    if QUEUE_STATE then
      known = tonumber(QUEUE_STATE[5]) or false -- bind read it
    else
      known = tonumber(redis.call('HGET', META, 'due')) or false
    end
  end
  if known and known <= at and known > (NOW or at) - due.OVERDUE_MS then
    due.known = known
    return
  end
  redis.call('ZADD', due.index(), int(at), BASE)
  redis.call('HSET', META, 'due', int(at))
  due.set(at)
end

-- due.index is the key of the due index this call declares: nil when it
-- declares none.
function due.index()
  if due.key == false then
    return due.node_key()
  end
  return due.key
end

-- due.node_key is the due index of a node outside a Cluster, whose name
-- the service does not pass to a script whose last KEYS it would be
-- (lua/run.go): "<prefix>:due", the prefix read from BASE.
function due.node_key()
  return string.match(BASE, '^(.*):{[^{]*}:$') .. ':due'
end

-- due.set notes score (false: none) as the index's for this call's queue.
function due.set(score)
  due.known = score
end
