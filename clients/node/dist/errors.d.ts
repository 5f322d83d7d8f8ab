import type { Problem } from "./types.js";
/**
 * EmqError is a refusal from the service: an answer whose status is not 2xx.
 * The service answers every error as an RFC 9457 problem+json body; an answer
 * from something in front of it (a proxy's 502 page) has only `status`, an
 * empty `code`, and a `detail` made of the start of its body. A 2xx answer
 * that is not the JSON the call expects (an empty body, a proxy's page) is
 * one too: its 2xx `status`, no `code`, and a `detail` that says so.
 */
export declare class EmqError extends Error {
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
    constructor(status: number, problem: Problem | undefined, detail?: string, retryAfterSeconds?: number, options?: ErrorOptions);
}
/** Stale (409 EMQSTALE): the token does not hold the job any more (its lease lapsed, or it ended). Drop the job. */
export declare class Stale extends EmqError {
}
/** Gone (404 EMQGONE): no such job (or schedule, batch, push target). Drop the job: it was removed. */
export declare class Gone extends EmqError {
}
/** WrongState (409 EMQSTATE): the verb does not apply in the job's state, such as cancelling a completed job. */
export declare class WrongState extends EmqError {
}
/** Invalid (400 EMQINVALID): the request is malformed or fails validation; `problem.errors` names each field. */
export declare class Invalid extends EmqError {
}
/** TooLarge (413 EMQTOOLARGE): a payload, result or progress over 1 MiB, or a body over 16 MiB. */
export declare class TooLarge extends EmqError {
}
/** MediaType (415 EMQMEDIATYPE): a body that is not application/json. */
export declare class MediaType extends EmqError {
}
/** Unauthorized (401 EMQUNAUTHORIZED): no key, a wrong one, or a signature refused (`detail` says why). */
export declare class Unauthorized extends EmqError {
}
/** Forbidden (403 EMQFORBIDDEN): the key's role may not do this. */
export declare class Forbidden extends EmqError {
}
/** Busy (429 or 503 EMQBUSY): too many waiting claims or open streams; ask again after `retryAfterSeconds`. */
export declare class Busy extends EmqError {
}
/** Quota (409 EMQQUOTA): the write would make a new queue past the service's limit; nothing was written. */
export declare class Quota extends EmqError {
}
/** Unavailable (503 EMQUNAVAILABLE): the service cannot reach Redis; ask again after `retryAfterSeconds`. */
export declare class Unavailable extends EmqError {
}
/** NotFound (404 EMQNOTFOUND): no such route. */
export declare class NotFound extends EmqError {
}
/** MethodNotAllowed (405 EMQMETHOD): the route exists, not with this method. */
export declare class MethodNotAllowed extends EmqError {
}
/** Internal (500 EMQINTERNAL): a bug in the service, which logs it. */
export declare class Internal extends EmqError {
}
/**
 * ConnectionFailed is a request that got no answer (status 0): the service
 * could not be reached, the connection broke, or no whole answer came within
 * the request's timeout. Sending the request again may work.
 */
export declare class ConnectionFailed extends EmqError {
    constructor(why: string, options?: ErrorOptions);
}
