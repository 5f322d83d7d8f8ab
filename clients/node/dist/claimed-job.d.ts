import type { Client } from "./client.js";
import type { ExtendResponse, Job, LogAppendResponse } from "./types.js";
/** defaultLeaseMs is the lease a claim asks for when none is given: the service's own default. */
export declare const defaultLeaseMs = 30000;
/** ExtendOptions shape a checkpoint. */
export interface ExtendOptions {
    /** leaseMs is the new lease, from the service's now: by default the lease the job was claimed with. */
    leaseMs?: number;
    /** progress is any JSON value, stored on the job (the latest wins). */
    progress?: unknown;
    /** signal aborts the request. */
    signal?: AbortSignal;
}
/** FailOptions say how to fail an attempt. */
export interface FailOptions {
    /** retryInMs retries the job after this long instead of after its backoff, attempts allowing. */
    retryInMs?: number;
    /** fatal makes the job dead at once, with no retry. */
    fatal?: boolean;
    /** minimal asks for the job without its payload and result (`Prefer: return=minimal`). */
    minimal?: boolean;
}
/**
 * ClaimedJob is a job this holder leased with a claim: the job as the claim
 * answered it (`data`), and its extend, complete, fail, snooze and log. A call
 * answered 409 EMQSTALE or 404 EMQGONE marks the job `lost`; an extend
 * answered with a cancel request records it (`cancelled()`, `cancelReason`).
 */
export declare class ClaimedJob {
    #private;
    /** id is the job's id. */
    readonly id: string;
    /** queue is the queue it was claimed from. */
    readonly queue: string;
    /** payload is the job's payload, the JSON value it was enqueued with. */
    readonly payload: unknown;
    /** token fences every call of this holder on the job. */
    readonly token: number;
    /** attempts counts the job's attempts, this one included. */
    readonly attempts: number;
    /** data is the whole job as the claim answered it. */
    readonly data: Job;
    /**
     * Makes the handle of a job a claim gave out (with its token). `leaseMs`,
     * the lease it was claimed with, is what extend asks for by default.
     */
    constructor(client: Client, data: Job, leaseMs?: number);
    /** cancelReason is the reason of the cancel an extend saw ("" when none was given), undefined before one. */
    get cancelReason(): string | undefined;
    /** lost is true once a call answered 409 EMQSTALE or 404 EMQGONE: the job is no longer this holder's. */
    get lost(): boolean;
    /** cancelled is true once an extend saw a cancel request, or the job was lost: stop working it. */
    cancelled(): boolean;
    /**
     * extend checkpoints the job: the lease then ends `leaseMs` after the
     * service's now, and `progress`, when given, is stored. Its answer says
     * whether a cancel was requested, which the job records. It gives up after
     * a third of the lease (ConnectionFailed), so that a hung extend is sent
     * again before the lease lapses.
     */
    extend(options?: ExtendOptions): Promise<ExtendResponse>;
    /** complete finishes the job with `result` (any JSON value; undefined for none). */
    complete(result?: unknown, options?: {
        minimal?: boolean;
    }): Promise<Job>;
    /**
     * fail reports that the attempt failed with `error` (kept as the job's
     * last_error): the service retries the job with its backoff, or makes it
     * dead when no attempt is left, or cancelled when a cancel was requested.
     * A lone surrogate in `error` (half of a UTF-16 pair, such as a message
     * cut in the middle of an emoji) is sent as U+FFFD: the service refuses
     * a body that holds one.
     */
    fail(error: string, options?: FailOptions): Promise<Job>;
    /**
     * snooze puts the job back for `delayMs` (pending at once for 0) without
     * spending its attempt; a job whose cancel was requested is cancelled
     * instead. The token holds nothing afterwards.
     */
    snooze(delayMs: number): Promise<Job>;
    /** log appends lines to the job's log (1 to 1,000 a call, each at most 2,048 bytes). */
    log(...lines: string[]): Promise<LogAppendResponse>;
}
