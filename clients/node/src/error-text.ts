// The text a job is failed with when its handler threw: whatever was thrown.

/**
 * errorText is the message of anything thrown: an Error's message, else the
 * value as String() makes it. It never throws, whatever was thrown (an
 * Object.create(null), an object whose toString throws, a revoked Proxy), so
 * that a job always gets a report.
 * @internal
 */
export function errorText(err: unknown): string {
  try {
    const text: unknown = err instanceof Error ? err.message : err;
    return typeof text === "string" ? text : String(text);
  } catch {
    return unprintable(err);
  }
}

/** unprintable names a thrown value that has no text, by its kind: "a thrown [object Object] with no text". */
function unprintable(err: unknown): string {
  try {
    return `a thrown ${Object.prototype.toString.call(err)} with no text`;
  } catch {
    return "a thrown value with no text";
  }
}

/**
 * wellFormed replaces each lone surrogate of a text (half of a UTF-16 pair,
 * which is no character) with U+FFFD: the service refuses a body holding
 * one, and a failed job's error must get through. A value that is no string
 * is given back as it is.
 * @internal
 */
export function wellFormed<T>(text: T): T {
  return typeof text === "string" ? (text.toWellFormed() as T) : text;
}
