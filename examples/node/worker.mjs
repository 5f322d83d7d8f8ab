// An echo_mq worker in plain Node.js (20 or later): no packages, only the
// built-in fetch. It claims jobs with a long poll, checkpoints each job on a
// timer while it works, completes or fails it (or snoozes it: work that
// cannot go ahead yet is put back for later, not failed), backs off while the
// service is unavailable, and on SIGTERM or SIGINT finishes the job in hand
// and exits 0 (a second signal exits at once).
//
//   node worker.mjs          (settings: the EMQ_* variables below)
//
// Put your own work in handle(); the rest is the loop every echo_mq worker
// runs (examples/README.md describes it).

import { constants, hostname } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";

const config = {
  url: (process.env.EMQ_URL || "http://127.0.0.1:8080").replace(/\/+$/, ""),
  queue: process.env.EMQ_QUEUE || "jobs",
  apiKey: process.env.EMQ_API_KEY || "",
  leaseMs: Number(process.env.EMQ_LEASE_MS || 30000),
  waitMs: Number(process.env.EMQ_WAIT_MS || 10000),
  worker: process.env.EMQ_WORKER || `node-${hostname()}-${process.pid}`,
};

// How long a request may take before it counts as a connection error (a
// claim gets its wait on top, an extend at most a third of the lease), and
// the longest pause between two tries of a request.
const REQUEST_TIMEOUT_MS = 30000;
const MAX_BACKOFF_MS = 30000;

const log = (line) => console.error(line);

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
  // A payload is any JSON value; this work reads an object's "ms", "fail"
  // and "not_before".
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
  if (payload.fail) {
    throw new Error(String(payload.fail));
  }
  return { worked_ms: worked, by: "node" };
}

// Snooze is what handle() throws when the work cannot go ahead yet (a rate
// limit upstream, a file not there yet): the job is put back for delayMs
// without spending its attempt, instead of failing.
class Snooze extends Error {
  constructor(delayMs) {
    const ms = Math.max(0, Math.ceil(Number(delayMs) || 0));
    super(`snooze for ${ms} ms`);
    this.delayMs = ms;
  }
}

// The reasons a job's work is stopped early (given to AbortController.abort).
class Cancelled extends Error {}
class Lost extends Error {}

// ConnectionError is a request that got no answer: the service could not be
// reached, the connection broke, or no answer came in time. Sending the
// request again may work.
class ConnectionError extends Error {}

// ApiError is an answer the worker did not expect: a problem+json body
// (RFC 9457) with its status and machine-readable code.
class ApiError extends Error {
  constructor(status, problem) {
    super(`${status} ${problem?.code ?? ""}: ${problem?.detail ?? problem?.title ?? ""}`);
    this.status = status;
    this.problem = problem;
  }
}

// request sends one call to the service, its body already JSON text, and
// returns {status, ok, body, headers}. It throws a ConnectionError when no
// whole answer comes within timeoutMs or the connection fails.
async function request(method, path, json, timeoutMs) {
  const headers = { accept: "application/json" };
  if (json !== undefined) headers["content-type"] = "application/json";
  if (config.apiKey) headers.authorization = `Bearer ${config.apiKey}`;
  let res, text;
  try {
    // Node's fetch would wait minutes for a silent server: bound the
    // request, and the reading of its answer, by the timeout.
    res = await fetch(config.url + path, { method, headers, body: json, signal: AbortSignal.timeout(timeoutMs) });
    text = await res.text();
  } catch (err) {
    if (err.name === "TimeoutError") throw new ConnectionError(`no answer within ${timeoutMs / 1000}s`);
    throw new ConnectionError(err.cause?.code ?? err.message);
  }
  let parsed = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    // not JSON (a proxy's error page): keep null
  }
  return { status: res.status, ok: res.ok, body: parsed, headers: res.headers };
}

// retryable tells the answers worth sending the same request again for: a
// proxy's 502 or 504, 503 (EMQUNAVAILABLE, EMQBUSY), and 429 (EMQBUSY: the
// API key has its share of waiting claims).
function retryable(status) {
  return status === 502 || status === 503 || status === 504 || status === 429;
}

