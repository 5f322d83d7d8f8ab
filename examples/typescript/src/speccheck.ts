// speccheck works a queue of 20 jobs through openapi-fetch typed by the
// generated src/schema.d.ts alone (no hand-written client): enqueue 20,
// claim one, then extend with progress and complete with claim-next until
// nothing comes. It exits 1 unless all 20 were completed. go test
// ./examples runs it against the real service (TestGeneratedTypesWorkAQueue),
// to show that the spec's types, as openapi-typescript makes them with its
// default flags, work a queue. Run it with: node dist/speccheck.js

import createClient from "openapi-fetch";
import type { paths } from "./schema.js";

const api = createClient<paths>({ baseUrl: process.env.EMQ_URL ?? "http://127.0.0.1:8080" });
const queue = process.env.EMQ_QUEUE ?? "speccheck";
const jobs = 20;

async function main(): Promise<void> {
  for (let i = 0; i < jobs; i++) {
    const { response } = await api.POST("/queues/{queue}/jobs", {
      params: { path: { queue } },
      body: { id: `ts-${i}`, payload: { n: i } },
    });
    if (response.status !== 201) throw new Error(`enqueue ${i}: ${response.status}`);
  }
  const claimed = await api.POST("/queues/{queue}/claim", {
    params: { path: { queue } },
    body: { count: 1, lease_ms: 30000 },
  });
  let job = claimed.data?.jobs[0];
  const done = new Set<string>();
  while (job) {
    const { id, token } = job;
    if (token === undefined) throw new Error(`claimed job ${id} has no token`);
    const ext = await api.POST("/queues/{queue}/jobs/{id}/lease", {
      params: { path: { queue, id } },
      body: { token, lease_ms: 30000, progress: { step: "halfway" } },
    });
    if (!ext.data || ext.data.cancel_requested) throw new Error(`extend ${id}: ${ext.response.status}`);
    const fin = await api.POST("/queues/{queue}/jobs/{id}/complete", {
      params: { path: { queue, id } },
      body: { token, result: { ok: true }, claim: { count: 1, lease_ms: 30000 } },
    });
    if (fin.data?.state !== "completed") throw new Error(`complete ${id}: ${fin.response.status}`);
    done.add(id);
    job = fin.data.next?.[0];
  }
  if (done.size !== jobs) throw new Error(`completed ${done.size} jobs, want ${jobs}`);
  console.log(`completed ${done.size} jobs`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
