-- batch_list.lua: one page of a queue's batches, newest first, with a
-- stable cursor (batches.lua).
--
-- KEYS[1] batches
-- KEYS[2] batches_created
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
-- running beside this one): then it indexes batches anew first.
-- Returns {next_score, next_id, batches}, each batch as batches.reply;
-- next_score is "" on the last page.
-- Errors: TRYAGAIN (here.lua).

local index = BASE .. 'batches_created'
local cursor, after, limit = ARGV[3], ARGV[4], tonumber(ARGV[5])

-- reindexed makes batches_created hold batches' members, each scored by
-- its created_at; a member whose keys are gone is left out. Its writes
-- are right whatever follows, so a try_again after them (the only
-- writes of this script) leaves nothing wrong.
local function reindexed()
  local ids = redis.call('ZRANGE', BASE .. 'batches', 0, -1)
  local keep = {}
  for _, b in ipairs(ids) do
    keep[b] = true
    local created = call_here('HGET', batches.key(b), 'created_at')
    if created == false then
      try_again('batch ' .. b)
    end
    if created then
      redis.call('ZADD', index, created, b)
    end
  end
  local stale = {}
  for _, b in ipairs(redis.call('ZRANGE', index, 0, -1)) do
    if not keep[b] then
      stale[#stale + 1] = b
    end
  end
  each_chunk(stale, 1, 'ZREM', index)
end

if redis.call('ZCARD', BASE .. 'batches') ~= redis.call('ZCARD', index) then
  reindexed()
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
