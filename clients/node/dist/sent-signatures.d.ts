/**
 * SentSignatures are the signatures sent with one key, by the second of
 * their timestamp. Only the seconds a new request may still be stamped with
 * are kept (forgetBefore drops the others), so it holds what the last
 * 31 seconds of requests sent.
 */
export declare class SentSignatures {
    #private;
    /**
     * take reports whether signature, stamped with second, was not sent yet,
     * and counts it sent.
     */
    take(second: number, signature: string): boolean;
    /** forgetBefore drops the signatures of the seconds before oldest: no request is stamped with them any more. */
    forgetBefore(oldest: number): void;
}
