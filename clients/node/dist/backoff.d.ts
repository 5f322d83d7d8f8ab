import { EmqError } from "./errors.js";
/**
 * isRetryable tells the failures worth sending the same call again for,
 * after a pause: a 502, 503 or 504 (the service cannot reach Redis, or a
 * proxy cannot reach the service), a 429 (this key has its share of waiting
 * claims), and a call that got no answer (ConnectionFailed).
 */
export declare function isRetryable(err: unknown): err is EmqError;
/**
 * isRetryableClaim tells the failures of a claim worth sending it again for:
 * those of isRetryable and any other 5xx, since a claim changes nothing
 * until it is answered (a 500 may be a proxy's, or pass).
 */
export declare function isRetryableClaim(err: unknown): err is EmqError;
/** Backoff is the pause before retrying a call that failed in a retryable way; each loop keeps its own. */
export declare class Backoff {
    #private;
    /** pauseMs is how long to wait after err: its Retry-After when given, else 0.5 s doubling per call; never more than 30 s. */
    pauseMs(err: EmqError): number;
    /** reset starts the doubling again, after a call that succeeded. */
    reset(): void;
}
/** backingOff is the warning logged before a pause: "backing off 0.5s: 503 EMQUNAVAILABLE". */
export declare function backingOff(pauseMs: number, err: EmqError): string;
/** whyOf says in a few words what went wrong: "503 EMQUNAVAILABLE", or why no answer came. */
export declare function whyOf(err: EmqError): string;
/** sleep waits ms, and reports false instead, at once, when signal aborts first. */
export declare function sleep(ms: number, signal?: AbortSignal): Promise<boolean>;
