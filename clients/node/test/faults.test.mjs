// Handlers and loggers that misbehave, against the real service: whatever a
// handler throws, its job is reported (failed with a text), never left
// active; an error text with a lone surrogate gets through as U+FFFD; a
// fail the service still refuses (400) is sent again once, plainly.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Client } from "echo-mq";
import { claimedJob, withFake } from "./fake-service.mjs";
import { admin, capturingLogger, retrying, uniqueQueue, waitUntil, worker } from "./support.mjs";

/**
 * endOfThrow enqueues one job (one attempt), runs work() with a handler
 * that throws what `thrown()` makes, and returns the job once it has ended.
 */
async function endOfThrow(label, thrown, logger = capturingLogger().logger) {
  const queue = uniqueQueue(label);
  await retrying(() => admin.enqueue(queue, {}, { id: "thrower", max_attempts: 1 }));
  const stop = new AbortController();
  const working = worker.work(
    queue,
    () => {
      throw thrown();
    },
    { signal: stop.signal, waitMs: 1000, logger },
  );
  let job;
  try {
    await waitUntil(`job thrower of ${label} ended`, async () => {
      job = await admin.get(queue, "thrower");
      return job.state !== "active" && job.state !== "pending";
    }, 20_000);
  } finally {
    stop.abort();
    await working;
  }
  return job;
}

describe("a handler that throws something unusual", { concurrency: true }, () => {
  test("an Object.create(null), which has no text: the job fails, naming what was thrown", async () => {
    const job = await endOfThrow("null proto", () => Object.create(null));
    assert.equal(job.state, "dead");
    assert.equal(job.last_error, "a thrown [object Object] with no text");
  });

  test("an object whose toString throws: the job fails", async () => {
    const thrown = () => ({
      toString() {
        throw new Error("no text for you");
      },
    });
    const job = await endOfThrow("toString throws", thrown);
    assert.equal(job.state, "dead");
    assert.equal(job.last_error, "a thrown [object Object] with no text");
  });

  test("an Error whose message is no string: the job fails with the message as text", async () => {
    const job = await endOfThrow("message number", () => Object.assign(new Error("x"), { message: 42 }));
    assert.equal(job.state, "dead");
    assert.equal(job.last_error, "42");
  });

  test("a Proxy that throws when its class is asked: the job fails, saying the worker failed", async () => {
    const thrown = () =>
      new Proxy(
        {},
        {
          getPrototypeOf() {
            throw new Error("no prototype");
          },
        },
      );
    const job = await endOfThrow("hostile proxy", thrown);
    assert.equal(job.state, "dead");
    assert.match(job.last_error, /^the worker failed: no prototype$/);
  });

  test("an error whose message holds a lone surrogate: the job fails with U+FFFD in its place", async () => {
    const job = await endOfThrow("lone surrogate", () => new Error("cut \ud83d in half"));
    assert.equal(job.state, "dead");
    assert.equal(job.last_error, "cut \ufffd in half");
  });

  test("a logger whose every method throws: the jobs are still worked and reported", async () => {
    const throwing = () => {
      throw new Error("logger down");
    };
    const logger = { debug: throwing, info: throwing, warn: throwing, error: throwing };
    const job = await endOfThrow("throwing logger", () => new Error("plain"), logger);
    assert.equal(job.state, "dead");
    assert.equal(job.last_error, "plain");
  });
});

describe("fail", () => {
  test("ClaimedJob.fail sends a lone surrogate as U+FFFD, which the service takes", async () => {
    const queue = uniqueQueue("fail surrogate");
    await retrying(() => admin.enqueue(queue, {}, { id: "half", max_attempts: 1 }));
    const [job] = await retrying(() => worker.claim(queue, { waitMs: 1000 }));
    await job.fail("\udfff ends \ud800");
    const ended = await admin.get(queue, "half");
    assert.equal(ended.last_error, "\ufffd ends \ufffd");
  });

  test("a fail refused with 400 is sent once more, with a plain text that says so", async () => {
    let fails = 0;
    const answer = (request) => {
      if (request.path.endsWith("/claim")) {
        return { body: { jobs: fails === 0 ? [claimedJob("j")] : [] } };
      }
      fails += 1;
      if (fails === 1) {
        return { status: 400, body: { title: "Invalid", status: 400, detail: "error: too odd", code: "EMQINVALID" } };
      }
      return { body: { ...claimedJob("j"), state: "dead" } };
    };
    await withFake(answer, async (fake) => {
      const { logger, records } = capturingLogger();
      const stop = new AbortController();
      const working = new Client({ baseUrl: fake.baseUrl }).work("q", () => {
        throw new Error("odd");
      }, { logger, signal: stop.signal, waitMs: 0 });
      await waitUntil("two fails", () => fails >= 2, 5000);
      stop.abort();
      await working;
      const sent = fake.requests.filter((r) => r.path.endsWith("/fail")).map((r) => r.json.error);
      assert.deepEqual(sent, ["odd", "the error's text was refused: 400 EMQINVALID: error: too odd"]);
      assert.ok(records.some((r) => r.level === "warn" && r.message.includes("refused")), "the refusal is logged");
    });
  });

  test("a fail refused with 400 twice is given up with an error logged, not sent a third time", async () => {
    let claims = 0;
    const answer = (request) => {
      if (request.path.endsWith("/claim")) {
        claims += 1;
        return { body: { jobs: claims === 1 ? [claimedJob("j")] : [] } };
      }
      return { status: 400, body: { title: "Invalid", status: 400, detail: "no", code: "EMQINVALID" } };
    };
    await withFake(answer, async (fake) => {
      const { logger, records } = capturingLogger();
      const stop = new AbortController();
      const working = new Client({ baseUrl: fake.baseUrl }).work("q", () => {
        throw new Error("odd");
      }, { logger, signal: stop.signal, waitMs: 0 });
      await waitUntil("the refusal given up", () => records.some((r) => r.level === "error"), 5000);
      stop.abort();
      await working;
      assert.equal(fake.requests.filter((r) => r.path.endsWith("/fail")).length, 2);
    });
  });
});
