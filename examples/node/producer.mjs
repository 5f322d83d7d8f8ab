// Enqueues echo_mq jobs from the command line, in plain Node.js (20 or later).
//
//   node producer.mjs '{"ms": 2000}' '{"fail": "boom"}'   (one job per argument)
//   node producer.mjs                                     (one job {"ms": 1000})
//
// Each argument is a job's payload as JSON. Prints "<id> <state>" per job.
// Reads EMQ_URL, EMQ_QUEUE and EMQ_API_KEY like the worker.

const url = (process.env.EMQ_URL || "http://127.0.0.1:8080").replace(/\/+$/, "");
const queue = process.env.EMQ_QUEUE || "jobs";
const apiKey = process.env.EMQ_API_KEY || "";

// enqueue adds one job with the given payload and returns the job as the
// service answered it (201 new, or 200 when the id existed).
async function enqueue(payload) {
  const headers = { "content-type": "application/json", accept: "application/json" };
  if (apiKey) headers.authorization = `Bearer ${apiKey}`;
  const res = await fetch(`${url}/queues/${queue}/jobs`, {
    method: "POST",
    headers,
    body: JSON.stringify({ payload }),
  });
  const body = await res.json().catch(() => null);
  if (!res.ok) {
    // Every error is a problem+json body with a machine-readable code.
    throw new Error(`${res.status} ${body?.code ?? ""}: ${body?.detail ?? body?.title ?? ""}`);
  }
  return body;
}

async function main() {
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
