// Enqueues echo_mq jobs from the command line, in Node.js (20 or later) on
// the echo-mq package (clients/node).
//
//   node producer.mjs '{"ms": 2000}' '{"fail": "boom"}'   (one job per argument)
//   node producer.mjs                                     (one job {"ms": 1000})
//
// Each argument is a job's payload as JSON. Prints "<id> <state>" per job.
// Reads EMQ_URL, EMQ_QUEUE and EMQ_API_KEY like the worker.

import { Client, isRetryable } from "echo-mq";
import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";

const client = new Client({
  baseUrl: process.env.EMQ_URL || "http://127.0.0.1:8080",
  key: process.env.EMQ_API_KEY || undefined,
});
const queue = process.env.EMQ_QUEUE || "jobs";

// enqueue adds one job with the given payload and returns the job as the
// service answered it.
//
// The job gets its id here, not from the service, so that sending it again
// is safe: when the service is unavailable (502, 503, 504) or gives no
// answer, enqueue waits (Retry-After seconds when given, otherwise 0.5 s
// doubling up to 30 s) and sends the same job again. If the first try did
// get through, the service answers the job it already has: never a second.
async function enqueue(payload) {
  const id = randomUUID();
  for (let pauseMs = 500; ; pauseMs = Math.min(pauseMs * 2, 30000)) {
    try {
      return await client.enqueue(queue, payload, { id });
    } catch (err) {
      if (!isRetryable(err)) throw err;
      const waitMs = Math.min(err.retryAfterSeconds !== undefined ? err.retryAfterSeconds * 1000 : pauseMs, 30000);
      console.error(`backing off ${waitMs / 1000}s: ${err.status || err.message} ${err.code ?? ""}`.trim());
      await sleep(waitMs);
    }
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

try {
  const args = process.argv.slice(2);
  // Read every payload before enqueueing any, so a typo enqueues nothing.
  const payloads = (args.length > 0 ? args : ['{"ms": 1000}']).map(parsePayload);
  for (const payload of payloads) {
    const job = await enqueue(payload);
    console.log(`${job.id} ${job.state}`);
  }
} catch (err) {
  console.error(`producer: ${err.message}`);
  process.exitCode = 1;
}
