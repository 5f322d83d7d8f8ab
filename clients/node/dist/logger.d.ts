/**
 * Logger takes work()'s log records, one message each: `info` a line per job
 * (claimed, completed, failed, snoozed, cancelled) and for stopping;
 * `warn` backing off, lost jobs, refused extends, reports given up;
 * `error` a refused claim or report. `console` is one; a method left out
 * drops its records.
 */
export interface Logger {
    debug?(message: string): void;
    info?(message: string): void;
    warn?(message: string): void;
    error?(message: string): void;
}
/**
 * consoleWarnings is the logger work() uses when given none: warnings and
 * errors only, to the console's stderr, so that a worker backing off, losing
 * jobs or giving up is never silent, and a busy one writes no line per job.
 */
export declare const consoleWarnings: Logger;
/** Log is a Logger with every method, the ones it was given and no-ops for the rest. */
export type Log = Required<Logger>;
/**
 * completeLogger fills in the methods a logger left out with no-ops, and
 * drops a record whose method throws: a logger's fault must not cost a job
 * its report, nor stop a heartbeat.
 */
export declare function completeLogger(logger: Logger): Log;
