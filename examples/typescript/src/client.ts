// A typed client for echo_mq's worker plane. Every route, path parameter,
// request body and answer is typed by src/schema.d.ts, which openapi-typescript
// generates from api/openapi.yaml: when the spec changes, this file (and every
// caller) is checked against the new spec by `tsc`. openapi-fetch does the
// requests; this file adds one method per verb and turns refusals into EmqError.

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
export type CancelRequest = Schemas["CancelRequest"];
export type CancellationResponse = Schemas["CancellationResponse"];

/**
 * ClaimedJob is a job as a claim hands it out: it always carries its id and
 * the token that fences every later call on it. (The spec marks no answer
 * field as required, so the client checks these two when a claim answers.)
 */
export type ClaimedJob = Job & Required<Pick<Job, "id" | "token">>;

/**
 * EmqError is a refusal from the service: the HTTP status and the problem
 * body, whose `code` says what happened (EMQSTALE, EMQGONE, EMQUNAVAILABLE...).
 */
export class EmqError extends Error {
  readonly status: number;
  readonly problem: Problem;
  /** retryAfterSeconds is the Retry-After header of a 503, when given. */
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
}

/** EmqClient calls the service's worker plane; each method is one request. */
export class EmqClient {
  private readonly api;

  constructor(options: ClientOptions) {
    this.api = createClient<paths>({
      baseUrl: options.url,
      headers: options.apiKey ? { Authorization: `Bearer ${options.apiKey}` } : {},
    });
  }

  /** enqueue adds a job (or answers the existing one when its id was used). */
  async enqueue(queue: string, job: EnqueueRequest): Promise<Job> {
    return unwrap(
      await this.api.POST("/queues/{queue}/jobs", { params: { path: { queue } }, body: job }),
    );
  }

  /** claim leases up to `count` jobs, waiting up to `wait_ms` for one. */
  async claim(queue: string, request: ClaimRequest): Promise<ClaimedJob[]> {
    const list = unwrap(
      await this.api.POST("/queues/{queue}/claim", { params: { path: { queue } }, body: request }),
    );
    return (list.jobs ?? []).map(claimed);
  }

  /** extend checkpoints a held job: a new lease, and whether a cancel came. */
  async extend(queue: string, id: string, request: ExtendRequest): Promise<ExtendResponse> {
    return unwrap(
      await this.api.POST("/queues/{queue}/jobs/{id}/lease", {
        params: { path: { queue, id } },
        body: request,
      }),
    );
  }

  /** complete finishes a held job with its result. */
  async complete(queue: string, id: string, request: CompleteRequest): Promise<CompleteResponse> {
    return unwrap(
      await this.api.POST("/queues/{queue}/jobs/{id}/complete", {
        params: { path: { queue, id } },
        body: request,
      }),
    );
  }

  /** fail reports that the attempt failed; the service retries or ends it. */
  async fail(queue: string, id: string, request: FailRequest): Promise<Job> {
    return unwrap(
      await this.api.POST("/queues/{queue}/jobs/{id}/fail", {
        params: { path: { queue, id } },
        body: request,
      }),
    );
  }

  /** cancel cancels a job, or asks its holder to stop (then state stays active). */
  async cancel(queue: string, id: string, request: CancelRequest = {}): Promise<Job> {
    return unwrap(
      await this.api.POST("/queues/{queue}/jobs/{id}/cancel", {
        params: { path: { queue, id } },
        body: request,
      }),
    );
  }

  /** cancellation is the holder's cheap check: was a cancel requested? */
  async cancellation(queue: string, id: string, token: number): Promise<CancellationResponse> {
    return unwrap(
      await this.api.GET("/queues/{queue}/jobs/{id}/cancellation", {
        params: { path: { queue, id }, query: { token } },
      }),
    );
  }

  /** getJob reads a job. */
  async getJob(queue: string, id: string): Promise<Job> {
    return unwrap(
      await this.api.GET("/queues/{queue}/jobs/{id}", { params: { path: { queue, id } } }),
    );
  }
}

/** An answer as openapi-fetch gives it: data on success, error otherwise. */
type Answer<T> = { data?: T; error?: unknown; response: Response };

/** unwrap returns an answer's data, or throws its problem as an EmqError. */
function unwrap<T>({ data, error, response }: Answer<T>): T {
  if (response.ok && data !== undefined) {
    return data;
  }
  const retryAfter = Number(response.headers.get("Retry-After"));
  throw new EmqError(
    response.status,
    asProblem(error, response),
    retryAfter > 0 ? retryAfter : undefined,
  );
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

/** claimed checks that a claimed job has what a holder needs. */
function claimed(job: Job): ClaimedJob {
  if (job.id === undefined || job.token === undefined) {
    throw new Error(`a claim answered a job without id or token: ${JSON.stringify(job)}`);
  }
  return { ...job, id: job.id, token: job.token };
}
