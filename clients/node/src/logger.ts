// Where work() writes what it does.

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
export const consoleWarnings: Logger = {
  warn: (message) => console.warn(`echo-mq: ${message}`),
  error: (message) => console.error(`echo-mq: ${message}`),
};

/** Log is a Logger with every method, the ones it was given and no-ops for the rest. */
export type Log = Required<Logger>;

/**
 * completeLogger fills in the methods a logger left out with no-ops, and
 * drops a record whose method throws: a logger's fault must not cost a job
 * its report, nor stop a heartbeat.
 */
export function completeLogger(logger: Logger): Log {
  return {
    debug: safely(logger, logger.debug),
    info: safely(logger, logger.info),
    warn: safely(logger, logger.warn),
    error: safely(logger, logger.error),
  };
}

/**
 * safely calls method on logger with a message, ignoring what it throws or,
 * for an async method, rejects with; a missing method drops the message.
 */
function safely(logger: Logger, method: ((message: string) => void) | undefined): (message: string) => void {
  if (typeof method !== "function") {
    return () => {};
  }
  return (message) => {
    try {
      const written: unknown = method.call(logger, message);
      if (written instanceof Promise) {
        written.catch(() => {});
      }
    } catch {
      // the record is lost; the work goes on
    }
  };
}