// call sends a request, and while it gets no answer (a ConnectionError) or
// a retryable one, waits and sends the same request again: Retry-After
// seconds when the answer gives it, otherwise 0.5 s doubling, never longer
// than maxDelayMs. Sending a complete, a fail or a snooze again is safe: the
// service answers a repeat as the first time. A body that is not JSON (a result with
// a cycle or a BigInt) throws a TypeError before anything is sent.
//
// Options: timeoutMs bounds each request; retry(status) says which answers
// to send again for; an abort of `signal` ends the waiting between tries
// (call then throws), but never a request already sent: see claim() for why.
async function call(method, path, body, options = {}) {
  const { timeoutMs = REQUEST_TIMEOUT_MS, maxDelayMs = MAX_BACKOFF_MS, retry = retryable, signal } = options;
  const json = body === undefined ? undefined : JSON.stringify(body);
  let delay = Math.min(500, maxDelayMs);
  for (;;) {
    let why;
    let wait = delay;
    try {
      const res = await request(method, path, json, timeoutMs);
      if (!retry(res.status)) return res;
      why = `${res.status} ${res.body?.code ?? ""}`.trim();
      wait = Math.min(retryAfterMs(res.headers) ?? delay, maxDelayMs);
    } catch (err) {
      if (!(err instanceof ConnectionError)) throw err;
      why = err.message;
    }
    signal?.throwIfAborted();
    log(`backing off ${Number((wait / 1000).toFixed(3))}s: ${why}`);
    await sleep(wait, undefined, { signal });
    delay = Math.min(delay * 2, maxDelayMs);
  }
}

// retryAfterMs reads a Retry-After header given in seconds, the form the
// service sends. Its other form, an HTTP date, is ignored: the worker's own
// back-off applies then.
function retryAfterMs(headers) {
  const value = (headers.get("retry-after") ?? "").trim();
  return /^\d+$/.test(value) && Number(value) > 0 ? Number(value) * 1000 : undefined;
}

// claim asks for one job, waiting up to waitMs for one to come (a long poll).
//
// A claim already sent is never aborted, not even on SIGTERM: the service may
// have leased a job to us by then, and if we dropped the answer nobody would
// work that job until its lease lapsed and a sweep recovered it. So the
// worker waits for the answer (waitMs at most) and works what it brings.
// Only a service that stops answering makes it give up, 30 s after the wait:
// then a job leased meanwhile waits for its lease to lapse. `stopping` only
// cuts short a back-off wait, when no claim is in flight.
async function claim(stopping) {
  const body = { lease_ms: config.leaseMs, wait_ms: config.waitMs, worker: config.worker };
  let res;
  try {
    res = await call("POST", `/queues/${config.queue}/claim`, body, {
      timeoutMs: config.waitMs + REQUEST_TIMEOUT_MS,
      retry: (status) => status >= 500 || retryable(status), // a 500 too: only a 4xx but 429 is final
      signal: stopping,
    });
  } catch (err) {
    if (stopping.aborted) return [];
    throw err;
  }
  if (!res.ok) {
    // A bad key, queue name or setting: asking again cannot help.
    throw new Error(`claim refused: ${new ApiError(res.status, res.body).message}`);
  }
  return res.body.jobs;
}

// startCheckpoints extends the job's lease every leaseMs/3 while it is worked,
// until stop() is called when the work has ended.
//
// When an extend says a cancel was requested, it aborts `work` with
// Cancelled, and goes on extending: the work stops at its next safe point,
// and until it does the job must not look stalled. When an extend answers
// 409 EMQSTALE or 404 EMQGONE, the job is no longer ours (its lease lapsed and
// it was recovered, or it was cancelled, removed or claimed by another): it
// aborts `work` with Lost and extends no more.
//
// An extend that gets no answer gives up after a third of the lease and is
// sent again after a back-off of at most a third of the lease, so a silent
// service never holds up the extends that follow.
function startCheckpoints(job, jobPath, work) {
  const done = new AbortController();
  const interval = config.leaseMs / 3;
  let inFlight = null;
  let lost = false;

  async function extend() {
    const body = { token: job.token, lease_ms: config.leaseMs };
    const res = await call("POST", `${jobPath}/lease`, body, {
      timeoutMs: Math.min(interval, REQUEST_TIMEOUT_MS),
      maxDelayMs: interval,
      signal: done.signal,
    });
    if (res.status === 409 || res.status === 404) {
      lost = true;
      work.abort(new Lost(`${res.status} ${res.body?.code}`));
    } else if (!res.ok) {
      log(`extend ${job.id}: ${new ApiError(res.status, res.body).message}`);
    } else if (res.body.cancel_requested && !work.signal.aborted) {
      work.abort(new Cancelled(res.body.cancel_reason));
    }
  }

  const timer = setInterval(() => {
    if (inFlight || lost) return; // one extend at a time; none once lost
    inFlight = extend()
      .catch(() => {}) // the work ended while the extend was backing off
      .finally(() => (inFlight = null));
  }, interval);

  // stop ends the timer and waits for an extend in flight (at most a third
  // of the lease), so that its answer cannot race the report.
  return async function stop() {
    clearInterval(timer);
    done.abort();
    await inFlight;
  };
}

