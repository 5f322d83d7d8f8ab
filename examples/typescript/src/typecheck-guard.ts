// Proves that `tsc` really checks a program against the echo-mq package's
// types (its request and job shapes generated from api/openapi.yaml). Each
// line under `@ts-expect-error` is wrong and must stay a type error: if a
// change to the package or the spec made one valid (an option renamed, a
// type loosened, a method added where none should be), tsc fails with
// "Unused '@ts-expect-error' directive", and the check fails with it. The
// lines without the comment must compile: they fail when what they use
// leaves the package. Nothing here runs: the functions are never called.

import {
  type ClaimedJob,
  Client,
  type EnqueueOptions,
  type ExtendResponse,
  type Handler,
  type Job,
  type JobState,
  type Logger,
  Snooze,
  type WorkOptions,
} from "echo-mq";

// The package's README, as written: these must compile.
export const readmeEnqueue: EnqueueOptions = { id: "welcome-42", priority: 5, max_attempts: 3, backoff: { type: "exponential" } };
export const readmeWork: WorkOptions = { concurrency: 4, leaseMs: 30000, waitMs: 10000 };
export const anyResult: Handler = async () => ({ sent: true });

// @ts-expect-error: the option is max_attempts, not max_attempt.
export const misspeltEnqueueOption: EnqueueOptions = { max_attempt: 3 };

// @ts-expect-error: priority is a number, not a string.
export const priorityAsText: EnqueueOptions = { priority: "high" };

// @ts-expect-error: a backoff's type is "exponential" or "fixed".
export const unknownBackoff: EnqueueOptions = { backoff: { type: "linear" } };

// @ts-expect-error: work()'s option is concurrency.
export const misspeltWorkOption: WorkOptions = { concurency: 4 };

// @ts-expect-error: "running" is not one of the job states.
export const unknownState: JobState = "running";

// @ts-expect-error: cancel_requested is a boolean.
export const cancelAsText: ExtendResponse["cancel_requested"] = "yes";

// @ts-expect-error: a logger's methods are debug, info, warn and error.
export const misspeltLogger: Logger = { warning: (message: string) => console.error(message) };

// @ts-expect-error: a handler is given a ClaimedJob, not the payload.
export const handlerOfPayload: Handler = (payload: string) => payload.length;

// @ts-expect-error: a Client needs baseUrl, not url.
export const clientWithUrl = new Client({ url: "http://127.0.0.1:8080" });

// @ts-expect-error: a snooze's delay is in milliseconds, a number.
export const snoozeAsText = new Snooze("5s");

/** The calls are checked too. */
export async function callsAreChecked(client: Client): Promise<void> {
  await client.enqueue("emails", { to: "ada@example.com" }, { id: "welcome-42", delay_ms: 1000 });
  const [claimed] = await client.claim("emails", { leaseMs: 30000, waitMs: 10000 });
  // @ts-expect-error: claim options are named leaseMs and waitMs, not as the API names them.
  await client.claim("emails", { lease_ms: 30000 });
  // @ts-expect-error: a claim may answer no job: check before use.
  await claimed.complete({ sent: true });
  if (claimed) await finish(claimed);

  const read: Job = await client.get("emails", "welcome-42");
  // @ts-expect-error: a job read with get() has no token, so none of a holder's calls.
  await read.complete({ sent: true });
  // @ts-expect-error: a cancel's reason goes in its options.
  await client.cancel("emails", "welcome-42", "not needed");
  // @ts-expect-error: enqueue takes the queue first.
  await client.enqueue({ to: "ada@example.com" });
}

/** A claimed job's calls, as its holder makes them. */
async function finish(job: ClaimedJob): Promise<void> {
  await job.extend({ leaseMs: 30000, progress: { pct: 50 } });
  await job.fail("boom", { retryInMs: 5000 });
  // @ts-expect-error: fail takes the error's text, not the error.
  await job.fail(new Error("boom"));
  // @ts-expect-error: the option is retryInMs.
  await job.fail("boom", { retry_in_ms: 5000 });
  // @ts-expect-error: the token is fixed by the claim.
  job.token = 7;
}
