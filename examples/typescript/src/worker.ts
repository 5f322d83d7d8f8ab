// An echo_mq worker in TypeScript, on the typed client of client.ts: the same
// loop as examples/node/worker.mjs (examples/README.md describes it). It claims
// jobs with a long poll, checkpoints each job on a timer while it works,
// completes or fails it (or snoozes it: work that cannot go ahead yet is put
// back for later, not failed), backs off while the service is unavailable,
// and on SIGTERM or SIGINT finishes the job in hand and exits 0 (a second
// signal exits at once).
//
//   npm run build && node dist/worker.js     (settings: the EMQ_* variables)
//
// Put your own work in handle().

import { constants, hostname } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import { type ClaimedJob, type CompleteRequest, EmqClient, isLost } from "./client.js";
import { withRetry } from "./retry.js";

const config = {
  url: (process.env.EMQ_URL || "http://127.0.0.1:8080").replace(/\/+$/, ""),
  queue: process.env.EMQ_QUEUE || "jobs",
  apiKey: process.env.EMQ_API_KEY || "",
  leaseMs: Number(process.env.EMQ_LEASE_MS || 30000),
  waitMs: Number(process.env.EMQ_WAIT_MS || 10000),
  worker: process.env.EMQ_WORKER || `typescript-${hostname()}-${process.pid}`,
};

const log = (line: string): void => console.error(line);
const client = new EmqClient({ url: config.url, apiKey: config.apiKey });

/** Result is what a complete stores on the job, typed by the spec. */
type Result = CompleteRequest["result"];

/**
 * Snooze is what handle() throws when the work cannot go ahead yet (a rate
 * limit upstream, a file not there yet): the job is put back for delayMs
 * without spending its attempt, instead of failing.
 */
class Snooze extends Error {
  readonly delayMs: number;

