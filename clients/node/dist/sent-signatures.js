// The memory of the signatures sent with one key, so that none is sent twice.
/**
 * SentSignatures are the signatures sent with one key, by the second of
 * their timestamp. Only the seconds a new request may still be stamped with
 * are kept (forgetBefore drops the others), so it holds what the last
 * 31 seconds of requests sent.
 */
export class SentSignatures {
    #bySecond = new Map();
    /**
     * take reports whether signature, stamped with second, was not sent yet,
     * and counts it sent.
     */
    take(second, signature) {
        let sent = this.#bySecond.get(second);
        if (sent === undefined) {
            sent = new Set();
            this.#bySecond.set(second, sent);
        }
        if (sent.has(signature)) {
            return false;
        }
        sent.add(signature);
        return true;
    }
    /** forgetBefore drops the signatures of the seconds before oldest: no request is stamped with them any more. */
    forgetBefore(oldest) {
        for (const second of this.#bySecond.keys()) {
            if (second < oldest) {
                this.#bySecond.delete(second);
            }
        }
    }
}
