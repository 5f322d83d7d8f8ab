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

/** A problem+json answer (RFC 9457): status, code and detail. */
export class Problem extends Error {
  constructor(status, body) {
    super(body.detail || body.title || `the service answered ${status}`);
    this.status = status;
    this.code = body.code || "";
  }
}

/**
 * Calls the API and returns its decoded JSON answer. Throws KeyNeeded on a
 * 401, Problem on any other error answer, and Error when the service cannot
 * be reached.
 */
export async function call(method, path) {
  const headers = { Accept: "application/json" };
  const key = storedKey();
  if (key) {
    headers.Authorization = `Bearer ${key}`;
  }
  let res;
  try {
    res = await fetch(path, { method, headers, cache: "no-store" });
  } catch {
    throw new Error("The service cannot be reached.");
  }
  if (res.status === 401) {
    throw new KeyNeeded("An API key is needed.");
  }
  const body = await res.json().catch(() => ({}));
  if (!res.ok) {
    throw new Problem(res.status, body);
  }
  return body;
}

/** Every queue, following next_cursor until the last page. */
export async function allQueues() {
  const queues = [];
  let cursor = null;
  do {
    const query = cursor === null ? "" : `?cursor=${encodeURIComponent(cursor)}`;
    const page = await call("GET", `/queues${query}`);
    queues.push(...page.queues);
    cursor = page.next_cursor;
  } while (cursor !== null && cursor !== undefined);
  return queues;
}

/** The path of one queue, its name escaped. */
export function queuePath(name) {
  return `/queues/${encodeURIComponent(name)}`;
}
