#!lua name=emq_minimal
-- The one Redis function bench/minimal calls, once per request: the floor
-- of "a chi handler, go-redis and one script", not a job queue.
--
-- emq_minimal_touch
--   KEYS[1]  a hash (the queue's: emq-minimal:{<queue>})
--   ARGV[1]  any string (what the request names: a job id, a count)
--   returns  ARGV[1], after one HSET of it into the hash's field "last"
--   errors   none of its own
redis.register_function('emq_minimal_touch', function(keys, args)
  redis.call('HSET', keys[1], 'last', args[1])
  return args[1]
end)
