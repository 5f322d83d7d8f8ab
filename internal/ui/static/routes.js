// routes.js: the dashboard's hash routes, so that /ui/ stays one page and
// each view has a link of its own (bookmarkable, back button works):
//
//   #/                         every queue
//   #/queues/<queue>/<state>   one queue's jobs in one state (pending when absent)
//   #/queues/<queue>/jobs/<id> one job
//   #/queues/<queue>/batches/<id> one batch
//   #/queues/<queue>/batches   the queue's batches, newest first
//
// Queue names and ids are escaped with encodeURIComponent, so a "/" or "#"
// in a name cannot break a route.

/** The states a job can be in, in the order the dashboard shows them. */
export const states = ["pending", "active", "delayed", "waiting", "completed", "dead", "cancelled"];

/** The states a job ends in: its last error, if any, is why it ended. */
export const finishedStates = new Set(["completed", "dead", "cancelled"]);

/**
 * The route of a location hash: {view: "queues"}, {view: "queue", queue,
 * state}, {view: "job", queue, id}, {view: "batch", queue, id} or
 * {view: "batches", queue}. An unknown hash is the queues view.
 */
export function parseRoute(hash) {
  const parts = hash.replace(/^#\/?/, "").split("/").filter((p) => p !== "");
  let decoded;
  try {
    decoded = parts.map(decodeURIComponent);
  } catch {
    return { view: "queues" }; // a malformed escape
  }
  if (decoded[0] !== "queues" || decoded.length < 2) {
    return { view: "queues" };
  }
  const queue = decoded[1];
  if (decoded.length === 4 && decoded[2] === "jobs") {
    return { view: "job", queue, id: decoded[3] };
  }
  if (decoded.length === 4 && decoded[2] === "batches") {
    return { view: "batch", queue, id: decoded[3] };
  }
  if (decoded.length === 3 && decoded[2] === "batches") {
    return { view: "batches", queue };
  }
  if (decoded.length === 2 || (decoded.length === 3 && states.includes(decoded[2]))) {
    return { view: "queue", queue, state: decoded[2] || "pending" };
  }
  return { view: "queues" };
}

/** The link to a queue's jobs in state (pending by default). */
export function queueHref(queue, state = "pending") {
  return `#/queues/${encodeURIComponent(queue)}/${state}`;
}

/** The link to one job. */
export function jobHref(queue, id) {
  return `#/queues/${encodeURIComponent(queue)}/jobs/${encodeURIComponent(id)}`;
}

/** The link to a queue's batches. */
export function batchesHref(queue) {
  return `#/queues/${encodeURIComponent(queue)}/batches`;
}

/** The link to one batch of a queue. */
export function batchHref(queue, id) {
  return `#/queues/${encodeURIComponent(queue)}/batches/${encodeURIComponent(id)}`;
}

/**
 * What is wrong with text as the start of a queue's name, or "" when
 * nothing is: a name is 1 to 100 of A-Z a-z 0-9 . _ -.
 */
export function prefixProblem(text) {
  if (text.length > 100) {
    return "A queue's name is at most 100 characters long.";
  }
  return /^[A-Za-z0-9._-]*$/.test(text) ? "" : "A queue's name has only the letters A-Z and a-z, the digits, and . _ -";
}
