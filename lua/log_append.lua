-- log_append.lua: append lines to the log of a job held under token
-- (BullMQ's job.log), fenced as an extend is (fence.lua).
--
-- KEYS[1] job
-- KEYS[2] logs
-- KEYS[3] meta
-- ARGV[3] id
-- ARGV[4] token
-- ARGV[5] how many lines a job keeps: the oldest beyond are dropped
-- ARGV[6..] the lines, in order (the service checks their number and size)
--
-- A job's log is a LIST, logs:<id> in the queue's slot, one item per line:
-- "<ms>|<line>", ms the server's time of the append (every line of one
-- call has the same). The row's "logs" counts every line ever appended,
-- so that a line's number (0 for the first) never changes when older ones
-- are dropped: the numbers kept are logs - LLEN to logs - 1, and a
-- reader's cursor is one (log_read.lua). The list goes with the row
-- wherever a job is deleted (remove.lua, lifecycle.lua's trim_completed
-- and delete_jobs); a retry keeps it, so the log runs across attempts.
-- The logs KEYS is declared: while the slot migrates, a job with no log
-- yet is answered TRYAGAIN, as a script whose declared key is missing is.
-- No event is written: a line is not a change of the job's state, and a
-- chatty worker would push the state changes out of the stream.
-- Returns {appended, kept}: the lines this call appended, and how many the
-- job keeps now.
-- Errors: EMQGONE no such job; EMQSTALE token is not the current one, or
-- the job is no longer active under it, or its timeout has come.

local id, token, keep = ARGV[3], ARGV[4], tonumber(ARGV[5])
local f = redis.call('HMGET', JOB, 'state', 'token', 'timeout_ms')
local code = fence_row({ state = f[1], token = f[2] }, token)
if code then
  return error_reply(code, id)
end
local now = now_ms()
if f[3] and now >= tonumber(redis.call('HGET', JOB, 'started_at')) + tonumber(f[3]) then
  return error_reply('EMQSTALE', id) -- the run is over, as extend.lua says
end
local stamp, lines = int(now) .. '|', {}
for i = 6, #ARGV do
  lines[#lines + 1] = stamp .. ARGV[i]
end
local logs = BASE .. 'logs:' .. id -- KEYS[2]: bind names the shared roles only
local kept = 0
for first = 1, #lines, CHUNK do
  kept = redis.call('RPUSH', logs, unpack(lines, first, math.min(first + CHUNK - 1, #lines)))
end
if kept > keep then
  redis.call('LTRIM', logs, -keep, -1)
  kept = keep
end
redis.call('HINCRBY', JOB, 'logs', #lines)
return { #lines, kept }
