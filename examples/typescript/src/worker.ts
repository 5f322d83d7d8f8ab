// An echo_mq worker in TypeScript on the echo-mq package (clients/node), the
// same worker as examples/node/worker.mjs, typed by the package's types:
// work() claims jobs with a long poll, extends each lease while handle()
// runs, completes or fails the job (or snoozes it: work that cannot go ahead
// yet is put back for later, not failed), backs off while the service is
// unavailable, and on SIGTERM or SIGINT finishes the job in hand; then this
// file exits 0 (a second signal exits at once).
//
//   npm ci && npm run build && node dist/worker.js   (settings: the EMQ_* variables below)
//
// Put your own work in handle(); examples/README.md describes the loop.

import { type ClaimedJob, Client, type Handler, type Logger, Snooze } from "echo-mq";
import { constants, hostname } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";

const client = new Client({
  baseUrl: process.env.EMQ_URL || "http://127.0.0.1:8080",
  key: process.env.EMQ_API_KEY || undefined,
});
const queue = process.env.EMQ_QUEUE || "jobs";

/** Result is what handle() returns: work() completes the job with it. */
interface Result {
  worked_ms: number;
  by: string;
}

/**
 * fieldsOf reads a payload (any JSON value: the package types it unknown) as
 * an object's fields, or none when it is not an object, so that handle() can
 * look for the fields it knows.
 */
function fieldsOf(payload: unknown): Record<string, unknown> {
  return typeof payload === "object" && payload !== null && !Array.isArray(payload) ? (payload as Record<string, unknown>) : {};
}

/**
 * handle does the work of one job and returns its result. This is the
 * function to replace with your own work. It throws to fail the job, or
 * throws a Snooze(delayMs) when the work cannot go ahead yet: the job comes
 * back after delayMs, and the attempt is not spent.
 *
 * The example work: the payload {"ms": N} works for N milliseconds (default
 * 100) in steps of at most 100 ms, and {"fail": "text"} then fails with that
 * text; {"not_before": <Unix ms>} snoozes the job until then when it comes
 * earlier. Between two steps is a safe point: signal.throwIfAborted() stops
 * the work there when the job was cancelled or lost. Check the signal as
 * often as your work can stop cleanly, or pass it on to what takes it
 * (fetch, timers/promises, streams).
 */
const handle: Handler = async (job: ClaimedJob, signal: AbortSignal): Promise<Result> => {
  const payload = fieldsOf(job.payload);
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
  return { worked_ms: worked, by: "typescript" };
};

// Every line the loop logs goes to standard error: "claimed <id>",
// "completed <id>", "backing off 0.5s: 503 EMQUNAVAILABLE", ... (debug is
// left out: its records are dropped).
const line = (message: string): void => console.error(message);
const logger: Logger = { info: line, warn: line, error: line };

// On the first SIGTERM or SIGINT work() stops claiming and finishes the job
// in hand. A second signal exits at once, with 128 + the signal's number
// (143 for SIGTERM, 130 for SIGINT), leaving the job to its lease: once that
// lapses, a sweep gives it to another worker.
const stopping = new AbortController();
for (const name of ["SIGTERM", "SIGINT"] as const) {
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
    worker: process.env.EMQ_WORKER || `typescript-${hostname()}-${process.pid}`,
    logger,
  });
  line("stopped");
} catch {
  process.exitCode = 1; // a claim refused for good: work() logged "claim refused: ..."
}
