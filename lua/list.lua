-- list.lua: one page of a queue's jobs in one state, with a stable cursor.
--
-- KEYS[1] set, the state's sorted set
-- ARGV[3] "asc" (lowest score first) or "desc" (highest first)
-- ARGV[4] cursor score, "" for the first page
-- ARGV[5] cursor id: the page starts strictly after (score, id)
-- ARGV[6] limit
--
-- Every score in the sets is an integer, and so is a cursor's.
-- Pages are ordered by (score, id), the sorted set's own order, and a
-- cursor is the last (score, id) given, so no job is given twice or
-- skipped across pages while other jobs come and go: a job that moves
-- gets a new score, and turns up again only where its new score puts it.
-- Returns {next_score, next_id, jobs}: next_score is "" on the last page.
-- Errors: TRYAGAIN (here.lua).

local set = SET
local asc = ARGV[3] == 'asc'
local cursor, after, limit = ARGV[4], ARGV[5], tonumber(ARGV[6])
local range = asc and 'ZRANGEBYSCORE' or 'ZREVRANGEBYSCORE'
local far = asc and '+inf' or '-inf'

local page = {} -- id, score, id, score, ...
local function take(members)
  for i = 1, #members, 2 do
    if #page / 2 >= limit then
      return
    end
    page[#page + 1] = members[i]
    page[#page + 1] = members[i + 1]
  end
end

if cursor == '' then
  take(redis.call(range, set, asc and '-inf' or '+inf', far, 'WITHSCORES', 'LIMIT', 0, limit))
else
  -- Members of the cursor's own score come in id order (reversed for
  -- desc); take those past the cursor's id, then the scores beyond.
  local ties = redis.call(range, set, cursor, cursor, 'WITHSCORES', 'LIMIT', 0, 10000)
  local past = {}
  for i = 1, #ties, 2 do
    if (asc and ties[i] > after) or (not asc and ties[i] < after) then
      past[#past + 1] = ties[i]
      past[#past + 1] = ties[i + 1]
    end
  end
  take(past)
  if #page / 2 < limit then
    take(redis.call(range, set, '(' .. cursor, far, 'WITHSCORES', 'LIMIT', 0, limit - #page / 2))
  end
end

-- An active job's lease is its score (docs/design.md#fencing).
local leases = set == BASE .. 'active'
local jobs = {}
for i = 1, #page, 2 do
  local row = row_here(page[i])
  if row then
    if leases then
      row.lease_expires_at = page[i + 1]
    end
    jobs[#jobs + 1] = reply_of(page[i], row)
  end
end
local next_score, next_id = '', ''
if #page / 2 >= limit then
  next_score, next_id = page[#page], page[#page - 1]
end
return { next_score, next_id, jobs }
