// Enqueues echo_mq jobs from the command line, in plain Node.js (20 or later).
//
//   node producer.mjs '{"ms": 2000}' '{"fail": "boom"}'   (one job per argument)
//   node producer.mjs                                     (one job {"ms": 1000})
//
// Each argument is a job's payload as JSON. Prints "<id> <state>" per job.
// Reads EMQ_URL, EMQ_QUEUE and EMQ_API_KEY like the worker.

import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";

const url = (process.env.EMQ_URL || "http://127.0.0.1:8080").replace(/\/+$/, "");
const queue = process.env.EMQ_QUEUE || "jobs";
const apiKey = process.env.EMQ_API_KEY || "";

// How long one request may take, and the longest pause between two tries.
const REQUEST_TIMEOUT_MS = 30000;
const MAX_BACKOFF_MS = 30000;

// enqueue adds one job with the given payload and returns the job as the
// service answered it (201 new, or 200 when the id existed).
//
// The job gets its id here, not from the service, so that sending it again
// is safe: when the service is unavailable (502, 503, 504) or gives no
// answer, enqueue waits (Retry-After seconds when given, otherwise 0.5 s
// doubling up to 30 s) and sends the same job again. If the first try did
// get through, the service answers the job it already has: never a second.
async function enqueue(payload) {
  const body = JSON.stringify({ id: randomUUID(), payload });
  let delay = 500;
  for (;;) {
    let why;
    let wait = delay;
    try {
      const res = await post(`/queues/${queue}/jobs`, body);
      if (res.status !== 502 && res.status !== 503 && res.status !== 504) return answer(res);
      why = `${res.status} ${res.body?.code ?? ""}`.trim();
      wait = Math.min(retryAfterMs(res.headers) ?? delay, MAX_BACKOFF_MS);
    } catch (err) {
      if (!(err instanceof NoAnswer)) throw err;
      why = err.message;
    }
    console.error(`backing off ${wait / 1000}s: ${why}`);
    await sleep(wait);
    delay = Math.min(delay * 2, MAX_BACKOFF_MS);
  }
}

// NoAnswer is a request that got no answer: the service could not be
// reached, the connection broke, or no answer came in time.
class NoAnswer extends Error {}

// post sends one request and returns {status, ok, body, headers}. It throws
// NoAnswer when no whole answer comes within the timeout or the connection
// fails.
async function post(path, body) {
  const headers = { "content-type": "application/json", accept: "application/json" };
  if (apiKey) headers.authorization = `Bearer ${apiKey}`;
  let res, text;
  try {
    res = await fetch(url + path, { method: "POST", headers, body, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    text = await res.text();
  } catch (err) {
    if (err.name === "TimeoutError") throw new NoAnswer(`no answer within ${REQUEST_TIMEOUT_MS / 1000}s`);
    throw new NoAnswer(err.cause?.code ?? err.message);
  }
  let parsed = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    // not JSON (a proxy's error page): keep null
  }
  return { status: res.status, ok: res.ok, body: parsed, headers: res.headers };
}

// answer returns the job of a successful answer, and throws any other.
function answer(res) {
  if (!res.ok) {
    // Every error is a problem+json body with a machine-readable code.
    const problem = res.body;
    throw new Error(`${res.status} ${problem?.code ?? ""}: ${problem?.detail ?? problem?.title ?? ""}`);
  }
  return res.body;
}

// retryAfterMs reads a Retry-After header given in seconds, the form the
// service sends; its other form, an HTTP date, is ignored.
function retryAfterMs(headers) {
  const value = (headers.get("retry-after") ?? "").trim();
  return /^\d+$/.test(value) && Number(value) > 0 ? Number(value) * 1000 : undefined;
}

async function main() {
  if (!URL.canParse(url)) throw new Error(`EMQ_URL is not a URL: ${url}`);
  const args = process.argv.slice(2);
  // Read every payload before enqueueing any, so a typo enqueues nothing.
  const payloads = (args.length > 0 ? args : ['{"ms": 1000}']).map(parsePayload);
  for (const payload of payloads) {
    const job = await enqueue(payload);
    console.log(`${job.id} ${job.state}`);
  }
}

// parsePayload reads one argument as JSON.
function parsePayload(arg) {
  try {
    return JSON.parse(arg);
  } catch (err) {
    throw new Error(`not JSON: ${arg}: ${err.message}`);
  }
}

main().catch((err) => {
  console.error(`producer: ${err.message}`);
  process.exitCode = 1;
});
