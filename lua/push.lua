-- push.lua: a queue's push target (docs/design.md#push-delivery): the URL
-- the service POSTs the queue's jobs to, kept in the queue's push hash
--
--   url, timeout_ms, concurrency, lease_ms   the target
--   secret                                   its signing secret, when set;
--                                            never in a reply or an event
--   headers                                  the headers each delivery
--                                            carries, a JSON object, when
--                                            set; kept as private as secret
--   updated_at                               ms, when it was last put
--
-- and the last PUSH_ERRORS_KEPT delivery errors, newest first, in the
-- push_errors list (the service writes them, one JSON text each). The
-- deliveries themselves are claims with a cap (claim.lua's max_active),
-- completes and fails, as any worker's.

-- PUSH_KEYS are the push keys' names, for obliterate.
local PUSH_KEYS = { 'push', 'push_errors' }
