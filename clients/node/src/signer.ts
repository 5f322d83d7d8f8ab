// Signing requests instead of sending the key: docs/operating.md, "Signed
// webhooks".

import { createHmac } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";

/**
 * replayWindowSeconds is how long the service remembers a signature it
 * accepted (twice its 5-minute tolerance): a signature used within that
 * window is refused as a replay, so the signer remembers its own as long.
 */
const replayWindowSeconds = 600;

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
export class Signer {
  readonly #key: string;
  /** The signatures made, by the second of their timestamp, oldest second first. */
  readonly #used = new Map<number, Set<string>>();

  constructor(key: string) {
    this.#key = key;
  }

  /** headers returns the headers that sign a request of method to target (path and query) with body. */
  async headers(method: string, target: string, body: string): Promise<Record<string, string>> {
    for (;;) {
      const second = Math.floor(Date.now() / 1000);
      const signature = this.#sign(String(second), method, target, body);
      if (this.#claim(second, signature)) {
        return { "X-EMQ-Timestamp": String(second), "X-EMQ-Signature": `sha256=${signature}` };
      }
      await sleep(Math.max(1, (second + 1) * 1000 - Date.now()));
    }
  }

  #sign(timestamp: string, method: string, target: string, body: string): string {
    return createHmac("sha256", this.#key).update(`${timestamp}.${method}.${target}.`).update(body).digest("hex");
  }

  /** #claim records signature as used in second, and reports false when it was used already. */
  #claim(second: number, signature: string): boolean {
    let used = this.#used.get(second);
    if (used === undefined) {
      used = new Set();
      this.#used.set(second, used);
      this.#forgetBefore(second - replayWindowSeconds);
    }
    if (used.has(signature)) {
      return false;
    }
    used.add(signature);
    return true;
  }

  /** #forgetBefore drops the signatures of the seconds before oldest: the service has forgotten them too. */
  #forgetBefore(oldest: number): void {
    for (const second of this.#used.keys()) {
      if (second < oldest) {
        this.#used.delete(second);
      }
    }
  }
}
