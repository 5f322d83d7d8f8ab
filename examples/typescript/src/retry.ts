// Backing off while the service is unavailable, as every echo_mq worker does.

import { setTimeout as sleep } from "node:timers/promises";
import { EmqError } from "./client.js";

/** RetryOptions says what may end the waiting and where to log it. */
export interface RetryOptions {
  /** signal, when aborted, ends the wait between tries (never a request in flight). */
  signal?: AbortSignal;
  /** log gets one "backing off <seconds>s: <why>" line per wait. */
  log: (line: string) => void;
}

/**
 * withRetry runs `send`, and while it fails with a 503 (EMQUNAVAILABLE,
 * EMQBUSY) or a connection error, waits and runs it again: Retry-After seconds
 * when the answer gives it, otherwise 0.5 s doubling up to 30 s. Any other
 * error is thrown at once. Running a complete or a fail again is safe: the
 * service answers a repeat as the first time.
 */
export async function withRetry<T>(send: () => Promise<T>, options: RetryOptions): Promise<T> {
  let delay = 0.5;
  for (;;) {
    let seconds = delay;
    let why: string;
    try {
      return await send();
    } catch (err) {
      if (err instanceof EmqError && err.status === 503) {
        why = `503 ${err.code ?? ""}`.trim();
        seconds = err.retryAfterSeconds ?? delay;
      } else if (isConnectionError(err)) {
        why = connectionErrorText(err);
      } else {
        throw err;
      }
    }
    options.signal?.throwIfAborted();
    options.log(`backing off ${seconds}s: ${why}`);
    await sleep(seconds * 1000, undefined, { signal: options.signal });
    delay = Math.min(delay * 2, 30);
  }
}

/** isConnectionError tells a failed connection: fetch reports it as a TypeError. */
function isConnectionError(err: unknown): err is TypeError {
  return err instanceof TypeError;
}

/** connectionErrorText names a failed connection by its cause, such as ECONNREFUSED. */
function connectionErrorText(err: TypeError): string {
  const cause = err.cause as { code?: string } | undefined;
  return cause?.code ?? err.message;
}
