import type { ClaimedJob } from "./claimed-job.js";
import type { Client } from "./client.js";
import { type WorkOptions } from "./work-options.js";
export type { WorkOptions } from "./work-options.js";
/**
 * Handler does the work of one job and returns its result (any JSON value;
 * undefined for none), or a promise of it. It throws to fail the attempt:
 * Fatal to make the job dead at once, Snooze to put it back for later without
 * spending the attempt, anything else to have it retried with its backoff.
 *
 * `signal` aborts when the job must stop: its reason is Cancelled (with the
 * cancel's reason) when someone cancelled the job, or the Stale or Gone error
 * that said the job is no longer this worker's. Check it at safe points
 * (`signal.throwIfAborted()`) or pass it to what takes one (fetch, timers). It
 * does not abort when work() is told to stop: the jobs in hand are finished.
 */
export type Handler = (job: ClaimedJob, signal: AbortSignal) => unknown;
/**
 * work runs the loop of Client.work: it resolves once `options.signal`
 * aborted and the jobs in hand were reported, and rejects with the error of a
 * claim refused for good, once the jobs in hand were reported. It rejects at
 * once, claiming nothing, with a TypeError for a handler that is not a
 * function, a queue name no path can hold, or an option out of its range.
 */
export declare function work(client: Client, queue: string, handler: Handler, options?: WorkOptions): Promise<void>;
