import type { ClaimedJob } from "./claimed-job.js";
import { type EmqError } from "./errors.js";
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
export declare class Heartbeat {
    #private;
    /** Starts extending job's lease of leaseMs, granted by a claim answered at claimedAt (Date.now()). */
    constructor(job: ClaimedJob, leaseMs: number, claimedAt: number, handlerAbort: AbortController, log: Log);
    /**
     * leaseEnd is the latest the job's lease may end (Date.now() time): the
     * service starts a lease before it answers, so a lease granted by an answer
     * at t ends at t + leaseMs or sooner. Both ends are on this machine's clock.
     */
    get leaseEnd(): number;
    /** lostBy is the 409 or 404 that told the job is no longer this worker's, if one did. */
    get lostBy(): EmqError | undefined;
    /** stop ends the heartbeat, cutting short an extend in flight, and waits for it to end. */
    stop(): Promise<void>;
}
