-- log_read.lua: a page of a job's log, oldest line first (log_append.lua
-- writes it).
--
-- KEYS[1] job
-- ARGV[3] id
-- ARGV[4] the number of the first line to read (a cursor), "" for the
--         oldest line kept
-- ARGV[5] limit: at most this many lines
--
-- A cursor before the oldest line kept (those lines were dropped) reads
-- from the oldest kept; one past the last line reads from the end, where
-- the next line appended will be. The log's key is not declared, so that
-- a job without a log is read as any other while its slot migrates; it is
-- read only when the row counts lines, through here.lua.
-- Returns {first, lines}: the number of the first line answered, and up
-- to limit items "<ms>|<line>". first + #lines is where the next read
-- starts.
-- Errors: EMQGONE no such job; TRYAGAIN (here.lua).

local id, limit = ARGV[3], tonumber(ARGV[5])
local f = redis.call('HMGET', JOB, 'state', 'logs')
if not f[1] then
  return error_reply('EMQGONE', id)
end
local total = tonumber(f[2]) or 0
if total == 0 then
  return { 0, {} }
end
local logs = BASE .. 'logs:' .. id
local n = call_here('LLEN', logs)
if n == false or (n == 0 and slot_migrating()) then
  try_again('the log of job ' .. id)
end
local oldest = total - n
local first = math.min(math.max(tonumber(ARGV[4]) or oldest, oldest), total)
if first == total then
  return { first, {} }
end
local lines = call_here('LRANGE', logs, first - oldest, first - oldest + limit - 1)
if lines == false then
  try_again('the log of job ' .. id)
end
return { first, lines }
