// Reporting how a handler's job ended: complete, fail or snooze, sent again
// after retryable failures for as long as the job's lease may hold.
import { Backoff, backingOff, isRetryable, sleep, whyOf } from "./backoff.js";
import { errorText } from "./error-text.js";
import { EmqError, Gone, Stale } from "./errors.js";
import { Fatal, Snooze } from "./handler-errors.js";
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
export async function report(job, outcome, leaseEnd, lostBy, log) {
    const reporter = new Reporter(job, leaseEnd, log);
    if (job.lost) {
        reporter.warnLost(lostBy);
    }
    else if ("value" in outcome) {
        await reporter.complete(outcome.value);
    }
    else if (job.cancelled()) {
        await reporter.fail(cancelledText(job.cancelReason ?? ""));
    }
    else if (outcome.error instanceof Snooze) {
        await reporter.snooze(outcome.error.delayMs);
    }
    else if (outcome.error instanceof Fatal) {
        await reporter.fail(errorText(outcome.error), true);
    }
    else {
        await reporter.fail(errorText(outcome.error));
    }
}
/** cancelledText is what a cancelled job is failed with. */
function cancelledText(reason) {
    return reason ? `cancelled: ${reason}` : "cancelled";
}
/** refusedText is the plain text a job is failed with when the service refused its error's text. */
function refusedText(refusal) {
    return `the error's text was refused: ${refusal.message}`;
}
/** LeaseLapsed is why a report was given up: the job's lease may have lapsed, and the service's sweep takes the job back. */
class LeaseLapsed extends Error {
    constructor(last) {
        super(`its lease has lapsed, so the service's sweep takes it back (the last try: ${whyOf(last)})`, { cause: last });
    }
}
/** Reporter sends the report of one job. */
class Reporter {
    #job;
    #leaseEnd;
    #log;
    constructor(job, leaseEnd, log) {
        this.#job = job;
        this.#leaseEnd = leaseEnd;
        this.#log = log;
    }
    /**
     * complete reports the value. A value the service refuses (over 1 MiB) or
     * that is not JSON (a BigInt) fails the job instead, so that it does not
     * stay active until its lease lapses.
     */
    async complete(value) {
        try {
            await this.#retry("completing", () => this.#job.complete(value, { minimal: true }));
            this.#log.info(`completed ${this.#job.id}`);
        }
        catch (err) {
            if (!this.#settled(err, "completed")) {
                await this.fail(`result refused: ${errorText(err)}`);
            }
        }
    }
    /**
     * fail reports a failed attempt with error, fatal or not. A fail the
     * service refuses with 400 (an error text it cannot take) is sent once
     * more with a plain text that says so, so that the job does not stay
     * active until its lease lapses; `plain` marks that second fail.
     */
    async fail(error, fatal = false, plain = false) {
        try {
            const job = await this.#retry("failing", () => this.#job.fail(error, { fatal, minimal: true }));
            this.#logEnd(job, `failed ${this.#job.id}: ${error}`);
        }
        catch (err) {
            if (this.#settled(err, "failed")) {
                return;
            }
            if (err instanceof EmqError && err.status === 400 && !plain) {
                this.#log.warn(`fail ${this.#job.id} refused: ${errorText(err)}; failing it with a plain text instead`);
                await this.fail(refusedText(err), fatal, true);
                return;
            }
            this.#log.error(`fail ${this.#job.id} refused: ${errorText(err)}`);
        }
    }
    /** snooze puts the job back for delayMs; a snooze the service refuses (over a year) fails the job instead. */
    async snooze(delayMs) {
        try {
            const job = await this.#retry("snoozing", () => this.#job.snooze(delayMs));
            this.#logEnd(job, `snoozed ${this.#job.id}: ${delayMs} ms`);
        }
        catch (err) {
            if (!this.#settled(err, "snoozed")) {
                await this.fail(`snooze refused: ${errorText(err)}`);
            }
        }
    }
    /**
     * warnLost warns that the job was lost, and what said so when known: "lost
     * <id>: 409 EMQSTALE". Its result, if any, is dropped: the job is no longer
     * this worker's to report.
     */
    warnLost(by) {
        this.#log.warn(`lost ${this.#job.id}${by ? `: ${whyOf(by)}` : ""}`);
    }
    /** #logEnd logs how a reported job ended: cancelled, when a cancel was requested, or else as said. */
    #logEnd(job, otherwise) {
        if (job.state === "cancelled") {
            this.#log.info(`cancelled ${this.#job.id}: ${job.cancel_reason ?? ""}`);
        }
        else {
            this.#log.info(otherwise);
        }
    }
    /**
     * #settled handles a report's failure after which nothing more can be
     * reported: the job was lost (409, 404), or its lease lapsed while the
     * report was retried. It reports false for any other failure.
     */
    #settled(err, outcome) {
        if (err instanceof Stale || err instanceof Gone) {
            this.warnLost(err);
            return true;
        }
        if (err instanceof LeaseLapsed) {
            this.#log.warn(`gave up reporting ${this.#job.id} as ${outcome}: ${err.message}`);
            return true;
        }
        return false;
    }
    /**
     * #retry calls `call` until it succeeds or fails in a way not worth
     * retrying, pausing after each retryable failure as a Backoff says, while
     * the job's lease may hold: a report sent later would be refused once the
     * sweep took the job back, so it then gives up with LeaseLapsed, after one
     * last call at the lease's end. Repeating a complete, fail or snooze is
     * safe: the service answers a repeat as it answered the first.
     */
    async #retry(doing, call) {
        const backoff = new Backoff();
        for (;;) {
            try {
                return await call();
            }
            catch (err) {
                if (!isRetryable(err)) {
                    throw err;
                }
                const left = this.#leaseEnd - Date.now();
                if (left <= 0) {
                    throw new LeaseLapsed(err);
                }
                const pause = Math.min(backoff.pauseMs(err), left);
                this.#log.warn(`${backingOff(pause, err)} (${doing} job ${this.#job.id})`);
                await sleep(pause);
            }
        }
    }
}
