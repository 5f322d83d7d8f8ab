// The options of work(), their defaults, and the checks that refuse a wrong
// one at once rather than at the first claim (or never: a concurrency of
// 2.5 or NaN would have claimed oddly).

import { hostname } from "node:os";
import { type Log, type Logger, completeLogger, consoleWarnings } from "./logger.js";

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

/**
 * The bounds of the numbers, which are the service's for a claim's lease_ms
 * and wait_ms (docs/api.md, "Limits"), and the defaults.
 */
const leaseBounds = { least: 100, most: 86_400_000, byDefault: 30_000 };
const waitBounds = { least: 0, most: 30_000, byDefault: 10_000 };
const concurrencyBounds = { least: 1, most: Number.MAX_SAFE_INTEGER, byDefault: 1 };

/** workSettings checks options and fills in the defaults; it throws a TypeError naming an option that is wrong. */
export function workSettings(options: WorkOptions): WorkSettings {
  return {
    concurrency: wholeNumber("concurrency", options.concurrency, concurrencyBounds),
    leaseMs: wholeNumber("leaseMs", options.leaseMs, leaseBounds),
    waitMs: wholeNumber("waitMs", options.waitMs, waitBounds),
    worker: options.worker ?? `node-${hostname()}-${process.pid}`,
    log: completeLogger(options.logger ?? consoleWarnings),
    stop: options.signal ?? new AbortController().signal,
  };
}

/** wholeNumber is value, or the default when it is not given, when it is a whole number within bounds; else it throws a TypeError. */
function wholeNumber(name: string, value: number | undefined, bounds: { least: number; most: number; byDefault: number }): number {
  if (value === undefined) {
    return bounds.byDefault;
  }
  if (!Number.isSafeInteger(value) || value < bounds.least || value > bounds.most) {
    const range = bounds.most === Number.MAX_SAFE_INTEGER ? `${bounds.least} or more` : `${bounds.least} to ${bounds.most}`;
    const shown = typeof value === "number" ? String(value) : `a ${typeof value}`;
    throw new TypeError(`echo-mq: work() option ${name} ${shown}: want a whole number, ${range}`);
  }
  return value;
}
