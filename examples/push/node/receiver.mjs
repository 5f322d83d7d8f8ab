// An echo_mq push receiver in Node.js (docs/push.md).
//
// echo_mq POSTs each job of a queue with a push target to this server. It
// verifies the delivery with the Standard Webhooks library (npm
// "standardwebhooks"), does the work, and answers: 200 with a JSON result
// completes the job, another status fails the attempt (echo_mq retries it
// under the job's backoff). A job whose payload says {"long": true} is
// answered 202 at once and worked in the background; the receiver then
// completes it itself over the worker routes, with the job's token.
//
//   npm ci
//   EMQ_PUSH_SECRET=whsec_... EMQ_URL=http://127.0.0.1:8080 PORT=9000 node receiver.mjs
import { createServer } from "node:http";
import { Webhook } from "standardwebhooks";

const url = (process.env.EMQ_URL ?? "http://127.0.0.1:8080").replace(/\/$/, "");
const apiKey = process.env.EMQ_API_KEY ?? "";
const webhook = new Webhook(process.env.EMQ_PUSH_SECRET);
const port = Number(process.env.PORT ?? 9000);

/** The work. Put yours here: the value returned is the job's result. */
function handle(job) {
  return { handled: job.id };
}

/** Completes a job this receiver answered 202, with its token. */
async function report(job, result) {
  const headers = { "Content-Type": "application/json" };
  if (apiKey) headers.Authorization = `Bearer ${apiKey}`;
  const path = `/queues/${encodeURIComponent(job.queue)}/jobs/${encodeURIComponent(job.id)}/complete`;
  const answer = await fetch(url + path, { method: "POST", headers, body: JSON.stringify({ token: job.token, result }) });
  if (!answer.ok) console.error(`complete ${job.id}: ${answer.status} ${await answer.text()}`);
}

function answer(res, status, value) {
  res.writeHead(status, { "Content-Type": "application/json" });
  res.end(JSON.stringify(value));
}

const server = createServer(async (req, res) => {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const body = Buffer.concat(chunks).toString("utf8");
  let job;
  try {
    // Checks the signature over webhook-id, webhook-timestamp and the body,
    // and refuses a timestamp more than five minutes off (a replay).
    job = webhook.verify(body, req.headers);
  } catch {
    return answer(res, 401, { error: "bad signature" });
  }
  const payload = job.payload ?? {};
  if (payload.long) {
    answer(res, 202, {});
    setTimeout(() => report(job, { ...handle(job), long: true }).catch((err) => console.error(err)), payload.ms ?? 100);
    return;
  }
  if (payload.fail) return answer(res, 500, { error: "failed on purpose" });
  answer(res, 200, handle(job));
});

server.listen(port, "127.0.0.1", () => console.log(`receiver listening on 127.0.0.1:${server.address().port}`));
