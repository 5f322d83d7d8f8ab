// What the package refuses itself, at once and before any request: a queue
// name or job id no path can hold, and work() options out of range. And
// what it asks of the service within its limits: a claim's count is at
// most 100, whatever the concurrency.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Client } from "echo-mq";
import { withFake } from "./fake-service.mjs";
import { capturingLogger, waitUntil } from "./support.mjs";

/** emptyClaims answers every request of a fake service as a claim that found no job. */
const emptyClaims = () => ({ body: { jobs: [] } });

describe("names no path can hold", () => {
  const names = { '"."': ".", '".."': "..", "a lone surrogate": "job-\ud800", "a lone low surrogate": "\udc00" };
  for (const [what, name] of Object.entries(names)) {
    test(`a queue name or job id of ${what} is a TypeError, and nothing is sent`, async () => {
      await withFake(emptyClaims, async (fake) => {
        const client = new Client({ baseUrl: fake.baseUrl, key: "k" });
        const calls = {
          "get(queue)": () => client.get(name, "j"),
          "get(id)": () => client.get("q", name),
          "cancel(id)": () => client.cancel("q", name),
          "logs(id)": () => client.logs("q", name),
          "enqueue(queue)": () => client.enqueue(name, {}),
          "enqueueMany(queue)": () => client.enqueueMany(name, [{ payload: {} }]),
          "claim(queue)": () => client.claim(name),
          "work(queue)": () => client.work(name, () => 1, { signal: AbortSignal.timeout(5000), logger: capturingLogger().logger }),
        };
        for (const [call, run] of Object.entries(calls)) {
          await assert.rejects(run(), TypeError, call);
        }
        assert.equal(fake.requests.length, 0, "a request was sent");
      });
    });
  }

  test("a name with a surrogate pair (an emoji) is no lone surrogate: it is sent, escaped", async () => {
    await withFake(
      () => ({ body: { id: "x" } }),
      async (fake) => {
        await new Client({ baseUrl: fake.baseUrl }).get("q", "job-\u{1F600}");
        assert.equal(fake.requests[0].path, "/queues/q/jobs/job-%F0%9F%98%80");
      },
    );
  });
});

describe("work() options", () => {
  const wrong = {
    concurrency: [0, -1, 1.5, NaN, Infinity, "2"],
    leaseMs: [99, 86_400_001, 1000.5, NaN, -Infinity],
    waitMs: [-1, 30_001, 0.5, NaN, Infinity],
  };
  for (const [option, values] of Object.entries(wrong)) {
    test(`${option} ${values.map(String).join(", ")}: each rejects with a TypeError at once, claiming nothing`, async () => {
      await withFake(emptyClaims, async (fake) => {
        const client = new Client({ baseUrl: fake.baseUrl });
        for (const value of values) {
          const stop = AbortSignal.timeout(5000); // a loop that started anyway still ends
          await assert.rejects(client.work("q", () => 1, { [option]: value, signal: stop }), TypeError, `${option} ${String(value)}`);
          assert.ok(!stop.aborted, `${option} ${String(value)}: work() ran until stopped`);
        }
        assert.equal(fake.requests.length, 0, "a claim was sent");
      });
    });
  }

  test("a handler that is no function is a TypeError at once", async () => {
    await assert.rejects(new Client({ baseUrl: "http://127.0.0.1:1" }).work("q", "not a function"), TypeError);
  });

  test("the edges of each range are taken, and sent as given", async () => {
    await withFake(emptyClaims, async (fake) => {
      const stop = new AbortController();
      const working = new Client({ baseUrl: fake.baseUrl }).work("q", () => 1, {
        concurrency: 1,
        leaseMs: 100,
        waitMs: 0,
        signal: stop.signal,
        logger: capturingLogger().logger,
      });
      await waitUntil("a claim", () => fake.requests.length >= 1, 5000);
      stop.abort();
      await working;
      assert.deepEqual(fake.requests[0].json, { count: 1, lease_ms: 100, wait_ms: 0, worker: fake.requests[0].json.worker });
    });
    for (const options of [{ leaseMs: 86_400_000, waitMs: 30_000 }]) {
      await withFake(emptyClaims, async (fake) => {
        const stop = new AbortController();
        const working = new Client({ baseUrl: fake.baseUrl }).work("q", () => 1, { ...options, signal: stop.signal });
        await waitUntil("a claim", () => fake.requests.length >= 1, 5000);
        stop.abort();
        await working;
        assert.equal(fake.requests[0].json.lease_ms, 86_400_000);
        assert.equal(fake.requests[0].json.wait_ms, 30_000);
      });
    }
  });

  test("a concurrency over 100 claims 100 jobs at most at a time", async () => {
    await withFake(emptyClaims, async (fake) => {
      const stop = new AbortController();
      const working = new Client({ baseUrl: fake.baseUrl }).work("q", () => 1, { concurrency: 250, waitMs: 0, signal: stop.signal });
      await waitUntil("a claim", () => fake.requests.length >= 1, 5000);
      stop.abort();
      await working;
      assert.equal(fake.requests[0].json.count, 100);
    });
  });
});
