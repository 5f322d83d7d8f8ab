// Runs clients/behaviour.json, the table both client packages must pass, as
// clients/README.md says: every error entry (its class, and its provoke
// against the service), and every case (jobs enqueued, work() running the
// handler language of payload.script, the jobs' end states and the logs).

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import * as emq from "echo-mq";
import { ClaimedJob, Client, EmqError, Fatal } from "echo-mq";
import { admin, capturingLogger, config, control, levels, reader, retrying, signedWorker, uniqueQueue, waitUntil, worker } from "./support.mjs";

const table = JSON.parse(readFileSync(config.behaviour, "utf8"));

describe("errors", () => {
  let fake;
  before(async () => {
    fake = await startProblemServer();
  });
  after(() => fake.close());

  for (const entry of table.errors) {
    test(`${entry.status} ${entry.code} is ${entry.name}${entry.provoke ? `, provoked by ${entry.provoke}` : ""}`, async () => {
      const ErrorClass = emq[entry.name];
      assert.equal(typeof ErrorClass, "function", `echo-mq exports no ${entry.name}`);
      assert.ok(ErrorClass.prototype instanceof EmqError, `${entry.name} is no EmqError`);

      const answered = await rejection(fake.client(entry).get("q", "j"));
      assertError(answered, ErrorClass, entry);
      assert.equal(answered.retryAfterSeconds, 7, "the answer's Retry-After");

      if (entry.provoke !== undefined) {
        assertError(await rejection(provoke(entry.provoke)), ErrorClass, entry);
      }
    });
  }

  test("a code the table does not know is a plain EmqError", async () => {
    const err = await rejection(fake.client({ status: 418, code: "EMQTEAPOT" }).get("q", "j"));
    assert.equal(err.constructor, EmqError);
    assert.equal(err.status, 418);
    assert.equal(err.code, "EMQTEAPOT");
  });
});

describe("cases", () => {
  for (const c of table.cases) {
    test(c.name, { timeout: 120_000 }, () => runCase(c));
  }
});

/** assertError checks that err is of ErrorClass and carries the entry's status and code. */
function assertError(err, ErrorClass, entry) {
  assert.ok(err instanceof ErrorClass, `${err?.name}: ${err?.message}, want a ${entry.name}`);
  assert.equal(err.name, entry.name);
  assert.equal(err.status, entry.status);
  assert.equal(err.code, entry.code);
}

/** rejection awaits a promise that must reject, and returns what it rejected with. */
async function rejection(promise) {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  assert.fail("the call succeeded, want an error");
}

/**
 * startProblemServer starts a stand-in for the service that answers every
 * request with the problem of the status and code its client was made for
 * (Retry-After: 7), so that each code's class is checked, also the ones the
 * service cannot be made to answer.
 */
