// Signing requests instead of sending the key: docs/operating.md, "Signed
// webhooks".
import { createHmac } from "node:crypto";
import { sleep } from "./backoff.js";
import { SentSignatures } from "./sent-signatures.js";
/**
 * borrowSeconds is how far before now a signature's timestamp may be put
 * when the signatures of the later seconds were sent already. The service
 * takes timestamps within 300 s of its clock; 30 s stays far from that
 * edge whatever the skew of the two clocks.
 */
const borrowSeconds = 30;
/**
 * sentByKey holds the signatures this process sent with each key. It is the
 * module's, not a Client's, so that two Clients signing with one key never
 * send the same signature.
 */
const sentByKey = new Map();
/** sentWith returns the signatures sent with key, made empty on first use. */
function sentWith(key) {
    let sent = sentByKey.get(key);
    if (sent === undefined) {
        sent = new SentSignatures();
        sentByKey.set(key, sent);
    }
    return sent;
}
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
export class Signer {
    #key;
    #sent;
    constructor(key) {
        this.#key = key;
        this.#sent = sentWith(key);
    }
    /**
     * headers returns the headers that sign a request of method to target
     * (path and query) with body. It rejects with the signal's reason only
     * when signal aborts while it waits for a free second.
     */
    async headers(method, target, body, signal) {
        for (;;) {
            const now = Math.floor(Date.now() / 1000);
            this.#sent.forgetBefore(now - borrowSeconds);
            for (let second = now; second >= now - borrowSeconds; second--) {
                const signature = this.#sign(second, method, target, body);
                if (this.#sent.take(second, signature)) {
                    return { "X-EMQ-Timestamp": String(second), "X-EMQ-Signature": `sha256=${signature}` };
                }
            }
            if (!(await sleep((now + 1) * 1000 - Date.now(), signal))) {
                signal?.throwIfAborted();
            }
        }
    }
    #sign(second, method, target, body) {
        return createHmac("sha256", this.#key).update(`${second}.${method}.${target}.`).update(body).digest("hex");
    }
}
