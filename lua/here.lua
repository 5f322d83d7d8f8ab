-- here.lua: what keeps a script whole while its queue's slot migrates
-- (docs/design.md#resharding).
--
-- Redis Cluster moves a slot key by key. Before it runs a script it checks
-- the script's declared KEYS: all on this node, it runs here; all gone to
-- the node taking the slot, it answers ASK (go-redis follows it there);
-- some here and some gone, or some not existing yet, TRYAGAIN. It does not
-- check the job rows a script finds through a set. So a script reads every
-- row it will write before its first write, through the functions below,
-- and when a row is not where its set says (on the node handing the slot
-- over, a row that has left; on the node taking it, one that has not come
-- yet) it stops with a TRYAGAIN error, having written nothing. The service
-- answers that 503 with Retry-After, and the caller tries again.

-- try_again stops the script with a TRYAGAIN error reply. Call it only
-- before the script's first write.
local function try_again(what)
  error({ err = 'TRYAGAIN the queue\'s slot is migrating (' .. what .. ')' })
end

-- slot_migrating reports whether this node may be handing over or taking
-- in the slot of the queue's keys: whether it is moving any slot (CLUSTER
-- NODES shows "[slot->-node]" or "[slot-<-node]" on its own line); never
-- outside a Cluster. It is asked only when a row is missing, off the hot
-- path, and it fails closed: when CLUSTER NODES is refused (an ACL without
-- +cluster|nodes) a missing row is taken for one on its way, never for a
-- lost one, so that no job is dropped that a migration would bring.
--
-- A server outside a Cluster is remembered as one (the library's state
-- lives as long as the server does, and a server does not join a Cluster
-- without a restart), so that flow control, which asks on every call, asks
-- it once.
local not_cluster = false
local function slot_migrating()
  if not_cluster then
    return false
  end
  local nodes = redis.pcall('CLUSTER', 'NODES')
  if type(nodes) == 'table' and nodes.err then
    not_cluster = string.find(nodes.err, 'cluster support disabled', 1, true) ~= nil
    return not not_cluster
  end
  local mine = string.match(nodes, '[^\n]*myself[^\n]*') or ''
  return string.find(mine, '[', 1, true) ~= nil
end

-- not_here reports whether a call's reply is Redis refusing a key of a
-- migrating slot that this node no longer (or does not yet) hold: "non
-- local key" (Redis 7.0), or keys "accessed during rehashing of the slot"
-- (later versions). Any other error is raised as it is.
local function not_here(reply)
  if type(reply) == 'table' and reply.err then
    if string.find(reply.err, 'non local key', 1, true) or string.find(reply.err, 'rehashing', 1, true) then
      return true
    end
    error(reply)
  end
  return false
end

-- flat_here reads the row of job id, found through a set, as HGETALL
-- answers it: nil when there is no such job (a row lost outside any
-- migration: the caller drops the id), and it stops the script
-- (try_again) when the row is on the other node of a migration.
local function flat_here(id)
  local flat = redis.pcall('HGETALL', job_key(id))
  if not_here(flat) then
    try_again('job ' .. id)
  end
  if #flat == 0 then
    if slot_migrating() then
      try_again('job ' .. id)
    end
    return nil
  end
  return flat
end

-- row_here is flat_here as a table (row.lua's read_row).
local function row_here(id)
  local flat = flat_here(id)
  if not flat then
    return nil
  end
  return row_of(flat)
end

-- rows_here is true when the rows of ids, found through a set, are all on
-- this node (or the ones missing are lost outside any migration), and
-- stops the script (try_again) when some are on the other node.
local function rows_here(ids)
  local keys = {}
  for i, id in ipairs(ids) do
    keys[i] = job_key(id)
  end
  local found = 0
  for first = 1, #keys, CHUNK do
    local n = redis.pcall('EXISTS', unpack(keys, first, math.min(first + CHUNK - 1, #keys)))
    if not_here(n) then
      try_again('jobs')
    end
    found = found + n
  end
  if found < #keys and slot_migrating() then
    try_again('jobs')
  end
end

-- call_here runs a command on a key the script did not declare, because
-- what it does with it may be skipped (a read of a set such as
-- ZRANGEBYSCORE, or a write after the script's first one that is left
-- undone): its reply, or false when the key is on the other node of a
-- migration. On the node taking the slot, a key that has not come yet
-- reads as empty.
local function call_here(...)
  local reply = redis.pcall(...)
  if not_here(reply) then
    return false
  end
  return reply
end
