-- schedule_list.lua: read one schedule, or a page of them by name
-- (schedules.lua). It writes nothing.
--
-- KEYS[1] schedules
-- KEYS[2] schedule_names
-- ARGV[3] a name: read that schedule only; "" for a page
-- ARGV[4] the page's cursor: the last name of the page before ("" for
--         the first page)
-- ARGV[5] limit: at most this many records on a page
--
-- Returns {next, records}: next is the cursor of the next page ("" on the
-- last), records the records found (none for a name that has no schedule).

if ARGV[3] ~= '' then
  return { '', { schedule_record(ARGV[3]) } }
end
local limit = tonumber(ARGV[5])
local from = ARGV[4] == '' and '-' or '(' .. ARGV[4]
local names = redis.call('ZRANGEBYLEX', SCHEDULE_NAMES, from, '+', 'LIMIT', '0', limit + 1)
local records = {}
for i = 1, math.min(#names, limit) do
  records[i] = schedule_record(names[i])
end
local next = ''
if #names > limit then
  next = names[limit]
end
return { next, records }
