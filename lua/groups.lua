-- groups.lua: one page of a queue's groups, by name (flow.lua).
--
-- KEYS[1] meta
-- ARGV[3] cursor: the page starts after this name, "" for the first page
-- ARGV[4] limit
--
-- A group is listed while it has jobs pending, active or delayed, or is
-- paused.
-- Returns {next_cursor, groups}: next_cursor is "" on the last page; each
-- group is group_info's reply.
-- Errors: TRYAGAIN (flow.lua's flow_here).

flow_here()
local cursor, limit = ARGV[3], tonumber(ARGV[4])
local from = cursor == '' and '-' or '(' .. cursor
local names = redis.call('ZRANGEBYLEX', fkey('groups'), from, '+', 'LIMIT', '0', limit + 1)
local groups, next_cursor = {}, ''
for i = 1, math.min(#names, limit) do
  groups[i] = group_info(names[i])
end
if #names > limit then
  next_cursor = names[limit]
end
return { next_cursor, groups }