// work runs handle() on one claimed job under checkpoints, then reports the
// outcome: complete with the result, fail with the error (or "cancelled:
// <reason>"), snooze when handle() threw a Snooze, or nothing when the job
// was lost.
async function work(job) {
  log(`claimed ${job.id}`);
  // Job ids and queue names only hold characters that are safe in a URL
  // path ([A-Za-z0-9._:-]), so they are used as they are.
  const jobPath = `/queues/${config.queue}/jobs/${job.id}`;
  const abort = new AbortController();
  const stopCheckpoints = startCheckpoints(job, jobPath, abort);

  let outcome;
  try {
    outcome = { result: await handle(job, abort.signal) };
  } catch (error) {
    outcome = { error };
  }
  await stopCheckpoints();

  const why = abort.signal.reason;
  if (why instanceof Lost) {
    log(`lost ${job.id}`);
    return;
  }
  let text; // the error to fail the job with
  if ("result" in outcome) {
    // Finished, also when a cancel came too late to stop it.
    const refusal = await complete(job, jobPath, outcome.result);
    if (refusal === undefined) return;
    // The service took neither the result nor the job back: fail the job, so
    // that it does not stay active until its lease lapses.
    text = `result refused: ${refusal}`;
  } else if (why instanceof Cancelled) {
    text = `cancelled: ${why.message}`;
  } else if (outcome.error instanceof Snooze) {
    const refusal = await snooze(job, jobPath, outcome.error.delayMs);
    if (refusal === undefined) return;
    // The service refused the snooze (a delay over a year): fail the job, so
    // that it does not stay active until its lease lapses.
    text = `snooze refused: ${refusal}`;
  } else {
    text = errorText(outcome.error);
  }
  const res = await call("POST", `${jobPath}/fail`, { token: job.token, error: text });
  if (res.status === 409 || res.status === 404) log(`lost ${job.id}`);
  else if (!res.ok) log(`report ${job.id}: ${new ApiError(res.status, res.body).message}`);
  else if (res.body?.state === "cancelled") log(`cancelled ${job.id}: ${why?.message ?? res.body.cancel_reason}`);
  else log(`failed ${job.id}: ${text}`);
}

// complete reports a job's result. It returns undefined when that is done
// (the job completed, or it was lost: 409 or 404), or else why the result
// was refused, such as "413 EMQTOOLARGE: ..." or a result that is not JSON.
async function complete(job, jobPath, result) {
  let res;
  try {
    res = await call("POST", `${jobPath}/complete`, { token: job.token, result });
  } catch (err) {
    return err.message; // JSON.stringify refused the result
  }
  if (res.ok) log(`completed ${job.id}`);
  else if (res.status === 409 || res.status === 404) log(`lost ${job.id}`);
  else return new ApiError(res.status, res.body).message;
  return undefined;
}

// snooze puts the job back for delayMs without spending its attempt (a job
// whose cancel was requested is cancelled instead). It returns undefined when
// that is done (or the job was lost: 409 or 404), or else why the service
// refused the snooze.
async function snooze(job, jobPath, delayMs) {
  const res = await call("POST", `${jobPath}/snooze`, { token: job.token, delay_ms: delayMs });
  if (res.status === 409 || res.status === 404) log(`lost ${job.id}`);
  else if (!res.ok) return new ApiError(res.status, res.body).message;
  else if (res.body?.state === "cancelled") log(`cancelled ${job.id}: ${res.body.cancel_reason ?? ""}`);
  else log(`snoozed ${job.id}: ${delayMs} ms`);
  return undefined;
}

// errorText is what a fail reports of an error: its message.
function errorText(error) {
  return error instanceof Error ? error.message : String(error);
}

// main claims and works jobs until SIGTERM or SIGINT, then finishes the job in
// hand and returns. A second signal exits at once, with 128 + the signal's
// number (143 for SIGTERM, 130 for SIGINT), leaving the job in hand to its
// lease: once that lapses, a sweep gives it to another worker.
async function main() {
  // A malformed EMQ_URL would fail every request as if the service were down.
  if (!URL.canParse(config.url)) throw new Error(`EMQ_URL is not a URL: ${config.url}`);
  const stopping = new AbortController();
  const stop = (signal) => {
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
    const jobs = await claim(stopping.signal);
    for (const job of jobs) {
      await work(job);
    }
  }
  log("stopped");
}

main().catch((err) => {
  log(err.message);
  process.exitCode = 1;
});
