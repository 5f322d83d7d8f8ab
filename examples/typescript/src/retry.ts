// Backing off while the service is unavailable, as every echo_mq worker does.

import { setTimeout as sleep } from "node:timers/promises";
import { ConnectionError, EmqError } from "./client.js";

/** RetryOptions says how long to wait at most, what may end the waiting, and where to log it. */
export interface RetryOptions {
  /** log gets one "backing off <seconds>s: <why>" line per wait. */
  log: (line: string) => void;
  /** signal, when aborted, ends the wait between tries (never a request in flight). */
  signal?: AbortSignal;
  /** maxDelaySeconds caps each wait, Retry-After included; 30 when not set. */
  maxDelaySeconds?: number;
  /**
   * retryServerErrors also sends the call again after a 500 or any other
   * 5xx, not only after 502, 503, 504 and 429 (a claim does: only a 4xx but
   * 429 is a refusal that asking again cannot change).
   */
  retryServerErrors?: boolean;
}

/**
 * withRetry runs `send`, and while it fails with a retryable error (see
 * isRetryable), waits and runs it again: Retry-After seconds when the answer
 * gives it, otherwise 0.5 s doubling, never longer than maxDelaySeconds. Any
 * other error is thrown at once. Running a complete, a fail or a snooze again
 * is safe: the service answers a repeat as the first time.
 */
export async function withRetry<T>(send: () => Promise<T>, options: RetryOptions): Promise<T> {
  const maxDelay = options.maxDelaySeconds ?? 30;
  let delay = Math.min(0.5, maxDelay);
  for (;;) {
    let seconds = delay;
    let why: string;
    try {
      return await send();
    } catch (err) {
      if (err instanceof EmqError && (isRetryable(err) || (options.retryServerErrors && err.status >= 500))) {
        why = `${err.status} ${err.code ?? ""}`.trim();
        seconds = Math.min(err.retryAfterSeconds ?? delay, maxDelay);
      } else if (err instanceof ConnectionError) {
        why = err.message;
      } else {
        throw err;
      }
    }
    options.signal?.throwIfAborted();
    options.log(`backing off ${Number(seconds.toFixed(3))}s: ${why}`);
    await sleep(seconds * 1000, undefined, { signal: options.signal });
    delay = Math.min(delay * 2, maxDelay);
  }
}

/**
 * isRetryable tells the errors worth sending the same request again for: no
 * answer (a ConnectionError: refused, broken, timed out), a proxy's 502 or
 * 504, 503 (EMQUNAVAILABLE, EMQBUSY), and 429 (EMQBUSY: the API key has its
 * share of waiting claims).
 */
export function isRetryable(err: unknown): boolean {
  if (err instanceof ConnectionError) return true;
  return err instanceof EmqError && (err.status === 502 || err.status === 503 || err.status === 504 || err.status === 429);
}
