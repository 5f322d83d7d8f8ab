// What both test files share: the harness's settings (clients/README.md), a
// client of each role, the control server, and small helpers. It runs no test.

import { setTimeout as sleep } from "node:timers/promises";
import { Client, EmqError } from "echo-mq";

/** settings reads the EMQ_TEST_* variables the harness sets, and throws, failing the suite, when one is missing. */
function settings() {
  const names = {
    url: "EMQ_TEST_URL",
    adminKey: "EMQ_TEST_ADMIN_KEY",
    workerKey: "EMQ_TEST_WORKER_KEY",
    readerKey: "EMQ_TEST_READER_KEY",
    control: "EMQ_TEST_CONTROL",
    behaviour: "EMQ_TEST_BEHAVIOUR",
  };
  const missing = Object.values(names).filter((name) => !process.env[name]);
  if (missing.length > 0) {
    throw new Error(`${missing.join(", ")} not set: run this suite with go test ./clients -run TestNode (clients/README.md)`);
  }
  return Object.fromEntries(Object.entries(names).map(([key, name]) => [key, process.env[name]]));
}

export const config = settings();

/** admin, reader and worker are clients of each role; signedWorker signs with the worker key. */
export const admin = new Client({ baseUrl: config.url, key: config.adminKey });
export const reader = new Client({ baseUrl: config.url, key: config.readerKey });
export const worker = new Client({ baseUrl: config.url, key: config.workerKey });
export const signedWorker = new Client({ baseUrl: config.url, signingKey: config.workerKey });

let queues = 0;

/** uniqueQueue names a queue no other test (nor an earlier run on the same Redis) uses. */
export function uniqueQueue(label) {
  queues += 1;
  const slug = label.toLowerCase().replace(/[^a-z0-9]+/g, "-").slice(0, 40).replace(/^-|-$/g, "");
  return `node-${process.pid}-${Date.now().toString(36)}-${queues}-${slug}`;
}

/**
 * retrying calls fn until it does not fail for a reason worth asking again
 * for (503 and friends, no answer), for up to 60 s: another test file may be
 * restarting Redis meanwhile.
 */
export async function retrying(fn) {
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      const passing = err instanceof EmqError && [0, 429, 502, 503, 504].includes(err.status);
      if (!passing || Date.now() > deadline) {
        throw err;
      }
      await sleep(200);
    }
  }
}

/** control posts body to a route of the harness's control server and returns its JSON answer. */
export async function control(route, body) {
  const response = await fetch(config.control + route, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) {
    throw new Error(`control ${route}: ${response.status} ${text}`);
  }
  return JSON.parse(text);
}

/** Levels of the records a capturing logger keeps, by rank. */
export const levels = { debug: 0, info: 1, warn: 2, error: 3 };

/** capturingLogger returns a Logger for work() that keeps every record, and the list it keeps them in. */
export function capturingLogger() {
  const records = [];
  const logger = Object.fromEntries(
    Object.keys(levels).map((level) => [level, (message) => records.push({ level, message, at: Date.now() })]),
  );
  return { logger, records };
}

/**
 * waitUntil calls check every 100 ms until it returns true, for up to
 * timeoutMs; it throws, naming what, when the time runs out. A check that
 * throws a problem worth waiting out (503 while Redis restarts) counts as
 * false; any other throw ends the wait.
 */
export async function waitUntil(what, check, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      if (await check()) {
        return;
      }
    } catch (err) {
      if (!(err instanceof EmqError && [0, 429, 502, 503, 504].includes(err.status))) {
        throw err;
      }
      last = err;
    }
    if (Date.now() > deadline) {
      throw new Error(`${what}: not within ${timeoutMs / 1000} s${last ? ` (last: ${last.message})` : ""}`);
    }
    await sleep(100);
  }
}
