// An echo_mq worker in Node.js (20 or later) on the echo-mq package
// (clients/node): work() claims jobs with a long poll, extends each lease
// while handle() runs, completes or fails the job (or snoozes it: work that
// cannot go ahead yet is put back for later, not failed), backs off while
// the service is unavailable, and on SIGTERM or SIGINT finishes the job in
// hand; then this file exits 0 (a second signal exits at once).
//
//   npm install && node worker.mjs      (settings: the EMQ_* variables below)
//
// Put your own work in handle(); examples/README.md describes the loop.

import { Client, Snooze } from "echo-mq";
import { constants, hostname } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";

const client = new Client({
  baseUrl: process.env.EMQ_URL || "http://127.0.0.1:8080",
  key: process.env.EMQ_API_KEY || undefined,
});
const queue = process.env.EMQ_QUEUE || "jobs";

// handle does the work of one job and returns its result. This is the
// function to replace with your own work. It throws to fail the job, or
// throws a Snooze(delayMs) when the work cannot go ahead yet: the job comes
// back after delayMs, and the attempt is not spent.
//
// The example work: the payload {"ms": N} works for N milliseconds (default
// 100) in steps of at most 100 ms, and {"fail": "text"} then fails with that
// text; {"not_before": <Unix ms>} snoozes the job until then when it comes
// earlier. Between two steps is a safe point: signal.throwIfAborted() stops
// the work there when the job was cancelled or lost. Check the signal as
// often as your work can stop cleanly, or pass it on to what takes it
// (fetch, timers/promises, streams).
async function handle(job, signal) {
  const payload = typeof job.payload === "object" && job.payload !== null ? job.payload : {};
  if (payload.not_before !== undefined) {
    const waitMs = Number(payload.not_before) - Date.now();
    if (waitMs > 0) throw new Snooze(waitMs);
  }
  const ms = Number(payload.ms ?? 100);
  let worked = 0;
  while (worked < ms) {
    signal.throwIfAborted(); // a safe point
    const step = Math.min(100, ms - worked);
    await sleep(step);
    worked += step;
  }
  if (payload.fail) throw new Error(String(payload.fail));
  return { worked_ms: worked, by: "node" };
}

// Every line the loop logs goes to standard error: "claimed <id>",
// "completed <id>", "backing off 0.5s: 503 EMQUNAVAILABLE", ...
const line = (message) => console.error(message);
const logger = { debug() {}, info: line, warn: line, error: line };

// On the first SIGTERM or SIGINT work() stops claiming and finishes the job
// in hand. A second signal exits at once, with 128 + the signal's number
// (143 for SIGTERM, 130 for SIGINT), leaving the job to its lease: once that
// lapses, a sweep gives it to another worker.
const stopping = new AbortController();
for (const name of ["SIGTERM", "SIGINT"]) {
  process.on(name, () => {
    if (stopping.signal.aborted) {
      line(`stopped at once (a second ${name})`);
      process.exit(128 + constants.signals[name]);
    }
    line("stopping");
    stopping.abort();
  });
}

try {
  await client.work(queue, handle, {
    signal: stopping.signal,
    leaseMs: Number(process.env.EMQ_LEASE_MS || 30000),
    waitMs: Number(process.env.EMQ_WAIT_MS || 10000),
    worker: process.env.EMQ_WORKER || `node-${hostname()}-${process.pid}`,
    logger,
  });
  line("stopped");
} catch {
  process.exitCode = 1; // a claim refused for good: work() logged "claim refused: ..."
}
