// Which failures are worth asking again for, and how long to wait first.
import { setTimeout as delay } from "node:timers/promises";
import { ConnectionFailed, EmqError } from "./errors.js";
/** The pauses after a retryable error without Retry-After: the first, doubled after each further one, up to the last. */
const firstPauseMs = 500;
const longestPauseMs = 30_000;
/**
 * isRetryable tells the failures worth sending the same call again for,
 * after a pause: a 502, 503 or 504 (the service cannot reach Redis, or a
 * proxy cannot reach the service), a 429 (this key has its share of waiting
 * claims), and a call that got no answer (ConnectionFailed).
 */
export function isRetryable(err) {
    if (err instanceof ConnectionFailed) {
        return true;
    }
    return err instanceof EmqError && [429, 502, 503, 504].includes(err.status);
}
/**
 * isRetryableClaim tells the failures of a claim worth sending it again for:
 * those of isRetryable and any other 5xx, since a claim changes nothing
 * until it is answered (a 500 may be a proxy's, or pass).
 */
export function isRetryableClaim(err) {
    return isRetryable(err) || (err instanceof EmqError && err.status >= 500);
}
/** Backoff is the pause before retrying a call that failed in a retryable way; each loop keeps its own. */
export class Backoff {
    #nextMs = firstPauseMs;
    /** pauseMs is how long to wait after err: its Retry-After when given, else 0.5 s doubling per call; never more than 30 s. */
    pauseMs(err) {
        if (err.retryAfterSeconds !== undefined) {
            return Math.min(err.retryAfterSeconds * 1000, longestPauseMs);
        }
        const pause = this.#nextMs;
        this.#nextMs = Math.min(pause * 2, longestPauseMs);
        return pause;
    }
    /** reset starts the doubling again, after a call that succeeded. */
    reset() {
        this.#nextMs = firstPauseMs;
    }
}
/** backingOff is the warning logged before a pause: "backing off 0.5s: 503 EMQUNAVAILABLE". */
export function backingOff(pauseMs, err) {
    return `backing off ${Number((pauseMs / 1000).toFixed(3))}s: ${whyOf(err)}`;
}
/** whyOf says in a few words what went wrong: "503 EMQUNAVAILABLE", or why no answer came. */
export function whyOf(err) {
    if (err.status === 0) {
        return err.message;
    }
    return `${err.status}${err.code ? ` ${err.code}` : ""}`;
}
/** sleep waits ms, and reports false instead, at once, when signal aborts first. */
export async function sleep(ms, signal) {
    if (signal?.aborted) {
        return false;
    }
    try {
        await delay(Math.max(0, ms), undefined, { signal });
        return true;
    }
    catch {
        return false;
    }
}
