// The errors a work() handler throws to say how its job ends, besides an
// ordinary error (the attempt failed, and the job is retried with its
// backoff), and the reason its signal carries when its job is cancelled.
/**
 * Fatal is what a handler throws when retrying cannot help (bad input): work()
 * fails the job with its message and no retry, and the job is dead at once,
 * attempts left or not.
 */
export class Fatal extends Error {
    constructor(message, options) {
        super(message, options);
        this.name = "Fatal";
    }
}
/**
 * Snooze is what a handler throws when its job cannot go ahead yet (a rate
 * limit upstream, a file not there yet), which is no failure: work() puts the
 * job back, delayed for `delayMs` (pending at once for 0), and the attempt is
 * not spent. A job whose cancel was requested is cancelled instead.
 */
export class Snooze extends Error {
    /** delayMs is how long the job waits before it may be claimed again, in whole ms. */
    delayMs;
    constructor(delayMs) {
        const ms = Math.max(0, Math.ceil(Number(delayMs) || 0));
        super(`snooze for ${ms} ms`);
        this.name = "Snooze";
        this.delayMs = ms;
    }
}
/**
 * Cancelled is the reason of a handler's signal aborted because someone
 * cancelled its job: `signal.throwIfAborted()` throws it. Stop at the next
 * safe point and throw (this error or any other): the job ends cancelled,
 * with the reason the canceller gave. A handler that returns a value instead
 * finished anyway, and its job is completed.
 */
export class Cancelled extends Error {
    /** reason is the reason the canceller gave; "" when none. */
    reason;
    constructor(reason) {
        super(reason ? `cancelled: ${reason}` : "cancelled");
        this.name = "Cancelled";
        this.reason = reason;
    }
}
