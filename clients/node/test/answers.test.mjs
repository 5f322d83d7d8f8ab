// Answers the real service never gives, from a stand-in for something in
// front of it (a proxy): a 2xx that is not the JSON expected is an EmqError,
// never a SyntaxError or TypeError, and a Retry-After that is an HTTP date is
// ignored.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Client, EmqError } from "echo-mq";
import { claimedJob, withFake } from "./fake-service.mjs";
import { capturingLogger, waitUntil } from "./support.mjs";

/** isUnexpected tells the EmqError of a 2xx answer that is not the JSON expected. */
function isUnexpected(status) {
  return (err) => {
    assert.ok(err instanceof EmqError, `${err?.name}: ${err?.message}, want an EmqError`);
    assert.equal(err.status, status);
    assert.equal(err.code, "");
    assert.match(err.detail, /^the answer was not the JSON expected: /);
    return true;
  };
}

describe("a 2xx answer that is not the JSON expected", () => {
  const answers = {
    "an empty 200": { status: 200, body: "" },
    "an empty 204": { status: 204, body: "" },
    "a proxy's HTML page": { status: 200, headers: { "Content-Type": "text/html" }, body: "<html>signed in</html>" },
    "a JSON array": { status: 200, body: [1, 2] },
    "JSON null": { status: 200, body: "null" },
  };
  for (const [what, answer] of Object.entries(answers)) {
    test(`${what} is an EmqError with its status, for get, claim and request`, async () => {
      await withFake(
        () => answer,
        async (fake) => {
          const client = new Client({ baseUrl: fake.baseUrl, key: "k" });
          await assert.rejects(client.get("q", "j"), isUnexpected(answer.status));
          await assert.rejects(client.claim("q"), isUnexpected(answer.status));
          await assert.rejects(client.request("GET", "/queues"), isUnexpected(answer.status));
        },
      );
    });
  }

  test("a claim answered without its jobs, or with a job without a token, is an EmqError", async () => {
    for (const body of [{}, { jobs: "none" }, { jobs: [null] }, { jobs: [claimedJob("j", { token: undefined })] }]) {
      await withFake(
        () => ({ body }),
        async (fake) => {
          await assert.rejects(new Client({ baseUrl: fake.baseUrl }).claim("q"), isUnexpected(200), JSON.stringify(body));
        },
      );
    }
  });

  test("work() whose claim is answered an empty 200 rejects with that EmqError", async () => {
    await withFake(
      () => ({ status: 200, body: "" }),
      async (fake) => {
        const { logger } = capturingLogger();
        const stop = AbortSignal.timeout(10_000);
        await assert.rejects(new Client({ baseUrl: fake.baseUrl }).work("q", () => 1, { logger, signal: stop, waitMs: 0 }), isUnexpected(200));
      },
    );
  });
});

describe("Retry-After", () => {
  test("whole seconds are read; an HTTP date, 0 or anything else is ignored", async () => {
    const cases = [
      ["5", 5],
      ["0", undefined],
      ["1.5", undefined],
      [new Date(Date.now() + 20_000).toUTCString(), undefined],
      ["soon", undefined],
    ];
    for (const [header, want] of cases) {
      await withFake(
        () => ({ status: 503, headers: { "Retry-After": header }, body: { title: "Unavailable", status: 503, code: "EMQUNAVAILABLE" } }),
        async (fake) => {
          const err = await new Client({ baseUrl: fake.baseUrl }).get("q", "j").catch((e) => e);
          assert.equal(err.status, 503);
          assert.equal(err.retryAfterSeconds, want, `Retry-After: ${header}`);
        },
      );
    }
  });

  test("work() given a Retry-After date backs off as its own backoff says (0.5 s), not until the date", async () => {
    let claims = 0;
    const answer = () => {
      claims += 1;
      if (claims === 1) {
        const date = new Date(Date.now() + 60_000).toUTCString();
        return { status: 503, headers: { "Retry-After": date }, body: { title: "Unavailable", status: 503, code: "EMQUNAVAILABLE" } };
      }
      return { body: { jobs: [] } };
    };
    await withFake(answer, async (fake) => {
      const { logger, records } = capturingLogger();
      const stop = new AbortController();
      const working = new Client({ baseUrl: fake.baseUrl }).work("q", () => 1, { logger, signal: stop.signal, waitMs: 0 });
      await waitUntil("a second claim", () => claims >= 2, 5000);
      stop.abort();
      await working;
      assert.deepEqual(
        records.filter((r) => r.level === "warn").map((r) => r.message),
        ["backing off 0.5s: 503 EMQUNAVAILABLE"],
      );
    });
  });
});
