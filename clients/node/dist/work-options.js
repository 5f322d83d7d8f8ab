// The options of work(), their defaults, and the checks that refuse a wrong
// one at once rather than at the first claim (or never: a concurrency of
// 2.5 or NaN would have claimed oddly).
import { hostname } from "node:os";
import { completeLogger, consoleWarnings } from "./logger.js";
/**
 * The bounds of the numbers, which are the service's for a claim's lease_ms
 * and wait_ms (docs/api.md, "Limits"), and the defaults.
 */
const leaseBounds = { least: 100, most: 86_400_000, byDefault: 30_000 };
const waitBounds = { least: 0, most: 30_000, byDefault: 10_000 };
const concurrencyBounds = { least: 1, most: Number.MAX_SAFE_INTEGER, byDefault: 1 };
/** workSettings checks options and fills in the defaults; it throws a TypeError naming an option that is wrong. */
export function workSettings(options) {
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
function wholeNumber(name, value, bounds) {
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
