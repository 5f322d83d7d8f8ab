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
/** completeLogger fills in the methods a logger left out with no-ops. */
export function completeLogger(logger) {
    const drop = () => { };
    return {
        debug: logger.debug?.bind(logger) ?? drop,
        info: logger.info?.bind(logger) ?? drop,
        warn: logger.warn?.bind(logger) ?? drop,
        error: logger.error?.bind(logger) ?? drop,
    };
}
