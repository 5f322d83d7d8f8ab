// Proves that `tsc` really checks the client against the spec. Each line
// under `@ts-expect-error` is wrong against today's api/openapi.yaml and must
// stay a type error: if a spec change made one valid (a field renamed, a type
// loosened, a required field made optional, a route renamed), tsc fails with
// "Unused '@ts-expect-error' directive" and the check script fails with it.
// The lines without the comment must compile: they fail when a field they use
// leaves the spec. Nothing here runs.

import createClient from "openapi-fetch";
import type {
  AddBatchJobsRequest,
  Batch,
  ClaimRequest,
  CompleteRequest,
  CreateBatchRequest,
  EnqueueRequest,
  ExtendRequest,
  ExtendResponse,
  FailRequest,
  Job,
} from "./client.js";
import type { paths } from "./schema.js";

// The README's payloads, results and progress: any JSON value, typed by the
// spec as openapi-typescript generates it with its default flags.
export const readmeEnqueue: EnqueueRequest = { id: "welcome-42", payload: { to: "ada@example.com" } };
export const anyPayloads: EnqueueRequest[] = [{ payload: 1 }, { payload: "x" }, { payload: [1, { a: null }] }, { payload: null }];
export const readmeComplete: CompleteRequest = { token: 42, result: { sent: true } };
export const readmeProgress: ExtendRequest = { token: 42, lease_ms: 30000, progress: { pct: 50 } };

// A claim's fields, as the spec names them.
export const claimRequest: ClaimRequest = { lease_ms: 30000, wait_ms: 10000, count: 1, worker: "w" };

// @ts-expect-error: the lease field is lease_ms, not lease.
export const claimWithWrongName: ClaimRequest = { lease: 30000 };

// @ts-expect-error: lease_ms is a number, not a string.
export const claimWithWrongType: ClaimRequest = { lease_ms: "30000" };

// @ts-expect-error: an extend must carry the token that fences it.
export const extendWithoutToken: ExtendRequest = { lease_ms: 30000 };

// @ts-expect-error: a fail must say what went wrong.
export const failWithoutError: FailRequest = { token: 42 };

// @ts-expect-error: error is text, not a number.
export const failWithNumber: FailRequest = { token: 42, error: 500 };

// @ts-expect-error: "running" is not one of the job states.
export const unknownState: Job["state"] = "running";

// @ts-expect-error: cancel_requested is a boolean.
export const cancelAsText: ExtendResponse["cancel_requested"] = "yes";

// A batch and a job's dependencies, as the spec names them.
export const batchRequest: CreateBatchRequest = {
  id: "import-7",
  open: true,
  jobs: [
    { id: "extract-7", payload: 1 },
    { id: "load-7", payload: 2, depends_on: ["extract-7"], on_dependency_failure: "run" },
  ],
  callback: { queue: "reports", payload: { user: 42 }, when: "success" },
};
export const waitingJob: Job["state"] = "waiting";

// @ts-expect-error: on_dependency_failure is "cancel" or "run".
export const unknownDependencyFailure: EnqueueRequest = { payload: 1, depends_on: ["a"], on_dependency_failure: "skip" };

// @ts-expect-error: an add must carry its jobs.
export const addWithoutJobs: AddBatchJobsRequest = {};

// @ts-expect-error: "waiting" is a job's state, not a batch's (open, running, done).
export const batchStateWaiting: Batch["state"] = "waiting";

/** Routes and their parameters are checked too. Never called. */
export async function routesAreChecked(): Promise<void> {
  const api = createClient<paths>({ baseUrl: "http://127.0.0.1:8080" });
  await api.POST("/queues/{queue}/jobs/{id}/lease", {
    params: { path: { queue: "q", id: "j" } },
    body: { token: 42, lease_ms: 30000 },
  });
  // @ts-expect-error: there is no such route (the extend is .../lease).
  await api.POST("/queues/{queue}/jobs/{id}/extend", { params: { path: { queue: "q", id: "j" } } });
  // @ts-expect-error: a job's route needs its id.
  await api.GET("/queues/{queue}/jobs/{id}", { params: { path: { queue: "q" } } });
  // @ts-expect-error: the cancellation check's token is a number.
  await api.GET("/queues/{queue}/jobs/{id}/cancellation", { params: { path: { queue: "q", id: "j" }, query: { token: "42" } } });
}
