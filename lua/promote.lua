-- promote.lua: an operator makes a delayed job pending now.
--
-- KEYS[1] meta
-- KEYS[2] pending
-- KEYS[3] delayed
-- KEYS[4] events
-- KEYS[5] job
-- KEYS[6] due
-- ARGV[3] id
-- ARGV[4] actor, ARGV[5] role: who asked, for the event
--
-- promote_all.lua promotes many jobs in the same steps: a change here is
-- one there too.
-- Returns the job reply.
-- Errors: EMQGONE no such job; EMQSTATE the job is not delayed.

local id = ARGV[3]
local row = read_row(id)
if not row.state then
  return error_reply('EMQGONE', id)
end
if row.state ~= 'delayed' then
  return error_reply('EMQSTATE', id, row.state, 'only a delayed job can be promoted')
end
flow_check(row)
redis.call('ZREM', DELAYED, id)
push_pending(id, row, false)
emit('promoted', id, 'pending', 'actor', ARGV[4], 'role', ARGV[5])
wake(1)
return reply_of(id, row)
