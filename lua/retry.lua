-- retry.lua: an operator sends a dead or cancelled job back to pending.
--
-- KEYS[1] meta
-- KEYS[2] pending
-- KEYS[3] dead
-- KEYS[4] cancelled
-- KEYS[5] events
-- KEYS[6] job
-- KEYS[7] due
-- ARGV[3] id
-- ARGV[4] actor, ARGV[5] role: who asked, for the event
--
-- The job goes to the back of its priority in pending with a fresh attempt
-- budget (attempts 0) and its stalled count reset; its last_error is kept
-- for the record. Its next claim draws a new token as any claim does.
-- It no longer expires (it was sent back on purpose), and its dedupe key
-- (admission.lua) is taken again, unless another job that is pending,
-- delayed or active holds it by now: then the job goes without its key,
-- so that a key is never held by two waiting jobs. A throttle's key is
-- left to its window.
-- A job of a batch that is not done is counted in it again; of one that
-- is done, it leaves the batch (batches.lua).
-- retry_all.lua retries many jobs in the same steps: a change here is one
-- there too.
-- Returns the job reply.
-- Errors: EMQGONE no such job; EMQSTATE the job is not dead or cancelled.

local id = ARGV[3]
local row = read_row(id)
if not row.state then
  return error_reply('EMQGONE', id)
end
if row.state ~= 'dead' and row.state ~= 'cancelled' then
  return error_reply('EMQSTATE', id, row.state, 'only a dead or cancelled job can be retried')
end
flow_check(row)
local key = row.dedupe_mode ~= 'throttle' and row.dedupe_key
local other
if key then
  flow_here() -- the dedupe keys are not declared
  local holder = redis.call('HGET', BASE .. 'dedupe', key)
  other = holder and holder ~= id and dedupe_live(row_here(holder), key, 'until_done', nil, 0)
end
if row.batch_id and batches.reopened(row.batch_id, id, row.state) then
  del_fields(id, row, { 'batch_id' }) -- its batch is done: it leaves it
end
redis.call('ZREM', set_of(row.state), id)
del_fields(id, row, { 'attempts', 'stalled', 'finished_at', 'cancel_requested', 'cancel_reason', 'expires_at' })
if other then
  del_fields(id, row, { 'dedupe_key', 'dedupe_mode' })
elseif key then
  redis.call('HSET', BASE .. 'dedupe', key, id)
end
push_pending(id, row, false)
emit('retried', id, 'pending', 'actor', ARGV[4], 'role', ARGV[5])
wake(1)
return reply_of(id, row)
