// The shapes of the API's requests and answers, named from src/schema.d.ts,
// which openapi-typescript generates from api/openapi.yaml: a field the spec
// renames or retypes breaks the build here, not a user's program at run time.

import type { components } from "./schema.js";

type Schemas = components["schemas"];

/** Job is a job as the service answers it (`GET /queues/{queue}/jobs/{id}`). */
export type Job = Schemas["Job"];

/** JobState is the state of a job: pending, active, delayed, waiting, completed, dead or cancelled. */
export type JobState = Job["state"];

/** EnqueueRequest is one job to enqueue: its payload and every option of the spec. */
export type EnqueueRequest = Schemas["EnqueueRequest"];

/**
 * EnqueueOptions are the options of an enqueue besides the payload, named as
 * the API names them: `id`, `priority`, `delay_ms`, `max_attempts`,
 * `backoff`, `group`, `dedupe`, ...
 */
export type EnqueueOptions = Omit<EnqueueRequest, "payload">;

/** ExtendResponse answers a checkpoint: the lease's new end, and whether a cancel was requested. */
export type ExtendResponse = Schemas["ExtendResponse"];

/** LogLine is one line of a job's log, stamped with the server's time. */
export type LogLine = Schemas["LogLine"];

/** LogAppendResponse answers an append to a job's log. */
export type LogAppendResponse = Schemas["LogAppendResponse"];

/** Problem is an RFC 9457 problem+json body, with echo_mq's machine-readable `code`. */
export type Problem = Schemas["Problem"];

export type { components, paths } from "./schema.js";
