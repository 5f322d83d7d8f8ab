-- batch_ack.lua: a batch's callback job is enqueued (batches.lua).
--
-- KEYS[1] meta
-- KEYS[2] due
-- ARGV[3] the batch's id
-- ARGV[4] the callback job's id
--
-- The batch no longer owes it, and names the job as its callback_job_id.
-- Returns 1 when the batch owed it, else 0 (acknowledged already).
-- Errors: TRYAGAIN (flow.lua's flow_here: the keys are not declared).

flow_here()
local b = ARGV[3]
if redis.call('ZREM', BASE .. 'batches_due', b) == 0 then
  return 0
end
if redis.call('EXISTS', BASE .. 'batch:' .. b) == 1 then
  redis.call('HSET', BASE .. 'batch:' .. b, 'callback_job_id', ARGV[4])
end
return 1
