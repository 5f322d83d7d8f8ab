// echo-mq: the echo_mq client for Node.js. Client makes the calls; a
// ClaimedJob is a job a claim handed out; Client.work runs the worker loop.
export { isRetryable } from "./backoff.js";
export { ClaimedJob } from "./claimed-job.js";
export { Client } from "./client.js";
export { Busy, ConnectionFailed, EmqError, Forbidden, Gone, Internal, Invalid, MediaType, MethodNotAllowed, NotFound, Quota, Stale, TooLarge, Unauthorized, Unavailable, WrongState, } from "./errors.js";
export { Cancelled, Fatal, Snooze } from "./handler-errors.js";
