// The errors a call to the service throws: EmqError for any answer that is
// not 2xx (or is 2xx but not the JSON expected), a subclass of it for each
// problem code, and ConnectionFailed when no answer came. Act on the class
// (or `code`); `title` and `detail` are for people and may be reworded.

import type { Problem } from "./types.js";

/**
 * EmqError is a refusal from the service: an answer whose status is not 2xx.
 * The service answers every error as an RFC 9457 problem+json body; an answer
 * from something in front of it (a proxy's 502 page) has only `status`, an
 * empty `code`, and a `detail` made of the start of its body. A 2xx answer
 * that is not the JSON the call expects (an empty body, a proxy's page) is
 * one too: its 2xx `status`, no `code`, and a `detail` that says so.
 */
export class EmqError extends Error {
  /** status is the HTTP status, such as 409; 0 for ConnectionFailed. */
  readonly status: number;
  /** code is the problem's machine-readable code, such as "EMQSTALE"; "" when the answer was no problem. */
  readonly code: string;
  /** title is the problem's short summary, such as "Stale token". */
  readonly title: string;
  /** detail says what happened to this request. */
  readonly detail: string;
  /** problem is the whole problem+json body, when the answer was one (with `errors` for EMQINVALID). */
  readonly problem: Problem | undefined;
  /** retryAfterSeconds is the answer's Retry-After (a 503 and a 429 have it): how long to wait before asking again. */
  readonly retryAfterSeconds: number | undefined;

  constructor(status: number, problem: Problem | undefined, detail = "", retryAfterSeconds?: number, options?: ErrorOptions) {
    const code = problem?.code ?? "";
    const text = problem?.detail ?? detail;
    super(status === 0 ? text : `${status}${code ? ` ${code}` : ""}${text ? `: ${text}` : ""}`, options);
    this.name = new.target.name;
    this.status = status;
    this.code = code;
    this.title = problem?.title ?? "";
    this.detail = text;
    this.problem = problem;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** Stale (409 EMQSTALE): the token does not hold the job any more (its lease lapsed, or it ended). Drop the job. */
export class Stale extends EmqError {}
/** Gone (404 EMQGONE): no such job (or schedule, batch, push target). Drop the job: it was removed. */
export class Gone extends EmqError {}
/** WrongState (409 EMQSTATE): the verb does not apply in the job's state, such as cancelling a completed job. */
export class WrongState extends EmqError {}
/** Invalid (400 EMQINVALID): the request is malformed or fails validation; `problem.errors` names each field. */
export class Invalid extends EmqError {}
/** TooLarge (413 EMQTOOLARGE): a payload, result or progress over 1 MiB, or a body over 16 MiB. */
export class TooLarge extends EmqError {}
/** MediaType (415 EMQMEDIATYPE): a body that is not application/json. */
export class MediaType extends EmqError {}
/** Unauthorized (401 EMQUNAUTHORIZED): no key, a wrong one, or a signature refused (`detail` says why). */
export class Unauthorized extends EmqError {}
/** Forbidden (403 EMQFORBIDDEN): the key's role may not do this. */
export class Forbidden extends EmqError {}
/** Busy (429 or 503 EMQBUSY): too many waiting claims or open streams; ask again after `retryAfterSeconds`. */
export class Busy extends EmqError {}
/** Quota (409 EMQQUOTA): the write would make a new queue past the service's limit; nothing was written. */
export class Quota extends EmqError {}
/** Unavailable (503 EMQUNAVAILABLE): the service cannot reach Redis; ask again after `retryAfterSeconds`. */
export class Unavailable extends EmqError {}
/** NotFound (404 EMQNOTFOUND): no such route. */
export class NotFound extends EmqError {}
/** MethodNotAllowed (405 EMQMETHOD): the route exists, not with this method. */
export class MethodNotAllowed extends EmqError {}
/** Internal (500 EMQINTERNAL): a bug in the service, which logs it. */
export class Internal extends EmqError {}

/**
 * ConnectionFailed is a request that got no answer (status 0): the service
 * could not be reached, the connection broke, or no whole answer came within
 * the request's timeout. Sending the request again may work.
 */
export class ConnectionFailed extends EmqError {
  constructor(why: string, options?: ErrorOptions) {
    super(0, undefined, `no answer: ${why}`, undefined, options);
  }
}

/** The class of each problem code; a code not here is a plain EmqError. */
const classOfCode: Record<string, typeof EmqError> = {
  EMQSTALE: Stale,
  EMQGONE: Gone,
  EMQSTATE: WrongState,
  EMQINVALID: Invalid,
  EMQTOOLARGE: TooLarge,
  EMQMEDIATYPE: MediaType,
  EMQUNAUTHORIZED: Unauthorized,
  EMQFORBIDDEN: Forbidden,
  EMQBUSY: Busy,
  EMQQUOTA: Quota,
  EMQUNAVAILABLE: Unavailable,
  EMQNOTFOUND: NotFound,
  EMQMETHOD: MethodNotAllowed,
  EMQINTERNAL: Internal,
};

/** maxDetail bounds how much of a body that is not a problem goes into `detail`. */
const maxDetail = 512;

/**
 * errorOfAnswer makes the error of an answer that is not 2xx from its status,
 * its body's text and its Retry-After, choosing the class by the problem's code.
 * @internal
 */
export function errorOfAnswer(status: number, body: string, retryAfterSeconds: number | undefined): EmqError {
  const problem = problemOf(body);
  if (problem === undefined) {
    return new EmqError(status, undefined, body.trim().slice(0, maxDetail), retryAfterSeconds);
  }
  const ErrorClass = classOfCode[problem.code] ?? EmqError;
  return new ErrorClass(status, problem, "", retryAfterSeconds);
}

/**
 * unexpectedAnswer makes the error of a 2xx answer that is not the JSON a
 * call expects (an empty body, a proxy's page): its status, no code, and a
 * detail saying so with the start of the body.
 * @internal
 */
export function unexpectedAnswer(status: number, body: string): EmqError {
  const start = body.trim().slice(0, maxDetail);
  return new EmqError(status, undefined, `the answer was not the JSON expected: ${start === "" ? "an empty body" : start}`);
}

/** problemOf reads a body as a problem+json object with a code, or gives undefined. */
function problemOf(body: string): Problem | undefined {
  try {
    const parsed: unknown = JSON.parse(body);
    if (typeof parsed === "object" && parsed !== null && typeof (parsed as Problem).code === "string") {
      return parsed as Problem;
    }
  } catch {
    // not JSON: a proxy's page
  }
  return undefined;
}
