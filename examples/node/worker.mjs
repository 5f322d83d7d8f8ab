// An echo_mq worker in plain Node.js (20 or later): no packages, only the
// built-in fetch. It claims jobs with a long poll, checkpoints each job on a
// timer while it works, completes or fails it, backs off while the service is
// unavailable, and on SIGTERM or SIGINT finishes the job in hand and exits 0.
//
//   node worker.mjs          (settings: the EMQ_* variables below)
//
// Put your own work in handle(); the rest is the loop every echo_mq worker
// runs (examples/README.md describes it).

import { hostname } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";

const config = {
  url: (process.env.EMQ_URL || "http://127.0.0.1:8080").replace(/\/+$/, ""),
  queue: process.env.EMQ_QUEUE || "jobs",
  apiKey: process.env.EMQ_API_KEY || "",
  leaseMs: Number(process.env.EMQ_LEASE_MS || 30000),
  waitMs: Number(process.env.EMQ_WAIT_MS || 10000),
  worker: process.env.EMQ_WORKER || `node-${hostname()}-${process.pid}`,
};

const log = (line) => console.error(line);

// handle does the work of one job and returns its result. This is the
// function to replace with your own work.
//
// The example work: the payload {"ms": N} works for N milliseconds (default
// 100) in steps of at most 100 ms, and {"fail": "text"} then fails with that
// text. Between two steps is a safe point: signal.throwIfAborted() stops the
// work there when the job was cancelled or lost. Check the signal as often as
// your work can stop cleanly, or pass it on to what takes it (fetch,
// timers/promises, streams).
async function handle(job, signal) {
  const payload = job.payload ?? {};
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

// The reasons a job's work is stopped early (given to AbortController.abort).
class Cancelled extends Error {}
class Lost extends Error {}

// ApiError is an answer the worker did not expect: a problem+json body
// (RFC 9457) with its status and machine-readable code.
class ApiError extends Error {
  constructor(status, problem) {
    super(`${status} ${problem?.code ?? ""}: ${problem?.detail ?? problem?.title ?? ""}`);
    this.status = status;
    this.problem = problem;
  }
}

// request sends one call to the service and returns {status, ok, body,
// headers}. A connection error throws (fetch's TypeError).
async function request(method, path, body) {
  const headers = { accept: "application/json" };
  if (body !== undefined) headers["content-type"] = "application/json";
  if (config.apiKey) headers.authorization = `Bearer ${config.apiKey}`;
  const res = await fetch(config.url + path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    // not JSON (a proxy's error page): keep null
  }
  return { status: res.status, ok: res.ok, body: parsed, headers: res.headers };
}

// call sends a request, and while the answer is a 503 (EMQUNAVAILABLE,
// EMQBUSY) or the connection fails, waits and sends the same request again:
// Retry-After seconds when the answer gives it, otherwise 0.5 s doubling up to
// 30 s. Sending a complete or a fail again is safe: the service answers a
// repeat as the first time.
//
// An abort of `signal` ends the waiting between tries (call then throws), but
// never a request already sent: see claim() for why.
async function call(method, path, body, signal) {
  let delay = 0.5;
  for (;;) {
    let why;
    let seconds = delay;
    try {
      const res = await request(method, path, body);
      if (res.status !== 503) return res;
      why = `503 ${res.body?.code ?? ""}`.trim();
      const retryAfter = Number(res.headers.get("retry-after"));
      if (retryAfter > 0) seconds = retryAfter;
    } catch (err) {
      why = err.cause?.code ?? err.message;
    }
    signal?.throwIfAborted();
    log(`backing off ${seconds}s: ${why}`);
    await sleep(seconds * 1000, undefined, { signal });
    delay = Math.min(delay * 2, 30);
  }
}

// claim asks for one job, waiting up to waitMs for one to come (a long poll).
//
// A claim already sent is never aborted, not even on SIGTERM: the service may
// have leased a job to us by then, and if we dropped the answer nobody would
// work that job until its lease lapsed and a sweep recovered it. So the
// worker waits for the answer (at most waitMs) and works what it brings.
// `stopping` only cuts short a back-off wait, when no claim is in flight.
async function claim(stopping) {
  const body = { lease_ms: config.leaseMs, wait_ms: config.waitMs, worker: config.worker };
  let res;
  try {
    res = await call("POST", `/queues/${config.queue}/claim`, body, stopping);
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

// startCheckpoints extends the job's lease every leaseMs/3 while it is worked.
// It aborts `work` with Cancelled when an extend says a cancel was requested,
// and with Lost when an extend answers 409 EMQSTALE or 404 EMQGONE: the job is
// no longer ours (its lease lapsed and it was recovered, or it was cancelled,
// removed or claimed by another), so we stop and report nothing.
// It returns stop(), which ends the timer and waits for an extend in flight.
function startCheckpoints(job, jobPath, work) {
  const done = new AbortController();
  let inFlight = null;
  let lost = false;

  async function extend() {
    const body = { token: job.token, lease_ms: config.leaseMs };
    const res = await call("POST", `${jobPath}/lease`, body, done.signal);
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
      .catch(() => {}) // the job ended while the extend was backing off
      .finally(() => (inFlight = null));
  }, config.leaseMs / 3);

  return async function stop() {
    clearInterval(timer);
    done.abort();
    await inFlight;
  };
}

// work runs handle() on one claimed job under checkpoints, then reports the
// outcome: complete with the result, fail with the error (or "cancelled:
// <reason>"), or nothing when the job was lost.
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
  if ("result" in outcome) {
    // Finished, also when a cancel came too late to stop it.
    const res = await call("POST", `${jobPath}/complete`, { token: job.token, result: outcome.result });
    report(job, res, `completed ${job.id}`);
  } else {
    const text = why instanceof Cancelled ? `cancelled: ${why.message}` : errorText(outcome.error);
    const res = await call("POST", `${jobPath}/fail`, { token: job.token, error: text });
    const line = why instanceof Cancelled ? `cancelled ${job.id}: ${why.message}` : `failed ${job.id}: ${text}`;
    report(job, res, line);
  }
}

// errorText is what a fail reports of an error: its message.
function errorText(error) {
  return error instanceof Error ? error.message : String(error);
}

// report logs how the service took a complete or a fail.
function report(job, res, line) {
  if (res.ok) log(line);
  else if (res.status === 409 || res.status === 404) log(`lost ${job.id}`);
  else log(`report ${job.id}: ${new ApiError(res.status, res.body).message}`);
}

// main claims and works jobs until SIGTERM or SIGINT, then finishes the job in
// hand and returns.
async function main() {
  const stopping = new AbortController();
  const stop = () => {
    if (stopping.signal.aborted) return;
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
