// The paths of the API's resources. Queue names and job ids only hold
// characters that are safe in a path ([A-Za-z0-9._:-]); they are escaped all
// the same, so that a name the service refuses is refused by it (400), not
// sent somewhere else.
/** queuePath is the path of a queue. */
export function queuePath(queue) {
    return `/queues/${encodeURIComponent(queue)}`;
}
/** jobPath is the path of a job of a queue. */
export function jobPath(queue, id) {
    return `${queuePath(queue)}/jobs/${encodeURIComponent(id)}`;
}
