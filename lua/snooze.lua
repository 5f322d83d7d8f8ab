-- snooze.lua: the holder puts its job back for later without spending the
-- attempt (docs/design.md#snooze).
--
-- KEYS[1] meta
-- KEYS[2] pending
-- KEYS[3] active
-- KEYS[4] delayed
-- KEYS[5] cancelled
-- KEYS[6] events
-- KEYS[7] job
-- KEYS[8] stats
-- KEYS[9] due
-- ARGV[3] id
-- ARGV[4] token
-- ARGV[5] delay_ms: the job is delayed until now + delay_ms (pending at
--         once for 0)
--
-- The job leaves the active set (its flow control slot freed; a fifo
-- group's head stays with it, as for a retry), with attempts one less
-- (the claim's attempt given back) and stalled as it was; the token is
-- dead afterwards. A job whose cancel was requested for this attempt is
-- cancelled instead: the snooze is the holder's safe point, as a fail is.
-- Repeating the call with the same token after it succeeded answers the
-- job as it is now, changing nothing (also after another claim took it).
-- Returns the job reply.
-- Errors: EMQGONE no such job; EMQSTALE token is not the current one, or
-- the job is no longer active under it; TRYAGAIN (flow.lua's flow_check).

local id, token, delay = ARGV[3], ARGV[4], tonumber(ARGV[5])
local row, answer = fenced_report(id, token, 'snooze')
if not row then
  return answer
end

local now = now_ms()
leave_active(id, row)
local attempts = math.max(tonumber(row.attempts or '0') - 1, 0)
local fields = { 'outcomes', outcomes_after(row.outcomes, 'snooze', token) }
if attempts > 0 then
  fields[#fields + 1], fields[#fields + 2] = 'attempts', int(attempts)
else
  del_fields(id, row, { 'attempts' }) -- absent is zero (row.lua)
end
if row.cancel_requested then
  end_reported(id, row, fields, 'cancelled', now)
  emit('cancelled', id, 'cancelled')
  return reply_of(id, row)
end
emit('snoozed', id, requeue(id, row, fields, delay, now))
wake(1) -- pending: claim it; delayed: learn when to look again
return reply_of(id, row)
