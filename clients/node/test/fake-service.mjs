// A stand-in for the service, for the faults the real one cannot be made to
// answer (a proxy's empty 200, a Retry-After date, a refused fail): a real
// HTTP server on 127.0.0.1 that answers each request as a test says and
// keeps every request it got. It runs no test.

import { createServer } from "node:http";

/**
 * startFake starts a server whose answer to each request is what
 * `answer(request)` returns: `{ status, headers, body }` (body a string, or
 * any other value sent as JSON). `request` is `{ method, path, headers,
 * body, json }` (json: the body parsed, or undefined). It resolves to
 * `{ baseUrl, requests, close }`: `requests` are those received, in order.
 */
export async function startFake(answer) {
  const requests = [];
  const server = createServer(async (incoming, response) => {
    const chunks = [];
    for await (const chunk of incoming) chunks.push(chunk);
    const body = Buffer.concat(chunks).toString("utf8");
    const request = { method: incoming.method, path: incoming.url, headers: incoming.headers, body, json: jsonOrUndefined(body) };
    requests.push(request);
    const { status = 200, headers = {}, body: out = "" } = (await answer(request)) ?? {};
    const text = typeof out === "string" ? out : JSON.stringify(out);
    const type = typeof out === "string" ? {} : { "Content-Type": "application/json" };
    response.writeHead(status, { ...type, ...headers });
    response.end(text);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    baseUrl: `http://127.0.0.1:${server.address().port}`,
    requests,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

/** jsonOrUndefined parses text as JSON, or gives undefined. */
function jsonOrUndefined(text) {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** claimedJob is a job as a claim answers it, with a token, for a fake claim's answer. */
export function claimedJob(id, extra = {}) {
  return {
    id,
    queue: "q",
    state: "active",
    payload: {},
    priority: 0,
    attempts: 1,
    max_attempts: 1,
    stalled: 0,
    cancel_requested: false,
    token: 1,
    created_at: new Date().toISOString(),
    ...extra,
  };
}

/**
 * withFake runs fn with a fake service (see startFake) and closes it after,
 * whatever fn does.
 */
export async function withFake(answer, fn) {
  const fake = await startFake(answer);
  try {
    return await fn(fake);
  } finally {
    await fake.close();
  }
}
