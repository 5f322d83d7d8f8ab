// Extending the lease of a job while its handler runs.

import { Backoff, backingOff, isRetryable, sleep } from "./backoff.js";
import type { ClaimedJob } from "./claimed-job.js";
import { errorText } from "./error-text.js";
import { type EmqError, Gone, Stale } from "./errors.js";
import { Cancelled } from "./handler-errors.js";
import type { Log } from "./logger.js";

/**
 * Heartbeat extends a job's lease every third of it while its handler runs.
 * When an extend says a cancel was requested, it aborts the handler's signal
 * with Cancelled and goes on extending (until the handler stops, the job must
 * not look stalled); when one answers 409 EMQSTALE or 404 EMQGONE, the job is
 * no longer this worker's: it aborts the signal with that error and stops.
 *
 * Extends start a third of the lease apart, start to start; an extend gives
 * up after a third of the lease, and after a retryable failure the next one
 * comes sooner (the back-off, at most a third of the lease), so a hung or
 * refused extend is sent again while the lease still holds.
 */
export class Heartbeat {
  readonly #job: ClaimedJob;
  readonly #leaseMs: number;
  readonly #handlerAbort: AbortController;
  readonly #log: Log;
  readonly #stop = new AbortController();
  readonly #done: Promise<void>;
  #leaseEnd: number;
  #lostBy: EmqError | undefined;

  /** Starts extending job's lease of leaseMs, granted by a claim answered at claimedAt (Date.now()). */
  constructor(job: ClaimedJob, leaseMs: number, claimedAt: number, handlerAbort: AbortController, log: Log) {
    this.#job = job;
    this.#leaseMs = leaseMs;
    this.#handlerAbort = handlerAbort;
    this.#log = log;
    this.#leaseEnd = claimedAt + leaseMs;
    this.#done = this.#loop();
  }

  /**
   * leaseEnd is the latest the job's lease may end (Date.now() time): the
   * service starts a lease before it answers, so a lease granted by an answer
   * at t ends at t + leaseMs or sooner. Both ends are on this machine's clock.
   */
  get leaseEnd(): number {
    return this.#leaseEnd;
  }

  /** lostBy is the 409 or 404 that told the job is no longer this worker's, if one did. */
  get lostBy(): EmqError | undefined {
    return this.#lostBy;
  }

  /** stop ends the heartbeat, cutting short an extend in flight, and waits for it to end. */
  async stop(): Promise<void> {
    this.#stop.abort();
    await this.#done;
  }

  async #loop(): Promise<void> {
    const interval = this.#leaseMs / 3;
    const backoff = new Backoff();
    let pause = interval;
    while (await sleep(pause, this.#stop.signal)) {
      const started = Date.now();
      pause = interval;
      try {
        await this.#extend();
        backoff.reset();
      } catch (err) {
        if (this.#stop.signal.aborted) {
          return;
        }
        if (err instanceof Stale || err instanceof Gone) {
          this.#lostBy = err;
          this.#handlerAbort.abort(err);
          return;
        }
        if (isRetryable(err)) {
          pause = Math.min(backoff.pauseMs(err), interval);
          const left = Math.max(0, pause - (Date.now() - started));
          this.#log.warn(`${backingOff(left, err)} (extending job ${this.#job.id})`);
        } else {
          this.#log.warn(`extend of job ${this.#job.id} refused: ${errorText(err)}`);
        }
      }
      pause -= Date.now() - started;
    }
  }

  /** #extend renews the lease, and aborts the handler's signal when the answer says a cancel was requested. */
  async #extend(): Promise<void> {
    const answer = await this.#job.extend({ leaseMs: this.#leaseMs, signal: this.#stop.signal });
    this.#leaseEnd = Date.now() + this.#leaseMs;
    if (answer.cancel_requested && !this.#handlerAbort.signal.aborted) {
      this.#handlerAbort.abort(new Cancelled(answer.cancel_reason ?? ""));
    }
  }
}
