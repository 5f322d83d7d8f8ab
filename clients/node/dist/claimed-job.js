// A job a claim handed out, with the calls only its holder may make: each is
// fenced by the claim's token, so once the job is no longer this holder's
// they answer 409 EMQSTALE (or 404 EMQGONE for a removed job).
import { wellFormed } from "./error-text.js";
import { Gone, Stale } from "./errors.js";
import { jobPath } from "./paths.js";
/** defaultLeaseMs is the lease a claim asks for when none is given: the service's own default. */
export const defaultLeaseMs = 30_000;
/**
 * ClaimedJob is a job this holder leased with a claim: the job as the claim
 * answered it (`data`), and its extend, complete, fail, snooze and log. A call
 * answered 409 EMQSTALE or 404 EMQGONE marks the job `lost`; an extend
 * answered with a cancel request records it (`cancelled()`, `cancelReason`).
 */
export class ClaimedJob {
    /** id is the job's id. */
    id;
    /** queue is the queue it was claimed from. */
    queue;
    /** payload is the job's payload, the JSON value it was enqueued with. */
    payload;
    /** token fences every call of this holder on the job. */
    token;
    /** attempts counts the job's attempts, this one included. */
    attempts;
    /** data is the whole job as the claim answered it. */
    data;
    #client;
    #leaseMs;
    #cancelReason;
    #lost = false;
    /**
     * Makes the handle of a job a claim gave out (with its token). `leaseMs`,
     * the lease it was claimed with, is what extend asks for by default.
     */
    constructor(client, data, leaseMs = defaultLeaseMs) {
        if (data.token === undefined) {
            throw new TypeError(`job ${data.id} has no token: only a claim's answer holds one`);
        }
        this.id = data.id;
        this.queue = data.queue;
        this.payload = data.payload;
        this.token = data.token;
        this.attempts = data.attempts;
        this.data = data;
        this.#client = client;
        this.#leaseMs = leaseMs;
    }
    /** cancelReason is the reason of the cancel an extend saw ("" when none was given), undefined before one. */
    get cancelReason() {
        return this.#cancelReason;
    }
    /** lost is true once a call answered 409 EMQSTALE or 404 EMQGONE: the job is no longer this holder's. */
    get lost() {
        return this.#lost;
    }
    /** cancelled is true once an extend saw a cancel request, or the job was lost: stop working it. */
    cancelled() {
        return this.#cancelReason !== undefined || this.#lost;
    }
    /**
     * extend checkpoints the job: the lease then ends `leaseMs` after the
     * service's now, and `progress`, when given, is stored. Its answer says
     * whether a cancel was requested, which the job records. It gives up after
     * a third of the lease (ConnectionFailed), so that a hung extend is sent
     * again before the lease lapses.
     */
    async extend(options = {}) {
        const leaseMs = options.leaseMs ?? this.#leaseMs;
        const answer = await this.#call("lease", { token: this.token, lease_ms: leaseMs, progress: options.progress }, {
            timeoutMs: Math.min(this.#client.timeoutMs, Math.max(1, Math.floor(leaseMs / 3))),
            signal: options.signal,
        });
        if (answer.cancel_requested) {
            this.#cancelReason = answer.cancel_reason ?? "";
        }
        return answer;
    }
    /** complete finishes the job with `result` (any JSON value; undefined for none). */
    complete(result, options = {}) {
        return this.#call("complete", { token: this.token, result }, { headers: minimalHeader(options.minimal) });
    }
    /**
     * fail reports that the attempt failed with `error` (kept as the job's
     * last_error): the service retries the job with its backoff, or makes it
     * dead when no attempt is left, or cancelled when a cancel was requested.
     * A lone surrogate in `error` (half of a UTF-16 pair, such as a message
     * cut in the middle of an emoji) is sent as U+FFFD: the service refuses
     * a body that holds one.
     */
    fail(error, options = {}) {
        const body = { token: this.token, error: wellFormed(error), retry_in_ms: options.retryInMs, fatal: options.fatal };
        return this.#call("fail", body, { headers: minimalHeader(options.minimal) });
    }
    /**
     * snooze puts the job back for `delayMs` (pending at once for 0) without
     * spending its attempt; a job whose cancel was requested is cancelled
     * instead. The token holds nothing afterwards.
     */
    snooze(delayMs) {
        return this.#call("snooze", { token: this.token, delay_ms: delayMs });
    }
    /** log appends lines to the job's log (1 to 1,000 a call, each at most 2,048 bytes). */
    log(...lines) {
        return this.#call("logs", { token: this.token, lines });
    }
    /** #call sends a holder's call to the job's route `verb`, and marks the job lost on Stale or Gone. */
    async #call(verb, body, options = {}) {
        try {
            return await this.#client.request("POST", `${jobPath(this.queue, this.id)}/${verb}`, { ...options, body });
        }
        catch (err) {
            if (err instanceof Stale || err instanceof Gone) {
                this.#lost = true;
            }
            throw err;
        }
    }
}
/** minimalHeader asks, when minimal, for an answer without the job's payload and result. */
function minimalHeader(minimal) {
    return minimal ? { Prefer: "return=minimal" } : {};
}
