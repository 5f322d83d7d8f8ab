/**
 * Signer makes the X-EMQ-Timestamp and X-EMQ-Signature headers of a request:
 * `sha256=` and the hex HMAC-SHA256, under the key, of
 * `<timestamp>.<METHOD>.<path and query>.<body>`.
 *
 * The service accepts each signature once, so two byte-identical requests
 * (a worker's claims, one job's extends) must not carry the same timestamp.
 * A request whose signature of this second was sent already is stamped with
 * the latest earlier second whose signature was not, up to 30 s back, so
 * signing costs no time; only when all 31 seconds are taken does it wait for
 * the next second.
 */
export declare class Signer {
    #private;
    constructor(key: string);
    /**
     * headers returns the headers that sign a request of method to target
     * (path and query) with body. It rejects with the signal's reason only
     * when signal aborts while it waits for a free second.
     */
    headers(method: string, target: string, body: string, signal?: AbortSignal): Promise<Record<string, string>>;
}
