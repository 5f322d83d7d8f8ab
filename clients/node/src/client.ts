// Client: the calls of echo_mq's worker plane, each one request, and work(),
// the worker loop built on them.

import { ClaimedJob, defaultLeaseMs } from "./claimed-job.js";
import { jobPath, queuePath } from "./paths.js";
import { Signer } from "./signer.js";
import { type Auth, type Expected, type RequestOptions, Transport } from "./transport.js";
import type { EnqueueOptions, EnqueueRequest, Job, LogLine } from "./types.js";
import { type Handler, type WorkOptions, work } from "./work.js";

/** defaultTimeoutMs bounds a request when ClientOptions.timeoutMs is not given. */
export const defaultTimeoutMs = 30_000;

/** ClientOptions say where the service is and how to authenticate. */
export interface ClientOptions {
  /** baseUrl is the service's base URL: http:// or https:// and a host, such as "http://127.0.0.1:8080". */
  baseUrl: string;
  /** key is sent as `Authorization: Bearer <key>`. */
  key?: string;
  /**
   * signingKey signs every request with this key instead (X-EMQ-Timestamp,
   * X-EMQ-Signature), and no Authorization header is sent, `key` or not.
   */
  signingKey?: string;
  /** timeoutMs bounds each request and the reading of its answer (default 30 s); a claim gets its waitMs on top. */
  timeoutMs?: number;
}

/** ClaimOptions shape a claim. */
export interface ClaimOptions {
  /** count is how many jobs to claim at most (1 to 100; default 1). */
  count?: number;
  /** leaseMs is how long each job is leased (100 ms to a day; default 30 s). */
  leaseMs?: number;
  /** waitMs is how long to wait for a job when none is pending (0 to 30 s; default 0: answer at once). */
  waitMs?: number;
  /** worker is the worker's name, kept on each job it claims. */
  worker?: string;
  /** signal aborts the claim. */
  signal?: AbortSignal;
}

/** CancelOptions shape a cancel. */
export interface CancelOptions {
  /** reason is kept as the job's cancel_reason. */
  reason?: string;
}

/** A page of a job's log, as the service answers it. */
interface LogPage {
  lines: LogLine[];
  next_cursor: string;
}

/** logPageSize is how many lines logs() asks for a page: the most the service gives. */
const logPageSize = 1000;

/**
 * Client calls one echo_mq service. Make one and share it: it holds no
 * connection of its own (Node's fetch pools them). Clients that sign with
 * the same key share the memory of the signatures sent (it is the
 * process's), so that none is sent twice.
 */
export class Client {
  /** timeoutMs bounds each request, as ClientOptions.timeoutMs says. */
  readonly timeoutMs: number;
  readonly #transport: Transport;

  /** Throws a TypeError for a baseUrl that is not http:// or https:// with a host. */
  constructor(options: ClientOptions) {
    this.timeoutMs = options.timeoutMs ?? defaultTimeoutMs;
    this.#transport = new Transport(parseBaseUrl(options.baseUrl), authOf(options), this.timeoutMs);
  }

