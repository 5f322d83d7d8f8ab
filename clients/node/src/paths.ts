// The paths of the API's resources. Queue names and job ids only hold
// characters that are safe in a path ([A-Za-z0-9._:-]); they are escaped all
// the same, so that a name the service refuses is refused by it (400), not
// sent somewhere else. The two a URL would still move or could not hold are
// refused here, before any request: "." and ".." (a URL resolves them, so
// the request would go to another route) and a name with a lone surrogate
// (no character, so it has no URL form).

/** queuePath is the path of a queue; it throws a TypeError for a name no path can hold. */
export function queuePath(queue: string): string {
  return `/queues/${segment("queue name", queue)}`;
}

/** jobPath is the path of a job of a queue; it throws a TypeError for a name or id no path can hold. */
export function jobPath(queue: string, id: string): string {
  return `${queuePath(queue)}/jobs/${segment("job id", id)}`;
}

/** segment is name escaped as one segment of a path, or a TypeError saying why it cannot be one. */
function segment(what: string, name: string): string {
  const text = String(name);
  if (text === "." || text === "..") {
    throw new TypeError(`echo-mq: ${what} ${JSON.stringify(text)}: a URL resolves it to another path`);
  }
  if (!text.isWellFormed()) {
    throw new TypeError(`echo-mq: ${what} ${JSON.stringify(text)}: holds a lone surrogate, which is no character`);
  }
  return encodeURIComponent(text);
}
