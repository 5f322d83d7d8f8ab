// work(): the worker loop, as the Go client's Work and examples/node/worker.mjs
// run it: long-poll claims for the free slots, a heartbeat beside each
// handler, the outcome reported, retries with backoff, and a clean stop.
import { Backoff, backingOff, isRetryableClaim, sleep } from "./backoff.js";
import { errorText } from "./error-text.js";
import { Heartbeat } from "./heartbeat.js";
import { queuePath } from "./paths.js";
import { report } from "./report.js";
import { workSettings } from "./work-options.js";
/** maxClaimCount is the most jobs one claim may ask for (the service's limit of `count`). */
const maxClaimCount = 100;
/** idlePauseMs is the pause between empty claims when waitMs is 0, so that polling without a wait does not spin. */
const idlePauseMs = 1000;
/**
 * work runs the loop of Client.work: it resolves once `options.signal`
 * aborted and the jobs in hand were reported, and rejects with the error of a
 * claim refused for good, once the jobs in hand were reported. It rejects at
 * once, claiming nothing, with a TypeError for a handler that is not a
 * function, a queue name no path can hold, or an option out of its range.
 */
export async function work(client, queue, handler, options = {}) {
    if (typeof handler !== "function") {
        throw new TypeError(`echo-mq: work() handler: want a function, not ${typeof handler}`);
    }
    queuePath(queue);
    return new WorkLoop(client, queue, handler, workSettings(options)).run();
}
/** WorkLoop is one call of work(). */
class WorkLoop {
    #client;
    #queue;
    #handler;
    #concurrency;
    #leaseMs;
    #waitMs;
    #worker;
    #log;
    #stop;
    /** The jobs in hand: each promise settles once its job was reported. */
    #inHand = new Set();
    /** #slotFreed wakes the claim loop waiting for a free slot. */
    #slotFreed;
    constructor(client, queue, handler, settings) {
        this.#client = client;
        this.#queue = queue;
        this.#handler = handler;
        this.#concurrency = settings.concurrency;
        this.#leaseMs = settings.leaseMs;
        this.#waitMs = settings.waitMs;
        this.#worker = settings.worker;
        this.#log = settings.log;
        this.#stop = settings.stop;
    }
    /** run claims and works jobs until stopped or refused, then waits for the jobs in hand. */
    async run() {
        const wake = () => this.#slotFreed?.();
        this.#stop.addEventListener("abort", wake, { once: true });
        let refusal;
        try {
            refusal = await this.#claimLoop();
        }
        finally {
            this.#stop.removeEventListener("abort", wake);
            await Promise.all(this.#inHand);
        }
        this.#log.info(`stopped working ${this.#queue}`);
        if (refusal !== undefined) {
            throw refusal;
        }
    }
    /**
     * #claimLoop claims jobs for the free slots and starts each, until stopped
     * (it returns undefined) or a claim is refused in a way asking again cannot
     * mend (it returns that error): a wrong key, a queue name or an option the
     * service refuses.
     */
    async #claimLoop() {
        const backoff = new Backoff();
        while (await this.#freeSlot()) {
            let jobs;
            try {
                jobs = await this.#client.claim(this.#queue, {
                    count: Math.min(this.#concurrency - this.#inHand.size, maxClaimCount),
                    leaseMs: this.#leaseMs,
                    waitMs: this.#waitMs,
                    worker: this.#worker,
                });
                backoff.reset();
            }
            catch (err) {
                if (this.#stop.aborted) {
                    break;
                }
                if (isRetryableClaim(err)) {
                    const pause = backoff.pauseMs(err);
                    this.#log.warn(backingOff(pause, err));
                    await sleep(pause, this.#stop);
                    continue;
                }
                this.#log.error(`claim refused: ${errorText(err)}`);
                return err;
            }
            const claimedAt = Date.now();
            for (const job of jobs) {
                this.#start(job, claimedAt);
            }
            if (jobs.length === 0 && this.#waitMs === 0) {
                await sleep(idlePauseMs, this.#stop);
            }
        }
        this.#log.info(`stopping: finishing ${this.#inHand.size} job(s) in hand`);
        return undefined;
    }
    /** #freeSlot waits until fewer jobs than concurrency are in hand, and reports false instead once stopped. */
    async #freeSlot() {
        while (!this.#stop.aborted && this.#inHand.size >= this.#concurrency) {
            await new Promise((resolve) => (this.#slotFreed = resolve));
            this.#slotFreed = undefined;
        }
        return !this.#stop.aborted;
    }
    /** #start runs a job in a slot of its own, which frees when the job is reported. */
    #start(job, claimedAt) {
        const running = this.#run(job, claimedAt).finally(() => {
            this.#inHand.delete(running);
            this.#slotFreed?.();
        });
        this.#inHand.add(running);
    }
    /**
     * #run runs the handler on job, with a heartbeat beside it, then reports
     * its outcome. It never rejects: should anything between the claim and the
     * report throw, the job is failed with what was thrown rather than left
     * active until its lease lapses.
     */
    async #run(job, claimedAt) {
        try {
            this.#log.info(`claimed ${job.id}`);
            const handlerAbort = new AbortController();
            const heartbeat = new Heartbeat(job, this.#leaseMs, claimedAt, handlerAbort, this.#log);
            let outcome;
            try {
                outcome = { value: await this.#handler(job, handlerAbort.signal) };
            }
            catch (error) {
                outcome = { error };
            }
            await heartbeat.stop();
            await report(job, outcome, heartbeat.leaseEnd, heartbeat.lostBy, this.#log);
        }
        catch (err) {
            this.#log.error(`job ${job.id}: ${errorText(err)}`);
            await this.#failAfterFault(job, err);
        }
    }
    /** #failAfterFault fails job, unless it was lost, with the text of fault, a throw of the worker's own; it never rejects. */
    async #failAfterFault(job, fault) {
        if (job.lost) {
            return;
        }
        try {
            await job.fail(`the worker failed: ${errorText(fault)}`, { minimal: true });
            this.#log.info(`failed ${job.id}: the worker failed`);
        }
        catch (err) {
            this.#log.error(`fail ${job.id} refused: ${errorText(err)}`);
        }
    }
}