  /**
   * request sends one request to any route of the API, such as
   * `request("POST", "/queues/emails/pause")`, authenticated as every call
   * is, and returns the answer's JSON object. It throws the EmqError of a
   * refusal (or of a 2xx answer that is no JSON object), and a TypeError for
   * a path that does not start with "/".
   */
  request<T = unknown>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    return this.#send<T>(method, path, options);
  }

  /**
   * enqueue adds a job with `payload` (any JSON value) and the options of
   * the API (`id`, `priority`, `delay_ms`, `max_attempts`, `backoff`, ...).
   * With an id that is taken, it answers the job that has it, and adds none.
   */
  async enqueue(queue: string, payload: unknown, options: EnqueueOptions = {}): Promise<Job> {
    return this.request<Job>("POST", `${queuePath(queue)}/jobs`, { body: { ...options, payload } });
  }

  /** enqueueMany adds up to 1000 jobs in one atomic step, and answers them in order. */
  async enqueueMany(queue: string, jobs: EnqueueRequest[]): Promise<Job[]> {
    const answer = await this.#send<{ jobs: Job[] }>("POST", `${queuePath(queue)}/jobs/batch`, { body: { jobs } }, hasJobs);
    return answer.jobs;
  }

  /**
   * claim leases up to `count` jobs, waiting up to `waitMs` for one to come
   * (a long poll), and answers them, each with its token; [] when none came.
   * An answer without its list of jobs, each with a token, is an EmqError.
   */
  async claim(queue: string, options: ClaimOptions = {}): Promise<ClaimedJob[]> {
    const body = { count: options.count, lease_ms: options.leaseMs, wait_ms: options.waitMs, worker: options.worker };
    const answer = await this.#send<{ jobs: Job[] }>(
      "POST",
      `${queuePath(queue)}/claim`,
      { body, timeoutMs: this.timeoutMs + (options.waitMs ?? 0), signal: options.signal },
      hasClaimedJobs,
    );
    return answer.jobs.map((job) => new ClaimedJob(this, job, options.leaseMs ?? defaultLeaseMs));
  }

  /** get reads a job. */
  async get(queue: string, id: string): Promise<Job> {
    return this.request<Job>("GET", jobPath(queue, id));
  }

  /**
   * cancel cancels a job: a pending or delayed one at once (its state is
   * then cancelled), an active one by asking its holder to stop (its state
   * stays active, with cancel_requested, until the holder reports).
   */
  async cancel(queue: string, id: string, options: CancelOptions = {}): Promise<Job> {
    return this.request<Job>("POST", `${jobPath(queue, id)}/cancel`, { body: { reason: options.reason } });
  }

  /** logs reads every line of a job's log, oldest first (a job keeps its last 1,000). */
  async logs(queue: string, id: string): Promise<LogLine[]> {
    const lines: LogLine[] = [];
    let cursor: string | undefined;
    for (;;) {
      const query = new URLSearchParams({ limit: String(logPageSize), ...(cursor === undefined ? {} : { cursor }) });
      const page = await this.#send<LogPage>("GET", `${jobPath(queue, id)}/logs?${query}`, {}, hasLines);
      lines.push(...page.lines);
      if (page.lines.length < logPageSize || page.next_cursor === cursor) {
        return lines;
      }
      cursor = page.next_cursor;
    }
  }

  /**
   * work claims jobs of `queue` and runs `handler` on each until
   * `options.signal` aborts: see WorkOptions and the README for what it
   * does with each outcome. It resolves once the signal aborted and the
   * jobs in hand were finished and reported; it rejects, once the jobs in
   * hand are finished, when a claim is refused for good (a wrong key, 400,
   * 401, 403). It rejects at once, claiming nothing, with a TypeError for an
   * option out of its range (WorkOptions says each one's).
   */
  work(queue: string, handler: Handler, options: WorkOptions = {}): Promise<void> {
    return work(this, queue, handler, options);
  }

  /** #send sends a request to path, which must start with "/", and checks that its answer is what the call expects. */
  async #send<T>(method: string, path: string, options: RequestOptions, expected?: Expected): Promise<T> {
    if (!path.startsWith("/")) {
      throw new TypeError(`echo-mq: path ${JSON.stringify(path)}: want one that starts with "/"`);
    }
    return this.#transport.send<T>(method, path, options, expected);
  }
}

/** hasJobs expects an answer's `jobs` to be a list of objects. */
const hasJobs: Expected = (answer) => Array.isArray(answer.jobs) && answer.jobs.every(isObject);

/** hasClaimedJobs expects a claim's answer: `jobs`, each with its token. */
const hasClaimedJobs: Expected = (answer) => hasJobs(answer) && (answer.jobs as Job[]).every((job) => typeof job.token === "number");

/** hasLines expects a page of a log: its `lines` and `next_cursor`. */
const hasLines: Expected = (answer) => Array.isArray(answer.lines) && typeof answer.next_cursor === "string";

/** isObject tells a JSON object from the other JSON values. */
function isObject(value: unknown): boolean {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** parseBaseUrl checks that raw is an http or https URL with a host and no query or fragment, and drops a trailing slash. */
function parseBaseUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new TypeError(`echo-mq: base URL ${JSON.stringify(raw)}: want http://host:port or https://host`);
  }
  if ((url.protocol !== "http:" && url.protocol !== "https:") || url.hostname === "") {
    throw new TypeError(`echo-mq: base URL ${JSON.stringify(raw)}: want http://host:port or https://host`);
  }
  if (url.search !== "" || url.hash !== "") {
    throw new TypeError(`echo-mq: base URL ${JSON.stringify(raw)}: want no query or fragment`);
  }
  return url.href.replace(/\/+$/, "");
}

/** authOf is how a client's requests are authenticated: signed when a signing key is given. */
function authOf(options: ClientOptions): Auth {
  if (options.signingKey) {
    return { kind: "signed", signer: new Signer(options.signingKey) };
  }
  if (options.key) {
    return { kind: "bearer", key: options.key };
  }
  return { kind: "none" };
}
