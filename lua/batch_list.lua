-- batch_list.lua: one page of a queue's batches, newest first, with a
-- stable cursor (batches.lua).
--
-- KEYS[1] batches
-- KEYS[2] batches_created
-- KEYS[3] meta
-- ARGV[3] cursor score (a created_at, ms), "" for the first page
-- ARGV[4] cursor id: the page starts strictly after (score, id)
-- ARGV[5] limit
--
-- Pages are ordered by (created_at, id), highest first, the index's own
-- order, and a cursor is the last (created_at, id) given, so no batch is
-- given twice or skipped across pages while others are made: a new batch
-- comes before the first page. An entry whose batch has expired (the
-- reaper has not taken it out yet) is passed over.
-- It writes nothing, but where the index does not hold what batches
-- holds (batches made by a release before the index, or by one still
-- running beside this one): then it takes one step of indexing batches
-- anew first, REINDEX_STEP of them, so that no listing holds Redis long
-- however many batches the queue keeps; until the walk is over a page
-- may miss a batch the index does not hold yet.
-- Returns {next_score, next_id, batches}, each batch as batches.reply;
-- next_score is "" on the last page.
-- Errors: TRYAGAIN (here.lua).

local index = BASE .. 'batches_created'
local cursor, after, limit = ARGV[3], ARGV[4], tonumber(ARGV[5])

-- REINDEX_STEP bounds the members one listing's reindex step reads.
local REINDEX_STEP = 1000

-- reindex_step takes the next step of making batches_created hold
-- batches' members, each scored by its created_at: first a walk of
-- batches by rank, adding each member whose keys are there (one whose
-- keys are gone is left out), then a walk of the index, taking out each
-- member batches no longer holds. The walk's place is kept in meta's
-- batches_reindex ("b:<rank>" or "i:<rank>"), absent when no walk is
-- under way. Its writes are right whatever follows, so a try_again
-- after them leaves nothing wrong: the next call takes the step again.
local function reindex_step()
  local phase, from = string.match(redis.call('HGET', META, 'batches_reindex') or 'b:0', '^(%a):(%d+)$')
  from = tonumber(from)
  local at
  if phase == 'b' then
    local ids = redis.call('ZRANGE', BASE .. 'batches', from, from + REINDEX_STEP - 1)
    for _, b in ipairs(ids) do
      local created = call_here('HGET', batches.key(b), 'created_at')
      if created == false then
        try_again('batch ' .. b)
      end
      if created then
        redis.call('ZADD', index, created, b)
      end
    end
    at = #ids < REINDEX_STEP and 'i:0' or 'b:' .. (from + #ids)
  else
    local ids = redis.call('ZRANGE', index, from, from + REINDEX_STEP - 1)
    local stale = {}
    for _, b in ipairs(ids) do
      if not redis.call('ZSCORE', BASE .. 'batches', b) then
        stale[#stale + 1] = b
      end
    end
    each_chunk(stale, 1, 'ZREM', index)
    at = #ids == REINDEX_STEP and 'i:' .. (from + #ids - #stale) or nil
  end
  if at then
    redis.call('HSET', META, 'batches_reindex', at)
  else
    redis.call('HDEL', META, 'batches_reindex')
  end
end

if redis.call('ZCARD', BASE .. 'batches') ~= redis.call('ZCARD', index)
  or redis.call('HEXISTS', META, 'batches_reindex') == 1 then
  reindex_step()
end

-- reply is batch b's reply (batches.reply), read where the index found
-- it; nil when it has expired. It stops the script (try_again) when the
-- batch may be on the other node of a migration.
local function reply(b)
  local fields = call_here('HMGET', batches.key(b), unpack(batches.FIELDS))
  if fields == false or (not fields[1] and slot_migrating()) then
    try_again('batch ' .. b)
  end
  if not fields[1] then
    return nil
  end
  table.insert(fields, 1, b)
  return fields
end

-- The page holds up to limit + 1 batches: one more than limit says that
-- there is a next page.
local page, scores = {}, {}
local function take(members)
  for i = 1, #members, 2 do
    if #page > limit then
      return
    end
    local r = reply(members[i])
    if r then
      page[#page + 1] = r
      scores[#page] = members[i + 1]
    end
  end
end

local from = '+inf'
if cursor ~= '' then
  -- Batches of the cursor's own score come in reverse id order; take
  -- those past the cursor's id, then the scores below.
  local ties = redis.call('ZREVRANGEBYSCORE', index, cursor, cursor, 'WITHSCORES')
  local past = {}
  for i = 1, #ties, 2 do
    if ties[i] < after then
      past[#past + 1] = ties[i]
      past[#past + 1] = ties[i + 1]
    end
  end
  take(past)
  from = '(' .. cursor
end
local offset = 0
while #page <= limit do
  local chunk = limit + 1 - #page
  local members = redis.call('ZREVRANGEBYSCORE', index, from, '-inf', 'WITHSCORES', 'LIMIT', offset, chunk)
  take(members)
  if #members < 2 * chunk then
    break
  end
  offset = offset + chunk
end

local next_score, next_id = '', ''
if #page > limit then
  page[#page] = nil
  next_score, next_id = scores[limit], page[limit][1]
end
return { next_score, next_id, page }
