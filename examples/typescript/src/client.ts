// A typed client for echo_mq's worker plane. Every route, path parameter,
// request body and answer is typed by src/schema.d.ts, which openapi-typescript
// generates from api/openapi.yaml: when the spec changes, this file (and every
// caller) is checked against the new spec by `tsc`. openapi-fetch does the
// requests; this file adds one method per verb, a timeout on every request,
// and turns refusals into EmqError and requests that got no answer into
// ConnectionError.

import createClient from "openapi-fetch";
import type { components, paths } from "./schema.js";

type Schemas = components["schemas"];

/** Job is a job as the service answers it. */
export type Job = Schemas["Job"];
/** Problem is an RFC 9457 problem+json body, with echo_mq's `code`. */
export type Problem = Schemas["Problem"];
export type EnqueueRequest = Schemas["EnqueueRequest"];
export type ClaimRequest = Schemas["ClaimRequest"];
export type ExtendRequest = Schemas["ExtendRequest"];
export type ExtendResponse = Schemas["ExtendResponse"];
export type CompleteRequest = Schemas["CompleteRequest"];
export type CompleteResponse = Schemas["CompleteResponse"];
export type FailRequest = Schemas["FailRequest"];
export type SnoozeRequest = Schemas["SnoozeRequest"];
export type CancelRequest = Schemas["CancelRequest"];
export type CancellationResponse = Schemas["CancellationResponse"];
export type LogAppendRequest = Schemas["LogAppendRequest"];
export type LogAppendResponse = Schemas["LogAppendResponse"];
/** Batch is a batch as the service answers it; `jobs` only in a create's or an add's answer. */
export type Batch = Schemas["Batch"];
export type CreateBatchRequest = Schemas["CreateBatchRequest"];
export type AddBatchJobsRequest = Schemas["AddBatchJobsRequest"];

/**
 * BatchCallbackPayload is the payload of a batch's callback job, id
 * "batch:<batch id>": the batch as it ended, and the callback's own payload
 * (null when the create gave none). The spec does not name it, so it is
 * written here; batchCallbackOf reads it from a claimed job.
 */
export interface BatchCallbackPayload {
  batch: Batch;
  payload: unknown;
}

/** BatchCallbackPrefix starts the id of a batch's callback job. */
export const BatchCallbackPrefix = "batch:";

/**
 * ClaimedJob is a job as a claim hands it out, with the token that fences
 * every later call on it. The spec's Job carries a token only in a claim's
 * answer, so the token is optional there and the client checks it is present.
 */
export type ClaimedJob = Job & { token: number };

/** DefaultTimeoutMs bounds a request: a claim gets its wait on top, an extend at most a third of its lease. */
export const DefaultTimeoutMs = 30_000;

/**
 * EmqError is a refusal from the service: the HTTP status and the problem
 * body, whose `code` says what happened (EMQSTALE, EMQGONE, EMQUNAVAILABLE...).
 */
export class EmqError extends Error {
  readonly status: number;
  readonly problem: Problem;
  /** retryAfterSeconds is the answer's Retry-After in seconds (a 503 has it), when given so. */
  readonly retryAfterSeconds: number | undefined;

  constructor(status: number, problem: Problem, retryAfterSeconds?: number) {
    super(`${status} ${problem.code ?? ""}: ${problem.detail ?? problem.title ?? ""}`);
    this.name = "EmqError";
    this.status = status;
    this.problem = problem;
    this.retryAfterSeconds = retryAfterSeconds;
  }

  /** code is the machine-readable problem code, such as "EMQSTALE". */
  get code(): string | undefined {
    return this.problem.code;
  }
}

/**
 * ConnectionError is a request that got no answer: the service could not be
 * reached, the connection broke, or no whole answer came within the request's
 * timeout. Sending the request again may work.
 */
export class ConnectionError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "ConnectionError";
  }
}

/**
 * isLost tells whether an error means the job is no longer the caller's:
 * 409 EMQSTALE (its lease lapsed and it was recovered, or it was cancelled or
 * claimed again) or 404 EMQGONE (it was removed). Drop the job: report nothing.
 */
export function isLost(err: unknown): boolean {
  return err instanceof EmqError && (err.code === "EMQSTALE" || err.code === "EMQGONE");
}

/** ClientOptions says where the service is and which key to send. */
export interface ClientOptions {
  /** url is the service's base URL, such as "http://127.0.0.1:8080". */
  url: string;
  /** apiKey, when set, is sent as `Authorization: Bearer <key>`. */
  apiKey?: string;
  /**
   * timeoutMs bounds each request, DefaultTimeoutMs when not set. A claim
   * gets its wait_ms on top; an extend gets at most a third of its lease_ms,
   * so that a silent service does not hold up the next extend.
   */
  timeoutMs?: number;
}

