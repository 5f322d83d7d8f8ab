import { Signer } from "./signer.js";
/** RequestOptions shape one request. */
export interface RequestOptions {
    /** body is sent as JSON; none when undefined. */
    body?: unknown;
    /** timeoutMs bounds the request and the reading of its answer; the client's timeoutMs when not given. */
    timeoutMs?: number;
    /** signal aborts the request: it then rejects with the signal's reason. */
    signal?: AbortSignal;
    /** headers are sent besides the client's own, such as `Prefer: return=minimal`. */
    headers?: Record<string, string>;
}
/** Expected tells whether a 2xx answer's JSON object is the one a call expects. */
export type Expected = (answer: Record<string, unknown>) => boolean;
/** Auth is how requests are authenticated: nothing, a bearer key, or a signer. */
export type Auth = {
    kind: "none";
} | {
    kind: "bearer";
    key: string;
} | {
    kind: "signed";
    signer: Signer;
};
/** Transport sends requests to one service. */
export declare class Transport {
    #private;
    constructor(baseUrl: string, auth: Auth, timeoutMs: number);
    /** timeoutMs is the client's bound on a request. */
    get timeoutMs(): number;
    /**
     * send sends one request to path (with its query) and returns the answer's
     * JSON object. It throws the EmqError of an answer that is not 2xx, an
     * EmqError with the 2xx status and no code for an answer that is not a
     * JSON object or fails `expected` (an empty body, a proxy's page),
     * ConnectionFailed when no whole answer came in time, the signal's reason
     * when the signal aborted it, and a TypeError, before anything is sent,
     * for a body that is not JSON (a BigInt, a cycle). The method is sent
     * upper-cased, as it is signed.
     */
    send<T>(method: string, path: string, options?: RequestOptions, expected?: Expected): Promise<T>;
}
