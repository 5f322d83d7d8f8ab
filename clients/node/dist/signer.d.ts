/**
 * Signer makes the X-EMQ-Timestamp and X-EMQ-Signature headers of a request:
 * `sha256=` and the hex HMAC-SHA256, under the key, of
 * `<timestamp>.<METHOD>.<path and query>.<body>`.
 *
 * The service accepts each signature once. Two identical requests signed in
 * the same second (two claims with the same body, a retry of a call that got
 * no answer) would have the same signature, and the second would be refused
 * as a replay; so the signer remembers the signatures it made, and on a
 * collision waits for the next second and signs again.
 */
export declare class Signer {
    #private;
    constructor(key: string);
    /** headers returns the headers that sign a request of method to target (path and query) with body. */
    headers(method: string, target: string, body: string): Promise<Record<string, string>>;
}