/** EmqClient calls the service's worker plane; each method is one request. */
export class EmqClient {
  private readonly api;
  private readonly timeoutMs: number;

  constructor(options: ClientOptions) {
    this.api = createClient<paths>({
      baseUrl: options.url,
      headers: options.apiKey ? { Authorization: `Bearer ${options.apiKey}` } : {},
    });
    this.timeoutMs = options.timeoutMs ?? DefaultTimeoutMs;
  }

  /** enqueue adds a job (or answers the existing one when its id was used). */
  async enqueue(queue: string, job: EnqueueRequest): Promise<Job> {
    return unwrap(
      await this.api.POST("/queues/{queue}/jobs", {
        params: { path: { queue } },
        body: job,
        fetch: fetchWithin(this.timeoutMs),
      }),
    );
  }

  /** claim leases up to `count` jobs, waiting up to `wait_ms` for one. */
  async claim(queue: string, request: ClaimRequest): Promise<ClaimedJob[]> {
    const list = unwrap(
      await this.api.POST("/queues/{queue}/claim", {
        params: { path: { queue } },
        body: request,
        fetch: fetchWithin((request.wait_ms ?? 0) + this.timeoutMs),
      }),
    );
    return list.jobs.map(claimed);
  }

  /** extend checkpoints a held job: a new lease, and whether a cancel came. */
  async extend(queue: string, id: string, request: ExtendRequest): Promise<ExtendResponse> {
    return unwrap(
      await this.api.POST("/queues/{queue}/jobs/{id}/lease", {
        params: { path: { queue, id } },
        body: request,
        // A checkpoint of progress alone renews no lease: the usual timeout.
        fetch: fetchWithin(Math.min(this.timeoutMs, (request.lease_ms ?? Infinity) / 3)),
      }),
    );
  }

  /** appendLog adds lines to a held job's log (at most 1,000 kept, 2 KB each). */
  async appendLog(queue: string, id: string, request: LogAppendRequest): Promise<LogAppendResponse> {
    return unwrap(
      await this.api.POST("/queues/{queue}/jobs/{id}/logs", {
        params: { path: { queue, id } },
        body: request,
        fetch: fetchWithin(this.timeoutMs),
      }),
    );
  }

  /** complete finishes a held job with its result. */
  async complete(queue: string, id: string, request: CompleteRequest): Promise<CompleteResponse> {
    return unwrap(
      await this.api.POST("/queues/{queue}/jobs/{id}/complete", {
        params: { path: { queue, id } },
        body: request,
        fetch: fetchWithin(this.timeoutMs),
      }),
    );
  }

  /** fail reports that the attempt failed; the service retries or ends it. */
  async fail(queue: string, id: string, request: FailRequest): Promise<Job> {
    return unwrap(
      await this.api.POST("/queues/{queue}/jobs/{id}/fail", {
        params: { path: { queue, id } },
        body: request,
        fetch: fetchWithin(this.timeoutMs),
      }),
    );
  }

  /**
   * snooze puts a held job back for `delay_ms` without spending its attempt
   * (delayed; pending at once for 0). The token is dead afterwards; a job
   * whose cancel was requested is cancelled instead.
   */
  async snooze(queue: string, id: string, request: SnoozeRequest): Promise<Job> {
    return unwrap(
      await this.api.POST("/queues/{queue}/jobs/{id}/snooze", {
        params: { path: { queue, id } },
        body: request,
        fetch: fetchWithin(this.timeoutMs),
      }),
    );
  }

  /** cancel cancels a job, or asks its holder to stop (then state stays active). */
  async cancel(queue: string, id: string, request: CancelRequest = {}): Promise<Job> {
    return unwrap(
      await this.api.POST("/queues/{queue}/jobs/{id}/cancel", {
        params: { path: { queue, id } },
        body: request,
        fetch: fetchWithin(this.timeoutMs),
      }),
    );
  }

  /** cancellation is the holder's cheap check: was a cancel requested? */
  async cancellation(queue: string, id: string, token: number): Promise<CancellationResponse> {
    return unwrap(
      await this.api.GET("/queues/{queue}/jobs/{id}/cancellation", {
        params: { path: { queue, id }, query: { token } },
        fetch: fetchWithin(this.timeoutMs),
      }),
    );
  }

  /**
   * createBatch enqueues up to 1000 jobs as one batch, in one atomic step.
   * Once every job of the committed batch has ended, the service enqueues one
   * callback job "batch:<id>" (read it with batchCallbackOf). created is false
   * when a batch with the request's id was there already: nothing was added.
   */
  async createBatch(queue: string, request: CreateBatchRequest): Promise<{ batch: Batch; created: boolean }> {
    const answer = await this.api.POST("/queues/{queue}/batches", {
      params: { path: { queue } },
      body: request,
      fetch: fetchWithin(this.timeoutMs),
    });
    return { batch: unwrap(answer), created: answer.response.status === 201 };
  }

