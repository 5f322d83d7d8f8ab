-- batch_commit.lua: close an open batch (batches.lua).
--
-- KEYS[1] meta
-- KEYS[2] due
-- ARGV[3] the batch's id
--
-- An open batch is running from now on, and done as soon as no job of it
-- is left: at once when none is, and then its callback is owed
-- (batch_take.lua). A batch committed already is answered as it is.
-- Returns the batch's reply (batches.lua's batches.reply).
-- Errors: EMQGONE no such batch; TRYAGAIN (flow.lua's flow_here: the
-- batch's keys are not declared).

flow_here()
local reply = batches.commit(ARGV[3], now_ms())
if not reply then
  return redis.error_reply('EMQGONE no such batch: ' .. ARGV[3])
end
return reply
