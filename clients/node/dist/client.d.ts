import { ClaimedJob } from "./claimed-job.js";
import { type RequestOptions } from "./transport.js";
import type { EnqueueOptions, EnqueueRequest, Job, LogLine } from "./types.js";
import { type Handler, type WorkOptions } from "./work.js";
/** defaultTimeoutMs bounds a request when ClientOptions.timeoutMs is not given. */
export declare const defaultTimeoutMs = 30000;
/** ClientOptions say where the service is and how to authenticate. */
export interface ClientOptions {
    /** baseUrl is the service's base URL: http:// or https:// and a host, such as "http://127.0.0.1:8080". */
    baseUrl: string;
    /** key is sent as `Authorization: Bearer <key>`. */
    key?: string;
    /**
     * signingKey signs every request with this key instead (X-EMQ-Timestamp,
     * X-EMQ-Signature), and no Authorization header is sent, `key` or not.
     */
    signingKey?: string;
    /** timeoutMs bounds each request and the reading of its answer (default 30 s); a claim gets its waitMs on top. */
    timeoutMs?: number;
}
/** ClaimOptions shape a claim. */
export interface ClaimOptions {
    /** count is how many jobs to claim at most (1 to 100; default 1). */
    count?: number;
    /** leaseMs is how long each job is leased (100 ms to a day; default 30 s). */
    leaseMs?: number;
    /** waitMs is how long to wait for a job when none is pending (0 to 30 s; default 0: answer at once). */
    waitMs?: number;
    /** worker is the worker's name, kept on each job it claims. */
    worker?: string;
    /** signal aborts the claim. */
    signal?: AbortSignal;
}
/** CancelOptions shape a cancel. */
export interface CancelOptions {
    /** reason is kept as the job's cancel_reason. */
    reason?: string;
}
/**
 * Client calls one echo_mq service. Make one and share it: it holds no
 * connection of its own (Node's fetch pools them). Clients that sign with
 * the same key share the memory of the signatures sent (it is the
 * process's), so that none is sent twice.
 */
export declare class Client {
    #private;
    /** timeoutMs bounds each request, as ClientOptions.timeoutMs says. */
    readonly timeoutMs: number;
    /** Throws a TypeError for a baseUrl that is not http:// or https:// with a host. */
    constructor(options: ClientOptions);
    /**
     * request sends one request to any route of the API, such as
     * `request("POST", "/queues/emails/pause")`, authenticated as every call
     * is, and returns the answer's JSON object. It throws the EmqError of a
     * refusal (or of a 2xx answer that is no JSON object), and a TypeError for
     * a path that does not start with "/".
     */
    request<T = unknown>(method: string, path: string, options?: RequestOptions): Promise<T>;
    /**
     * enqueue adds a job with `payload` (any JSON value) and the options of
     * the API (`id`, `priority`, `delay_ms`, `max_attempts`, `backoff`, ...).
     * With an id that is taken, it answers the job that has it, and adds none.
     */
    enqueue(queue: string, payload: unknown, options?: EnqueueOptions): Promise<Job>;
    /** enqueueMany adds up to 1000 jobs in one atomic step, and answers them in order. */
    enqueueMany(queue: string, jobs: EnqueueRequest[]): Promise<Job[]>;
    /**
     * claim leases up to `count` jobs, waiting up to `waitMs` for one to come
     * (a long poll), and answers them, each with its token; [] when none came.
     * An answer without its list of jobs, each with a token, is an EmqError.
     */
    claim(queue: string, options?: ClaimOptions): Promise<ClaimedJob[]>;
    /** get reads a job. */
    get(queue: string, id: string): Promise<Job>;
    /**
     * cancel cancels a job: a pending or delayed one at once (its state is
     * then cancelled), an active one by asking its holder to stop (its state
     * stays active, with cancel_requested, until the holder reports).
     */
    cancel(queue: string, id: string, options?: CancelOptions): Promise<Job>;
    /** logs reads every line of a job's log, oldest first (a job keeps its last 1,000). */
    logs(queue: string, id: string): Promise<LogLine[]>;
    /**
     * work claims jobs of `queue` and runs `handler` on each until
     * `options.signal` aborts: see WorkOptions and the README for what it
     * does with each outcome. It resolves once the signal aborted and the
     * jobs in hand were finished and reported; it rejects, once the jobs in
     * hand are finished, when a claim is refused for good (a wrong key, 400,
     * 401, 403). It rejects at once, claiming nothing, with a TypeError for an
     * option out of its range (WorkOptions says each one's).
     */
    work(queue: string, handler: Handler, options?: WorkOptions): Promise<void>;
}
