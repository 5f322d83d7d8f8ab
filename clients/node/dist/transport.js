// One HTTP request to the service: authenticated (a bearer key, or signed),
// bounded by a timeout, its answer read whole, and turned into the answer's
// JSON or an EmqError.
import { ConnectionFailed, errorOfAnswer, unexpectedAnswer } from "./errors.js";
import { Signer } from "./signer.js";
/** anyObject expects any JSON object: every 2xx answer of the API is one. */
const anyObject = () => true;
/** Transport sends requests to one service. */
export class Transport {
    #baseUrl;
    #auth;
    #timeoutMs;
    constructor(baseUrl, auth, timeoutMs) {
        this.#baseUrl = baseUrl;
        this.#auth = auth;
        this.#timeoutMs = timeoutMs;
    }
    /** timeoutMs is the client's bound on a request. */
    get timeoutMs() {
        return this.#timeoutMs;
    }
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
    async send(method, path, options = {}, expected = anyObject) {
        const verb = method.toUpperCase();
        const body = options.body === undefined ? "" : jsonOf(options.body);
        const url = new URL(this.#baseUrl + path);
        const headers = { Accept: "application/json", ...options.headers };
        if (options.body !== undefined) {
            headers["Content-Type"] = "application/json";
        }
        Object.assign(headers, await this.#authHeaders(verb, url.pathname + url.search, body, options.signal));
        const timeoutMs = options.timeoutMs ?? this.#timeoutMs;
        const { status, text, retryAfter } = await exchange(url, { method: verb, headers, body: body || undefined }, timeoutMs, options.signal);
        if (status < 200 || status > 299) {
            throw errorOfAnswer(status, text, retryAfterSeconds(retryAfter));
        }
        const answer = jsonObjectOf(text);
        if (answer === undefined || !expected(answer)) {
            throw unexpectedAnswer(status, text);
        }
        return answer;
    }
    async #authHeaders(method, target, body, signal) {
        switch (this.#auth.kind) {
            case "bearer":
                return { Authorization: `Bearer ${this.#auth.key}` };
            case "signed":
                return this.#auth.signer.headers(method, target, body, signal);
            case "none":
                return {};
        }
    }
}
/**
 * exchange sends a request and reads its whole answer within timeoutMs: Node's
 * fetch alone would wait minutes for a silent server. A failed connection or
 * the timeout throws ConnectionFailed; an abort of signal throws its reason.
 */
async function exchange(url, init, timeoutMs, signal) {
    signal?.throwIfAborted();
    const controller = new AbortController();
    const timedOut = new Error(`no answer within ${timeoutMs / 1000}s`);
    const timer = setTimeout(() => controller.abort(timedOut), timeoutMs);
    const onAbort = () => controller.abort(signal?.reason);
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
        const response = await fetch(url, { ...init, signal: controller.signal });
        const text = await response.text();
        return { status: response.status, text, retryAfter: response.headers.get("Retry-After") };
    }
    catch (err) {
        if (signal?.aborted) {
            throw signal.reason;
        }
        if (controller.signal.reason === timedOut) {
            throw new ConnectionFailed(`${init.method} ${url.pathname}: no answer within ${timeoutMs / 1000}s`, { cause: err });
        }
        throw new ConnectionFailed(`${init.method} ${url.pathname}: ${causeOf(err)}`, { cause: err });
    }
    finally {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
    }
}
/** causeOf names why fetch failed: the system error's code (ECONNREFUSED, ECONNRESET) when it has one. */
function causeOf(err) {
    const cause = err?.cause;
    if (typeof cause?.code === "string") {
        return cause.code;
    }
    if (typeof cause?.message === "string") {
        return cause.message;
    }
    return err instanceof Error ? err.message : String(err);
}
/** jsonOf is the JSON text of a request body, refusing a value JSON.stringify would drop (a function). */
function jsonOf(value) {
    const json = JSON.stringify(value);
    if (json === undefined) {
        throw new TypeError(`a request body must be a JSON value, not ${typeof value}`);
    }
    return json;
}
/** jsonObjectOf reads an answer's text as a JSON object, or gives undefined (empty, not JSON, or another JSON value). */
function jsonObjectOf(text) {
    try {
        const value = JSON.parse(text);
        if (typeof value === "object" && value !== null && !Array.isArray(value)) {
            return value;
        }
    }
    catch {
        // not JSON: unexpectedAnswer says so
    }
    return undefined;
}
/**
 * retryAfterSeconds reads a Retry-After header of whole seconds, the form
 * the service sends. It is undefined when absent, 0, or anything else: an
 * HTTP date is ignored, as examples/README.md says, so that a clock apart
 * from the service's cannot make a worker wait.
 */
function retryAfterSeconds(value) {
    const text = (value ?? "").trim();
    if (!/^\d+$/.test(text) || Number(text) === 0) {
        return undefined;
    }
    return Number(text);
}
