// Signing: byte-identical requests borrow an earlier second rather than
// wait for the next one, the memory of the signatures sent is the
// process's (shared by Clients with one key), the method is signed and sent
// upper-cased, and the service takes a burst of identical signed claims.

import assert from "node:assert/strict";
import { createHmac, randomUUID } from "node:crypto";
import { describe, test } from "node:test";
import { Client } from "echo-mq";
import { withFake } from "./fake-service.mjs";
import { config, retrying, uniqueQueue } from "./support.mjs";

/** okAnswer answers every request of a fake service with an empty JSON object. */
const okAnswer = () => ({ body: {} });

/** stampsOf reads each request's timestamp and signature. */
function stampsOf(requests) {
  return requests.map((r) => ({ second: Number(r.headers["x-emq-timestamp"]), signature: r.headers["x-emq-signature"] }));
}

/** nowSecond is the current Unix second. */
const nowSecond = () => Math.floor(Date.now() / 1000);

describe("signing", () => {
  test("31 identical requests take 31 seconds' stamps, now and back, without waiting; two Clients of one key share them", async () => {
    const key = `key-${randomUUID()}`; // a memory of its own, apart from the other tests'
    await withFake(okAnswer, async (fake) => {
      const [first, second] = [0, 1].map(() => new Client({ baseUrl: fake.baseUrl, signingKey: key }));
      const startSecond = nowSecond();
      for (let i = 0; i < 31; i++) {
        await (i % 2 === 0 ? first : second).request("POST", "/same", { body: { same: true } });
      }
      const endSecond = nowSecond();
      // waiting for a second each would take 30 s; a slow machine takes a few.
      assert.ok(endSecond - startSecond <= 5, `31 requests took ${endSecond - startSecond} s: signing waited`);
      const stamps = stampsOf(fake.requests).map((s) => s.second);
      assert.equal(new Set(stamps).size, 31, "each request has a second of its own");
      assert.ok(stamps[0] >= startSecond, `the first is stamped ${stamps[0]}, before now (${startSecond})`);
      for (const stamp of stamps) {
        assert.ok(stamp <= endSecond && stamp >= startSecond - 30, `stamp ${stamp} is not within 30 s before ${startSecond}..${endSecond}`);
      }
      const borrowed = stamps.filter((stamp) => stamp < startSecond).length;
      assert.ok(borrowed >= 31 - (endSecond - startSecond + 1), `only ${borrowed} stamps are earlier seconds`);
    });
  });

  test("once 31 seconds are taken, the next identical request waits for the next second", async () => {
    const key = `key-${randomUUID()}`;
    await withFake(okAnswer, async (fake) => {
      const client = new Client({ baseUrl: fake.baseUrl, signingKey: key });
      const began = Date.now();
      for (let i = 0; i < 33; i++) {
        await client.request("POST", "/same", { body: { same: true } });
      }
      // two seconds hold 32 stamps at most, so the 33rd is sent in a third.
      assert.ok(Date.now() - began >= 1000, `33 requests took ${Date.now() - began} ms: want a second at least`);
      const signed = stampsOf(fake.requests).map((s) => `${s.second} ${s.signature}`);
      assert.equal(new Set(signed).size, 33, "no signature was sent twice");
    });
  });

  test("a request is signed and sent with its method upper-cased", async () => {
    const key = `key-${randomUUID()}`;
    await withFake(okAnswer, async (fake) => {
      await new Client({ baseUrl: fake.baseUrl, signingKey: key }).request("post", "/queues/q/pause?x=1", { body: { a: 1 } });
      const [request] = fake.requests;
      assert.equal(request.method, "POST");
      const stamp = request.headers["x-emq-timestamp"];
      const want = createHmac("sha256", key).update(`${stamp}.POST./queues/q/pause?x=1.${request.body}`).digest("hex");
      assert.equal(request.headers["x-emq-signature"], `sha256=${want}`);
      assert.equal(request.headers.authorization, undefined, "no key is sent");
    });
  });

  test("the service takes 31 identical signed claims sent at once by two Clients, none waiting for a second", async () => {
    const queue = uniqueQueue("signed burst");
    const clients = [0, 1].map(() => new Client({ baseUrl: config.url, signingKey: config.workerKey }));
    const began = Date.now();
    const answers = await Promise.all(
      Array.from({ length: 31 }, (_, i) => retrying(() => clients[i % 2].claim(queue, { count: 1, worker: "burst" }))),
    );
    assert.deepEqual(answers, Array(31).fill([]));
    assert.ok(Date.now() - began < 10_000, `31 claims took ${Date.now() - began} ms: waiting for a second each takes 30 s`);
  });
});
