import { type Log, type Logger } from "./logger.js";
/** WorkOptions shape work(). */
export interface WorkOptions {
    /** concurrency is how many jobs run at once (a whole number, 1 or more; default 1): work() never holds more. */
    concurrency?: number;
    /**
     * signal stops the loop: no more claims, and work() resolves once the jobs
     * in hand are finished and reported. A claim already waiting is let answer
     * (within waitMs), and the jobs it brings are worked too: a claim cut short
     * could leave a job leased to nobody until its lease lapses.
     */
    signal?: AbortSignal;
    /**
     * leaseMs is the lease each claim and extend asks for (whole ms, 100 to
     * 86,400,000; default 30 s); the lease is extended every third of it.
     */
    leaseMs?: number;
    /** waitMs is how long each claim waits for a job (whole ms, 0 to 30,000; default 10 s). */
    waitMs?: number;
    /** worker is the worker's name, kept on the jobs it claims (default "node-<host>-<pid>"). */
    worker?: string;
    /** logger takes what work() logs (default: warnings and errors to the console). */
    logger?: Logger;
}
/** WorkSettings are WorkOptions checked, with every default filled in. */
export interface WorkSettings {
    concurrency: number;
    leaseMs: number;
    waitMs: number;
    worker: string;
    log: Log;
    stop: AbortSignal;
}
/** workSettings checks options and fills in the defaults; it throws a TypeError naming an option that is wrong. */
export declare function workSettings(options: WorkOptions): WorkSettings;
