// Where work() writes what it does.
/**
 * consoleWarnings is the logger work() uses when given none: warnings and
 * errors only, to the console's stderr, so that a worker backing off, losing
 * jobs or giving up is never silent, and a busy one writes no line per job.
 */
export const consoleWarnings = {
    warn: (message) => console.warn(`echo-mq: ${message}`),
    error: (message) => console.error(`echo-mq: ${message}`),
};
/**
 * completeLogger fills in the methods a logger left out with no-ops, and
 * drops a record whose method throws: a logger's fault must not cost a job
 * its report, nor stop a heartbeat.
 */
export function completeLogger(logger) {
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
function safely(logger, method) {
    if (typeof method !== "function") {
        return () => { };
    }
    return (message) => {
        try {
            const written = method.call(logger, message);
            if (written instanceof Promise) {
                written.catch(() => { });
            }
        }
        catch {
            // the record is lost; the work goes on
        }
    };
}
