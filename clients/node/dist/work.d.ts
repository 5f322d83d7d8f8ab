import type { ClaimedJob } from "./claimed-job.js";
import type { Client } from "./client.js";
import { type Logger } from "./logger.js";
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
/** WorkOptions shape work(). */
export interface WorkOptions {
    /** concurrency is how many jobs run at once (default 1): work() never holds more. */
    concurrency?: number;
    /**
     * signal stops the loop: no more claims, and work() resolves once the jobs
     * in hand are finished and reported. A claim already waiting is let answer
     * (within waitMs), and the jobs it brings are worked too: a claim cut short
     * could leave a job leased to nobody until its lease lapses.
     */
    signal?: AbortSignal;
    /** leaseMs is the lease each claim and extend asks for (default 30 s); the lease is extended every third of it. */
    leaseMs?: number;
    /** waitMs is how long each claim waits for a job (default 10 s, at most 30 s). */
    waitMs?: number;
    /** worker is the worker's name, kept on the jobs it claims (default "node-<host>-<pid>"). */
    worker?: string;
    /** logger takes what work() logs (default: warnings and errors to the console). */
    logger?: Logger;
}
/**
 * work runs the loop of Client.work: it resolves once `options.signal`
 * aborted and the jobs in hand were reported, and rejects with the error of a
 * claim refused for good, once the jobs in hand were reported.
 */
export declare function work(client: Client, queue: string, handler: Handler, options?: WorkOptions): Promise<void>;
