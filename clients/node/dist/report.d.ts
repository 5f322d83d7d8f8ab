import type { ClaimedJob } from "./claimed-job.js";
import { EmqError } from "./errors.js";
import type { Log } from "./logger.js";
/** Outcome is how a handler ended: the value it returned, or what it threw. */
export type Outcome = {
    value: unknown;
} | {
    error: unknown;
};
/**
 * report sends the outcome of a job's handler to the service: complete with
 * the value; fail "cancelled: <reason>" for a throw after a cancel was seen
 * (the service makes the job cancelled); snooze for a Snooze; fail fatal for
 * a Fatal; fail with the message for any other throw (an error text the
 * service refuses is sent once more as a plain text). A job lost (409 or 404)
 * gets no report, only a warning, and so does one whose report met a 409 or
 * 404. `leaseEnd` is the latest the job's lease may end; `lostBy` the answer
 * that lost it, if the heartbeat saw one.
 */
export declare function report(job: ClaimedJob, outcome: Outcome, leaseEnd: number, lostBy: EmqError | undefined, log: Log): Promise<void>;
