// role.js: what the API key in use may do, as GET /whoami tells it, so that
// the views render only the actions the key's role allows. It hides buttons,
// nothing more: the service still checks every call, and a 403 (the role may
// change server-side) is shown like any other error.

import { whoami } from "./api.js";

/**
 * The least role each action needs: cancel is a worker-plane verb, the rest
 * are the operator's (pause and resume also act on a group or a schedule;
 * run runs a schedule now; push sets a queue's push target).
 */
const needs = {
  pause: "admin",
  resume: "admin",
  drain: "admin",
  obliterate: "admin",
  retry: "admin",
  promote: "admin",
  edit: "admin", // a job's payload, priority and run time (PATCH)
  remove: "admin",
  settings: "admin",
  run: "admin",
  push: "admin",
  cancel: "worker",
};

/** Roles from least to most allowed. */
const rank = { reader: 1, worker: 2, admin: 3 };

let current = null; // {role, key, open} as /whoami answered; null while unknown

/**
 * Asks the service who the stored key is. On any failure (no key, a refused
 * key, the service down) the role is unknown and nothing is allowed.
 */
export async function loadRole() {
  try {
    current = await whoami();
  } catch {
    current = null;
  }
  return current;
}

/** Whether the role is known (the last /whoami answered). */
export function known() {
  return current !== null;
}

/** Whether the current key's role may do action; false for an unknown role or action. */
export function may(action) {
  if (current === null || !(action in needs)) {
    return false;
  }
  return (rank[current.role] || 0) >= rank[needs[action]];
}

/** Whether the service has no keys: anyone who can reach it may do anything. */
export function isOpen() {
  return current !== null && current.open === true;
}

/** One line for the header: who the dashboard acts as, or "" while unknown. */
export function describe() {
  if (current === null) {
    return "";
  }
  if (current.open) {
    return "Open API: no key needed";
  }
  const article = current.role === "admin" ? "an" : "a";
  return `Signed in with ${article} ${current.role} key (${current.key})`;
}
