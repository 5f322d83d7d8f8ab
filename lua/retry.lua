-- retry.lua: an operator sends a dead or cancelled job back to pending.
--
-- KEYS[1] meta
-- KEYS[2] pending
-- KEYS[3] dead
-- KEYS[4] cancelled
-- KEYS[5] events
-- KEYS[6] job
-- ARGV[3] id
-- ARGV[4] actor, ARGV[5] role: who asked, for the event
--
-- The job goes to the back of its priority in pending with a fresh attempt
-- budget (attempts 0) and its stalled count reset; its last_error is kept
-- for the record. Its next claim draws a new token as any claim does.
-- Returns the job reply.
-- Errors: EMQGONE no such job; EMQSTATE the job is not dead or cancelled.

local id = ARGV[3]
local row = read_row(id)
if not row.state then
  return error_reply('EMQGONE', id)
end
if row.state ~= 'dead' and row.state ~= 'cancelled' then
  return error_reply('EMQSTATE', id)
end
flow_check(row)
redis.call('ZREM', set_of(row.state), id)
del_fields(id, row, { 'attempts', 'stalled', 'finished_at', 'cancel_requested', 'cancel_reason' })
push_pending(id, row, false)
emit('retried', id, 'pending', 'actor', ARGV[4], 'role', ARGV[5])
wake(1)
return reply_of(id, row)