  constructor(delayMs: number) {
    const ms = Math.max(0, Math.ceil(Number(delayMs) || 0));
    super(`snooze for ${ms} ms`);
    this.delayMs = ms;
  }
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
 * the work there when the job was cancelled or lost.
 */
async function handle(job: ClaimedJob, signal: AbortSignal): Promise<Result> {
  // A payload is any JSON value; this work reads an object's "ms", "fail"
  // and "not_before".
  const payload: Record<string, unknown> =
    typeof job.payload === "object" && job.payload !== null && !Array.isArray(job.payload)
      ? (job.payload as Record<string, unknown>)
      : {};
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
  if (payload.fail) {
    throw new Error(String(payload.fail));
  }
  return { worked_ms: worked, by: "typescript" };
}

/** The reasons a job's work is stopped early (given to AbortController.abort). */
class Cancelled extends Error {}
class Lost extends Error {}

/**
 * claim asks for one job, waiting up to waitMs for one to come (a long poll).
 *
 * A claim already sent is never aborted, not even on SIGTERM: the service may
 * have leased a job to us by then, and if we dropped the answer nobody would
 * work that job until its lease lapsed and a sweep recovered it. So the worker
 * waits for the answer (waitMs at most) and works what it brings. Only a
 * service that stops answering makes it give up, 30 s after the wait (the
 * client's timeout): then a job leased meanwhile waits for its lease to lapse.
 * `stopping` only cuts short a back-off wait, when no claim is in flight.
 */
async function claim(stopping: AbortSignal): Promise<ClaimedJob[]> {
  const request = { lease_ms: config.leaseMs, wait_ms: config.waitMs, worker: config.worker };
  try {
    return await withRetry(() => client.claim(config.queue, request), {
      log,
      signal: stopping,
      retryServerErrors: true, // a 500 too: only a 4xx but 429 is final
    });
  } catch (err) {
    if (stopping.aborted) return [];
    // A bad key, queue name or setting: asking again cannot help.
    throw new Error(`claim refused: ${errorText(err)}`);
  }
}

/**
 * startCheckpoints extends the job's lease every leaseMs/3 while it is worked,
 * until the stop() it returns is called when the work has ended.
 *
 * When an extend says a cancel was requested, it aborts `work` with
 * Cancelled, and goes on extending: the work stops at its next safe point,
 * and until it does the job must not look stalled. When an extend answers 409
 * EMQSTALE or 404 EMQGONE, the job is no longer ours: it aborts `work` with
 * Lost and extends no more.
 *
 * An extend that gets no answer gives up after a third of the lease (the
 * client's timeout) and is sent again after a back-off of at most a third of
 * the lease, so a silent service never holds up the extends that follow.
 */
function startCheckpoints(job: ClaimedJob, work: AbortController): () => Promise<void> {
  const done = new AbortController();
  const interval = config.leaseMs / 3;
  let inFlight: Promise<void> | null = null;
  let lost = false;

  async function extend(): Promise<void> {
    const request = { token: job.token, lease_ms: config.leaseMs };
    try {
      const answer = await withRetry(() => client.extend(config.queue, job.id, request), {
        log,
        signal: done.signal,
        maxDelaySeconds: interval / 1000,
      });
      if (answer.cancel_requested && !work.signal.aborted) {
        work.abort(new Cancelled(answer.cancel_reason));
      }
    } catch (err) {
      if (isLost(err)) {
        lost = true;
        work.abort(new Lost(String(err)));
      } else if (!done.signal.aborted) {
        log(`extend ${job.id}: ${errorText(err)}`);
      }
    }
  }

  const timer = setInterval(() => {
    if (inFlight || lost) return; // one extend at a time; none once lost
    inFlight = extend().finally(() => (inFlight = null));
  }, interval);

  // stop ends the timer and waits for an extend in flight (at most a third
  // of the lease), so that its answer cannot race the report.
  return async function stop(): Promise<void> {
    clearInterval(timer);
    done.abort();
    await inFlight;
  };
}

/**
 * work runs handle() on one claimed job under checkpoints, then reports the
 * outcome: complete with the result, fail with the error (or "cancelled:
 * <reason>"), snooze when handle() threw a Snooze, or nothing when the job
 * was lost.
 */
async function work(job: ClaimedJob): Promise<void> {
  log(`claimed ${job.id}`);
  const abort = new AbortController();
  const stopCheckpoints = startCheckpoints(job, abort);

  let outcome: { result: Result } | { error: unknown };
  try {
    outcome = { result: await handle(job, abort.signal) };
  } catch (error) {
    outcome = { error };
  }
  await stopCheckpoints();

  const why: unknown = abort.signal.reason;
  if (why instanceof Lost) {
    log(`lost ${job.id}`);
    return;
  }
  let text: string; // the error to fail the job with
  if ("result" in outcome) {
    // Finished, also when a cancel came too late to stop it.
    const refusal = await complete(job, outcome.result);
    if (refusal === undefined) return;
    // The service took neither the result nor the job back: fail the job, so
    // that it does not stay active until its lease lapses.
    text = `result refused: ${refusal}`;
  } else if (why instanceof Cancelled) {
    text = `cancelled: ${why.message}`;
  } else if (outcome.error instanceof Snooze) {
    const refusal = await snooze(job, outcome.error.delayMs);
    if (refusal === undefined) return;
    // The service refused the snooze (a delay over a year): fail the job, so
    // that it does not stay active until its lease lapses.
    text = `snooze refused: ${refusal}`;
  } else {
    text = errorText(outcome.error);
  }
  await fail(job, text);
}

/**
 * complete reports a job's result. It returns undefined when that is done
 * (the job completed, or it was lost: 409 or 404), or else why the result was
 * refused, such as "413 EMQTOOLARGE: ..." or a result that is not JSON.
 */
async function complete(job: ClaimedJob, result: Result): Promise<string | undefined> {
  const request = { token: job.token, result };
  try {
    await withRetry(() => client.complete(config.queue, job.id, request), { log });
    log(`completed ${job.id}`);
  } catch (err) {
    if (!isLost(err)) return errorText(err);
    log(`lost ${job.id}`);
  }
  return undefined;
}

/**
 * snooze puts the job back for delayMs without spending its attempt (a job
 * whose cancel was requested is cancelled instead). It returns undefined when
 * that is done (or the job was lost: 409 or 404), or else why the service
 * refused the snooze.
 */
async function snooze(job: ClaimedJob, delayMs: number): Promise<string | undefined> {
  const request = { token: job.token, delay_ms: delayMs };
  try {
    const snoozed = await withRetry(() => client.snooze(config.queue, job.id, request), { log });
    if (snoozed.state === "cancelled") log(`cancelled ${job.id}: ${snoozed.cancel_reason ?? ""}`);
    else log(`snoozed ${job.id}: ${delayMs} ms`);
  } catch (err) {
    if (!isLost(err)) return errorText(err);
    log(`lost ${job.id}`);
  }
  return undefined;
}

/** fail reports that the job failed with `text`, and logs how the service took it. */
async function fail(job: ClaimedJob, text: string): Promise<void> {
  const request = { token: job.token, error: text };
  try {
    const failed = await withRetry(() => client.fail(config.queue, job.id, request), { log });
    if (failed.state === "cancelled") log(`cancelled ${job.id}: ${failed.cancel_reason ?? ""}`);
    else log(`failed ${job.id}: ${text}`);
  } catch (err) {
    log(isLost(err) ? `lost ${job.id}` : `report ${job.id}: ${errorText(err)}`);
  }
}

/** errorText is what a fail reports of an error: its message. */
function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * main claims and works jobs until SIGTERM or SIGINT, then finishes the job in
 * hand and returns. A second signal exits at once, with 128 + the signal's
 * number (143 for SIGTERM, 130 for SIGINT), leaving the job in hand to its
 * lease: once that lapses, a sweep gives it to another worker.
 */
async function main(): Promise<void> {
  // A malformed EMQ_URL would fail every request as if the service were down.
  if (!URL.canParse(config.url)) throw new Error(`EMQ_URL is not a URL: ${config.url}`);
  const stopping = new AbortController();
  const stop = (signal: NodeJS.Signals): void => {
    if (stopping.signal.aborted) {
      log(`stopped at once (a second ${signal})`);
      process.exit(128 + constants.signals[signal]);
    }
    log("stopping");
    stopping.abort();
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);

  while (!stopping.signal.aborted) {
    for (const job of await claim(stopping.signal)) {
      await work(job);
    }
  }
  log("stopped");
}

main().catch((err: unknown) => {
  log(errorText(err));
  process.exitCode = 1;
});