  /** addBatchJobs enqueues more jobs into an open batch; 409 EMQSTATE once it is committed. */
  async addBatchJobs(queue: string, id: string, request: AddBatchJobsRequest): Promise<Batch> {
    return unwrap(
      await this.api.POST("/queues/{queue}/batches/{id}/jobs", {
        params: { path: { queue, id } },
        body: request,
        fetch: fetchWithin(this.timeoutMs),
      }),
    );
  }

  /** commitBatch closes an open batch to more jobs: it is done once every job has ended. */
  async commitBatch(queue: string, id: string): Promise<Batch> {
    return unwrap(
      await this.api.POST("/queues/{queue}/batches/{id}/commit", {
        params: { path: { queue, id } },
        fetch: fetchWithin(this.timeoutMs),
      }),
    );
  }

  /** getBatch reads a batch, with the counts of its jobs by state. */
  async getBatch(queue: string, id: string): Promise<Batch> {
    return unwrap(
      await this.api.GET("/queues/{queue}/batches/{id}", {
        params: { path: { queue, id } },
        fetch: fetchWithin(this.timeoutMs),
      }),
    );
  }

  /** getJob reads a job. */
  async getJob(queue: string, id: string): Promise<Job> {
    return unwrap(
      await this.api.GET("/queues/{queue}/jobs/{id}", {
        params: { path: { queue, id } },
        fetch: fetchWithin(this.timeoutMs),
      }),
    );
  }
}

/**
 * fetchWithin returns a fetch for openapi-fetch that gives up after ms: it
 * reads the whole answer within that time (Node's fetch alone would wait
 * minutes for a silent server), and turns a failed connection or a timeout
 * into a ConnectionError. The request body is serialised before this runs,
 * so a body that is not JSON throws its own TypeError, never this one.
 */
function fetchWithin(ms: number): (request: Request) => Promise<Response> {
  return async (request) => {
    try {
      const response = await fetch(request, { signal: AbortSignal.timeout(ms) });
      const body = response.body === null ? null : await response.arrayBuffer();
      return new Response(body, {
        status: response.status,
        statusText: response.statusText,
        headers: response.headers,
      });
    } catch (err) {
      if (err instanceof Error && err.name === "TimeoutError") {
        throw new ConnectionError(`no answer within ${ms / 1000}s`, { cause: err });
      }
      const cause = (err as { cause?: { code?: string } }).cause;
      throw new ConnectionError(cause?.code ?? String(err), { cause: err });
    }
  };
}

/** An answer as openapi-fetch gives it: data on success, error otherwise. */
type Answer<T> = { data?: T; error?: unknown; response: Response };

/** unwrap returns an answer's data, or throws its problem as an EmqError. */
function unwrap<T>({ data, error, response }: Answer<T>): T {
  if (response.ok && data !== undefined) {
    return data;
  }
  throw new EmqError(response.status, asProblem(error, response), retryAfterSeconds(response));
}

/**
 * retryAfterSeconds reads a Retry-After header given in seconds, the form the
 * service sends. Its other form, an HTTP date, is ignored: the caller's own
 * back-off applies then.
 */
function retryAfterSeconds(response: Response): number | undefined {
  const value = (response.headers.get("Retry-After") ?? "").trim();
  return /^\d+$/.test(value) && Number(value) > 0 ? Number(value) : undefined;
}

/** asProblem reads an error body as a Problem, also when it is not one (a proxy's page). */
function asProblem(error: unknown, response: Response): Problem {
  if (typeof error === "object" && error !== null) {
    return error as Problem;
  }
  return {
    type: "about:blank",
    code: "",
    status: response.status,
    title: response.statusText,
    detail: String(error ?? ""),
  };
}

/**
 * batchCallbackOf reads the payload of a batch's callback job, so that its
 * worker learns how the batch ended. It throws for a job that is not one: an
 * id that is not "batch:" and the batch's id, or a payload of another shape.
 */
export function batchCallbackOf(job: Job): BatchCallbackPayload {
  const p = job.payload as Partial<BatchCallbackPayload> | null;
  if (
    typeof p !== "object" || p === null || typeof p.batch !== "object" || p.batch === null ||
    !("payload" in p) || job.id !== BatchCallbackPrefix + p.batch.id
  ) {
    throw new Error(`job ${job.id} is no batch callback`);
  }
  return { batch: p.batch, payload: p.payload };
}

/** claimed checks that a claimed job carries the token a holder needs. */
function claimed(job: Job): ClaimedJob {
  if (job.token === undefined) {
    throw new Error(`a claim answered a job without a token: ${JSON.stringify(job)}`);
  }
  return { ...job, token: job.token };
}
