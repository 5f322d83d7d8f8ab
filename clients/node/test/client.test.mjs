// What clients/behaviour.json does not cover: base URLs refused, signatures
// that would collide, snoozes, a refused claim, a clean stop, and the errors
// of a request that gets no answer.

import assert from "node:assert/strict";
import { createServer } from "node:http";
import { describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { Client, ConnectionFailed, Snooze, Unauthorized } from "echo-mq";
import { admin, capturingLogger, config, retrying, signedWorker, uniqueQueue, waitUntil, worker } from "./support.mjs";

describe("Client", () => {
  test("refuses a base URL that is not http:// or https:// with a host", () => {
    for (const baseUrl of ["localhost:8080", "127.0.0.1:8080", "ftp://example.com", "http://", "/queues", "", "http://h:1/?a=1"]) {
      assert.throws(() => new Client({ baseUrl }), TypeError, `base URL ${JSON.stringify(baseUrl)}`);
    }
    for (const baseUrl of ["http://127.0.0.1:8080", "https://emq.example.com/prefix/"]) {
      assert.doesNotThrow(() => new Client({ baseUrl }), `base URL ${JSON.stringify(baseUrl)}`);
    }
  });

  test("signs identical requests in the same second apart: two identical claims both succeed", async () => {
    const queue = uniqueQueue("signed twins");
    const claim = () => retrying(() => signedWorker.claim(queue, { count: 1, worker: "twin" }));
    const [first, second] = await Promise.all([claim(), claim()]);
    assert.deepEqual([first, second], [[], []]);
    // and an identical enqueue right after: the same body again, the same id.
    const [a, b] = await Promise.all([0, 1].map(() => retrying(() => signedWorker.enqueue(queue, { n: 1 }, { id: "twin" }))));
    assert.equal(a.id, "twin");
    assert.equal(b.id, "twin");
  });

  test("a request to a port nobody listens on is ConnectionFailed, status 0", async () => {
    const client = new Client({ baseUrl: `http://127.0.0.1:${await closedPort()}`, key: "k" });
    await assert.rejects(client.get("q", "j"), (err) => err instanceof ConnectionFailed && err.status === 0);
  });

  test("a request without an answer within timeoutMs is ConnectionFailed", async () => {
    const silent = createServer(() => {}); // never answers
    await new Promise((resolve) => silent.listen(0, "127.0.0.1", resolve));
    try {
      const client = new Client({ baseUrl: `http://127.0.0.1:${silent.address().port}`, timeoutMs: 300 });
      const began = Date.now();
      await assert.rejects(client.get("q", "j"), ConnectionFailed);
      assert.ok(Date.now() - began < 5000, "gave up within the timeout");
    } finally {
      silent.closeAllConnections();
      silent.close();
    }
  });
});

describe("work()", () => {
  test("a Snooze puts the job back without spending its attempt", async () => {
    const queue = uniqueQueue("snooze");
    await retrying(() => admin.enqueue(queue, { n: 1 }, { id: "snoozy", max_attempts: 1 }));
    let runs = 0;
    const job = await workUntilEnded(queue, "snoozy", () => {
      runs += 1;
      if (runs === 1) throw new Snooze(100);
      return { runs };
    });
    assert.equal(job.state, "completed");
    assert.deepEqual(job.result, { runs: 2 });
    assert.equal(job.attempts, 1, "the snoozed attempt is not spent");
  });

  test("rejects with Unauthorized when its key is wrong", async () => {
    const { logger, records } = capturingLogger();
    const stranger = new Client({ baseUrl: config.url, key: "not-a-key-the-service-knows" });
    const stop = AbortSignal.timeout(30_000); // a loop that never rejects still ends the test
    await assert.rejects(stranger.work(uniqueQueue("wrong key"), () => "never", { logger, signal: stop }), Unauthorized);
    assert.ok(!stop.aborted, "work() rejected before it was stopped");
    assert.ok(records.some((r) => r.level === "error" && r.message.includes("401")), "the refusal is logged as an error");
  });

  test("stopping lets the job in hand finish and be reported first", async () => {
    const queue = uniqueQueue("stop");
    await retrying(() => admin.enqueue(queue, { n: 1 }, { id: "in-hand" }));
    const { logger } = capturingLogger();
    const stop = new AbortController();
    let began;
    const started = new Promise((resolve) => (began = resolve));
    let finished = false;
    const working = worker.work(
      queue,
      async () => {
        began();
        await sleep(1000);
        finished = true;
        return "finished";
      },
      { signal: stop.signal, waitMs: 1000, logger },
    );
    await started;
    stop.abort();
    await working;
    assert.ok(finished, "work() resolved before the handler finished");
    const job = await retrying(() => admin.get(queue, "in-hand"));
    assert.equal(job.state, "completed", "the job was reported before work() resolved");
    assert.equal(job.result, "finished");
  });

  test("stopping while a claim waits: the job that claim brings is still worked", async () => {
    const queue = uniqueQueue("stop in claim");
    const stop = new AbortController();
    const { logger } = capturingLogger();
    const working = worker.work(queue, () => "worked after the stop", { signal: stop.signal, waitMs: 5000, logger });
    await sleep(300);
    stop.abort();
    await admin.enqueue(queue, 1, { id: "brought" });
    await working;
    const job = await admin.get(queue, "brought");
    assert.equal(job.state, "completed", "the job the waiting claim brought was left leased to nobody");
    assert.equal(job.result, "worked after the stop");
  });

  test("backs off after a 503, as its Retry-After says, and logs a warning naming it", async () => {
    let claims = 0;
    const fake = createServer((request, response) => {
      claims += 1;
      if (claims === 1) {
        response.writeHead(503, { "Content-Type": "application/problem+json", "Retry-After": "1" });
        response.end(JSON.stringify({ type: "about:blank", title: "Unavailable", status: 503, detail: "redis", code: "EMQUNAVAILABLE" }));
        return;
      }
      response.writeHead(200, { "Content-Type": "application/json" });
      response.end(JSON.stringify({ jobs: [] }));
    });
    await new Promise((resolve) => fake.listen(0, "127.0.0.1", resolve));
    const { logger, records } = capturingLogger();
    const stop = new AbortController();
    try {
      const client = new Client({ baseUrl: `http://127.0.0.1:${fake.address().port}`, key: "k" });
      const working = client.work("q", () => "never", { signal: stop.signal, waitMs: 0, logger });
      await waitUntil("a second claim", () => claims >= 2, 10_000);
      stop.abort();
      await working;
    } finally {
      fake.close();
    }
    const warnings = records.filter((r) => r.level === "warn").map((r) => r.message);
    assert.deepEqual(warnings, ["backing off 1s: 503 EMQUNAVAILABLE"]);
  });
});

/** workUntilEnded runs work() with handler on queue until job id has ended, and returns the job. */
async function workUntilEnded(queue, id, handler) {
  const { logger } = capturingLogger();
  const stop = new AbortController();
  const working = worker.work(queue, handler, { signal: stop.signal, waitMs: 1000, logger });
  let job;
  try {
    await waitUntil(`job ${id} ended`, async () => {
      job = await admin.get(queue, id);
      return ["completed", "dead", "cancelled"].includes(job.state);
    });
  } finally {
    stop.abort();
    await working;
  }
  return job;
}

/** closedPort returns a port of 127.0.0.1 that nothing listens on (one just closed). */
async function closedPort() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}
