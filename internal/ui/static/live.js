// live.js: the dashboard's live updates. One EventFeed reads GET /events,
// the service's Server-Sent Events of every queue's state changes, for the
// whole time the page is open: a browser allows a host only six HTTP/1.1
// connections, so the dashboard never opens one stream per queue.
//
// The stream is read with fetch, not EventSource, because EventSource cannot
// send the Authorization header. Events are used as hints: a view that hears
// of a change to what it shows reads it again from the API, so what it shows
// is always what Redis holds, and an event missed while reconnecting is made
// up for by the read that follows each (re)connection.

import { KeyNeeded, authHeaders } from "./api.js";

/** The first wait before a reconnection, doubled up to maxRetryMs. */
const firstRetryMs = 1000;
const maxRetryMs = 30_000;

/**
 * Reads the event stream at path and calls, from then on:
 *   onOpen()          each time the stream (re)opens: read what may have changed
 *   onEvent(event)    for each event: {kind, queue, job_id, state, at, ...}
 *   onStatus(status)  "connecting", "live", "reconnecting" or "key" (a 401: no
 *                     retry until start() is called again)
 */
export class EventFeed {
  constructor(path, { onOpen, onEvent, onStatus }) {
    this.path = path;
    this.onOpen = onOpen;
    this.onEvent = onEvent;
    this.onStatus = onStatus;
    this.abort = null;
  }

  /** (Re)starts the feed, with the API key stored now. */
  start() {
    this.stop();
    this.abort = new AbortController();
    this.run(this.abort.signal);
  }

  stop() {
    if (this.abort) {
      this.abort.abort();
      this.abort = null;
    }
  }

  async run(signal) {
    let retryMs = firstRetryMs;
    this.onStatus("connecting");
    while (!signal.aborted) {
      try {
        const res = await fetch(this.path, { headers: authHeaders({ Accept: "text/event-stream" }), cache: "no-store", signal });
        if (res.status === 401) {
          throw new KeyNeeded("An API key is needed.");
        }
        if (res.ok && res.body) {
          this.onStatus("live");
          retryMs = firstRetryMs;
          this.onOpen();
          await readEvents(res.body, signal, (event) => this.onEvent(event));
        }
      } catch (err) {
        if (err instanceof KeyNeeded) {
          this.onStatus("key");
          return;
        }
        // The service went away or the stream broke: reconnect below.
      }
      if (signal.aborted) {
        return;
      }
      this.onStatus("reconnecting");
      await sleep(retryMs, signal);
      retryMs = Math.min(retryMs * 2, maxRetryMs);
    }
  }
}

/**
 * Reads Server-Sent Events from body until it ends, calling onEvent with
 * each event's decoded data. An "error" event (the service lost Redis) ends
 * the read, as the service ends the stream after it.
 */
export async function readEvents(body, signal, onEvent) {
  const lines = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let kind = "";
  let data = [];
  try {
    for (;;) {
      const { value, done } = await lines.read();
      if (done || signal.aborted) {
        return;
      }
      buffer += value;
      const parts = buffer.split(/\r\n|\r|\n/);
      buffer = parts.pop(); // an unfinished line waits for the next chunk
      for (const line of parts) {
        if (line === "") {
          if (kind === "error") {
            return;
          }
          if (data.length > 0) {
            dispatch(data.join("\n"), onEvent);
          }
          kind = "";
          data = [];
        } else if (line.startsWith("data:")) {
          data.push(fieldValue(line, 5));
        } else if (line.startsWith("event:")) {
          kind = fieldValue(line, 6);
        } // ": ping" comments and id lines need nothing
      }
    }
  } finally {
    lines.cancel().catch(() => {});
  }
}

/** A field's value after its name and colon, without the one space SSE allows. */
function fieldValue(line, nameLength) {
  const value = line.slice(nameLength);
  return value.startsWith(" ") ? value.slice(1) : value;
}

function dispatch(text, onEvent) {
  let event;
  try {
    event = JSON.parse(text);
  } catch {
    return; // not an event this dashboard knows
  }
  onEvent(event);
}

/** Waits ms, or less when signal aborts. */
function sleep(ms, signal) {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done);
  });
}

/**
 * Wraps fn so that calls closer together than gapMs run it once: at once
 * when it has not run for gapMs, else once at the end of the gap. A busy
 * queue's thousand events a second become at most one read per gap.
 */
export function throttle(fn, gapMs) {
  let last = 0;
  let timer = 0;
  return () => {
    if (timer) {
      return; // a run is already planned
    }
    const wait = last + gapMs - Date.now();
    if (wait <= 0) {
      last = Date.now();
      fn();
      return;
    }
    timer = setTimeout(() => {
      timer = 0;
      last = Date.now();
      fn();
    }, wait);
  };
}
