// api.js: calls to the echo_mq JSON API from the dashboard, with the API key
// the person typed in. The key lives in sessionStorage only: it is gone when
// the tab closes, and never written to a cookie or localStorage.

const keyName = "echo_mq.api_key";

/** The stored API key, or "" when there is none. */
export function storedKey() {
  return sessionStorage.getItem(keyName) || "";
}

/** Keeps key for this tab's session. */
export function storeKey(key) {
  sessionStorage.setItem(keyName, key);
}

/** Forgets the stored key. */
export function forgetKey() {
  sessionStorage.removeItem(keyName);
}

/** An answer of 401: the call needs a (different) API key. */
export class KeyNeeded extends Error {}

/** headers with the stored key added as Authorization: Bearer, when there is one. */
export function authHeaders(headers = {}) {
  const key = storedKey();
  return key ? { ...headers, Authorization: `Bearer ${key}` } : { ...headers };
}

/** A problem+json answer (RFC 9457): status, code and detail. */
export class Problem extends Error {
  constructor(status, body) {
    super(body.detail || body.title || `the service answered ${status}`);
    this.status = status;
    this.code = body.code || "";
  }
}

/**
 * Calls the API, with body (when given) sent as JSON, and returns its
 * decoded JSON answer. Throws KeyNeeded on a
 * 401, Problem on any other error answer, and Error when the service cannot
 * be reached.
 */
export async function call(method, path, body) {
  const headers = authHeaders({ Accept: "application/json" });
  const init = { method, headers, cache: "no-store" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(path, init);
  } catch {
    throw new Error("The service cannot be reached.");
  }
  if (res.status === 401) {
    throw new KeyNeeded("An API key is needed.");
  }
  const answer = await res.json().catch(() => ({}));
  if (!res.ok) {
    throw new Problem(res.status, answer);
  }
  return answer;
}

/** Who the stored key is: {role, key, open} (GET /whoami). */
export function whoami() {
  return call("GET", "/whoami");
}

/**
 * One page of the queues, by name, of those whose names start with prefix
 * ("" for all): up to limit after cursor ("" for the first page), as
 * {queues, next_cursor}.
 */
export function queuesPage(prefix, limit, cursor) {
  const query = new URLSearchParams({ limit: String(limit) });
  if (prefix) {
    query.set("prefix", prefix);
  }
  if (cursor) {
    query.set("cursor", cursor);
  }
  return call("GET", `/queues?${query}`);
}

/** The path of one queue, its name escaped. */
export function queuePath(name) {
  return `/queues/${encodeURIComponent(name)}`;
}

/** The path of one job of a queue, both escaped. */
export function jobPath(queue, id) {
  return `${queuePath(queue)}/jobs/${encodeURIComponent(id)}`;
}

/** The path of one batch of a queue, both escaped. */
export function batchPath(queue, id) {
  return `${queuePath(queue)}/batches/${encodeURIComponent(id)}`;
}

/** One page of a queue's jobs in state: {jobs, next_cursor}. */
export function jobsPage(queue, state, limit, cursor) {
  const query = new URLSearchParams({ state, limit: String(limit) });
  if (cursor) {
    query.set("cursor", cursor);
  }
  return call("GET", `${queuePath(queue)}/jobs?${query}`);
}