async function startProblemServer() {
  const server = createServer((request, response) => {
    const [, status, code] = request.url.split("/");
    const problem = { type: "about:blank", title: code, status: Number(status), detail: `a ${code} problem`, code };
    response.writeHead(Number(status), { "Content-Type": "application/problem+json", "Retry-After": "7" });
    response.end(JSON.stringify(problem));
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${server.address().port}`;
  return {
    client: (entry) => new Client({ baseUrl: `${base}/${entry.status}/${entry.code}` }),
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

/** provoke makes the service refuse a call as the table's provoke names, and returns that call's promise. */
async function provoke(name) {
  const queue = uniqueQueue(`provoke ${name}`);
  switch (name) {
    case "complete_with_wrong_token": {
      const job = await claimOne(queue);
      return new ClaimedJob(worker, { ...job.data, token: job.token + 1 }).complete("not mine");
    }
    case "get_missing_job":
      return admin.get(queue, "never-enqueued");
    case "cancel_completed_job": {
      const job = await claimOne(queue);
      await job.complete("done");
      return admin.cancel(queue, job.id, { reason: "too late" });
    }
    case "claim_count_zero":
      return worker.claim(queue, { count: 0 });
    case "wrong_key":
      return new Client({ baseUrl: config.url, key: "not-a-key-the-service-knows" }).get(queue, "any");
    case "reader_key_enqueues":
      return reader.enqueue(queue, { by: "reader" });
    default:
      throw new Error(`unknown provoke ${JSON.stringify(name)}: the suite must learn it (clients/README.md)`);
  }
}

/** claimOne enqueues a job and claims it with the worker key. */
async function claimOne(queue) {
  await retrying(() => admin.enqueue(queue, { n: 1 }, { id: "provoked" }));
  const jobs = await retrying(() => worker.claim(queue, { count: 1, waitMs: 1000 }));
  assert.equal(jobs.length, 1, "the claim brought no job");
  return jobs[0];
}

/**
 * runCase enqueues a case's jobs on a queue of its own, runs work() on them
 * until every job is in its expected state, stops it (work() must resolve),
 * then checks each expected field of each job, and the logs.
 */
async function runCase(c) {
  const queue = uniqueQueue(c.name);
  for (const job of c.jobs) {
    await retrying(() => admin.enqueue(queue, job.payload, { ...job.options, id: job.id }));
  }
  const { logger, records } = capturingLogger();
  const troubles = []; // what went wrong in a script: fails the case at once
  const stop = new AbortController();
  const client = c.auth === "signed" ? signedWorker : worker;
  const handler = (job, signal) =>
    runScript(job, signal).catch((err) => {
      if (err instanceof ScriptTrouble) troubles.push(err);
      throw err;
    });
  let ended;
  const working = client
    .work(queue, handler, {
      concurrency: c.work?.concurrency ?? 1,
      leaseMs: c.work?.lease_ms ?? 30_000,
      waitMs: 1000, // a stop lets the claim in flight answer: keep it short
      signal: stop.signal,
      logger,
    })
    .then(
      () => (ended = { ok: true }),
      (err) => (ended = { err }),
    );

  try {
    await waitUntil(`the jobs of "${c.name}" in their expected states`, async () => {
      if (troubles.length > 0) throw troubles[0];
      if (ended) throw new Error(`work() ended before the jobs did: ${ended.err ?? "resolved"}`);
      for (const [id, want] of Object.entries(c.expect)) {
        const job = await admin.get(queue, id);
        if (want.state !== undefined && job.state !== want.state) return false;
      }
      return true;
    });
  } finally {
    stop.abort();
    await working;
  }
  assert.deepEqual(ended, { ok: true }, `work() must resolve once stopped: ${ended.err?.stack ?? ""}`);

  for (const [id, want] of Object.entries(c.expect)) {
    await checkJob(queue, id, want);
  }
  for (const expected of c.logs ?? []) {
    assert.ok(
      records.some((record) => matches(record, expected)),
      `no log record matches ${JSON.stringify(expected)}; the records:\n${records.map((r) => `${r.level}: ${r.message}`).join("\n")}`,
    );
  }
}

/** checkJob checks each expected field of a job: a field of the job, or the lines of its log. */
async function checkJob(queue, id, want) {
  const job = await retrying(() => admin.get(queue, id));
  for (const [field, value] of Object.entries(want)) {
    if (field === "log_lines") {
      const lines = await retrying(() => admin.logs(queue, id));
      assert.deepEqual(
        lines.map((l) => l.line),
        value,
        `job ${id}: its log`,
      );
    } else {
      assert.deepEqual(job[field], value, `job ${id}: ${field} in ${JSON.stringify(job)}`);
    }
  }
}

/** matches tells whether a log record is at the level or above, and names the job id or contains the text. */
function matches(record, expected) {
  const level = expected.level === "warning" ? "warn" : expected.level;
  assert.ok(level in levels, `unknown log level ${JSON.stringify(expected.level)}`);
  if (levels[record.level] < levels[level]) return false;
  if (expected.job !== undefined && !namesJob(record.message, expected.job)) return false;
  if (expected.contains !== undefined && !record.message.includes(expected.contains)) return false;
  return true;
}

/** namesJob tells whether message names job id as a whole word (so "lost" is not found in "after-lost"). */
function namesJob(message, id) {
  const idChar = "[A-Za-z0-9._:-]";
  const escaped = id.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return new RegExp(`(^|(?!${idChar}).)${escaped}(?!${idChar})`).test(message);
}

/** ScriptTrouble is a step the suite cannot run, or one whose call went wrong: it fails the case at once. */
class ScriptTrouble extends Error {}

/** runScript is the handler: it runs payload.script, step by step (clients/README.md). */
async function runScript(job, signal) {
  for (const step of job.payload.script) {
    switch (step.do) {
      case "return":
        return step.value;
      case "raise":
        throw new Error(step.message);
      case "raise_on_attempt":
        if (job.attempts === step.attempt) throw new Error(step.message);
        break;
      case "fatal":
        throw new Fatal(step.message);
      case "sleep":
        await sleep(step.ms);
        break;
      case "cancel":
        await cancelOwnJob(job, step.reason);
        break;
      case "await_cancel":
        await awaitCancel(job, signal, step.ms);
        break;
      case "steal":
        await trouble("steal", () => control("/steal", { queue: job.queue, id: job.id }));
        break;
      case "restart_redis":
        await trouble("restart_redis", () => control("/restart-redis", { down_ms: step.down_ms }));
        break;
      case "log":
        await job.log(...step.lines);
        break;
      default:
        throw new ScriptTrouble(`unknown step ${JSON.stringify(step)}: the suite must learn it (clients/README.md)`);
    }
  }
  return undefined;
}

/** cancelOwnJob asks the service, with the admin key, to cancel the job the handler runs: a 202, as the job is active. */
async function cancelOwnJob(job, reason) {
  const answer = await trouble("cancel", () => admin.cancel(job.queue, job.id, { reason }));
  if (answer.state !== "active" || answer.cancel_requested !== true) {
    throw new ScriptTrouble(`cancel of active job ${job.id}: answered ${JSON.stringify(answer)}, want 202 cancel requested`);
  }
}

/** awaitCancel looks at the job's cancellation every 20 ms; once seen, it stops as a handler should. */
async function awaitCancel(job, signal, ms) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (job.cancelled()) {
      signal.throwIfAborted();
      throw new ScriptTrouble(`job ${job.id}: cancelled() is true, but the handler's signal is not aborted`);
    }
    await sleep(20);
  }
  throw new Error("no cancel seen");
}

/** trouble runs a call a step makes, turning its failure into a ScriptTrouble. */
async function trouble(what, call) {
  try {
    return await call();
  } catch (err) {
    throw new ScriptTrouble(`${what}: ${err.message}`, { cause: err });
  }
}
