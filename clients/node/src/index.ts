// echo-mq: the echo_mq client for Node.js. Client makes the calls; a
// ClaimedJob is a job a claim handed out; Client.work runs the worker loop.

export { isRetryable } from "./backoff.js";
export { ClaimedJob, type ExtendOptions, type FailOptions } from "./claimed-job.js";
export { Client, type CancelOptions, type ClaimOptions, type ClientOptions } from "./client.js";
export {
  Busy,
  ConnectionFailed,
  EmqError,
  Forbidden,
  Gone,
  Internal,
  Invalid,
  MediaType,
  MethodNotAllowed,
  NotFound,
  Quota,
  Stale,
  TooLarge,
  Unauthorized,
  Unavailable,
  WrongState,
} from "./errors.js";
export { Cancelled, Fatal, Snooze } from "./handler-errors.js";
export type { Logger } from "./logger.js";
export type { RequestOptions } from "./transport.js";
export type {
  components,
  EnqueueOptions,
  EnqueueRequest,
  ExtendResponse,
  Job,
  JobState,
  LogAppendResponse,
  LogLine,
  paths,
  Problem,
} from "./types.js";
export type { Handler } from "./work.js";
export type { WorkOptions } from "./work-options.js";
