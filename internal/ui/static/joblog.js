// joblog.js: a job's log on its page (docs/workers.md#logs): the lines its
// workers appended, oldest first, each with its time. The page reads the
// whole log at once (a job keeps its last 1,000 lines, one read's worth),
// and while the job is active reads on from its cursor every couple of
// seconds, so that new lines show as they come; the service answers a
// cursor at the end with no lines, and later with the lines since.

import { Problem, call, jobPath } from "./api.js";
import { h, plural } from "./dom.js";

/** How often an active job's log is read again, in ms. */
export const followMs = 2000;

/** The lines one read asks for: all a job keeps. */
export const pageLines = 1000;

/** The path of a page of a job's log from cursor ("" for the oldest line kept). */
export function logPath(queue, id, cursor = "") {
  const query = new URLSearchParams({ limit: String(pageLines) });
  if (cursor) {
    query.set("cursor", cursor);
  }
  return `${jobPath(queue, id)}/logs?${query}`;
}

/** "19:07:07.123": a line's time of day in local time, to the millisecond; the text as it is when it is no time. */
export function clock(iso) {
  const t = new Date(iso);
  if (Number.isNaN(t.getTime())) {
    return iso;
  }
  const two = (n) => String(n).padStart(2, "0");
  return `${two(t.getHours())}:${two(t.getMinutes())}:${two(t.getSeconds())}.${String(t.getMilliseconds()).padStart(3, "0")}`;
}

/** What the log's status line says: how many lines it shows, and whether it follows the job. */
export function logStatus(shown, following) {
  const count = shown === 0 ? "No lines yet." : `${plural(shown, "line")}, oldest first.`;
  return following ? `${count} Following the job: new lines show every ${followMs / 1000} s.` : count;
}

/**
 * A job's log. element is its section of the page; start(queue, id)
 * reads it, follow(active) reads on every followMs while active (and once
 * more when it stops), stop() ends every read when the page leaves.
 */
export class JobLog {
  constructor() {
    this.element = h("section", { "aria-label": "log" });
    this.timer = 0;
    this.run = null; // the log being shown: a read that ends after stop() or another start() draws nothing
  }

  start(queue, id) {
    this.stop();
    this.run = { queue, id, cursor: "", shown: 0 };
    this.status = h("p", { class: "status", role: "status" }, "Reading the log…");
    this.list = h("ol", { class: "log", tabIndex: 0, "aria-label": `Log of job ${id}` });
    this.element.replaceChildren(h("h3", {}, "Log"), this.status, this.list);
    this.read();
  }

  /** Reads on every followMs while the job is active; once more when it stops being so (its last lines). */
  follow(active) {
    if (active && !this.timer && this.run) {
      this.timer = setInterval(() => this.read(), followMs);
      this.showStatus();
    } else if (!active && this.timer) {
      clearInterval(this.timer);
      this.timer = 0;
      this.read();
    }
  }

  stop() {
    clearInterval(this.timer);
    this.timer = 0;
    this.run = null;
  }

  /** Reads the lines after the cursor, page by page, and shows them; one read at a time. */
  async read() {
    const run = this.run;
    if (!run || run.reading) {
      return;
    }
    run.reading = true;
    try {
      for (;;) {
        const page = await call("GET", logPath(run.queue, run.id, run.cursor));
        if (this.run !== run) {
          return; // the page left, or shows another job
        }
        this.show(page.lines);
        run.cursor = page.next_cursor;
        if (page.lines.length < pageLines) {
          break;
        }
      }
      this.showStatus();
    } catch (err) {
      if (this.run === run) {
        this.status.textContent = err instanceof Problem && err.status === 404
          ? "The job is gone, and its log with it."
          : `The log cannot be read now: ${err.message}`;
      }
    } finally {
      run.reading = false;
    }
  }

  /** Adds lines at the end, keeping the view at the newest when it was there, and the last pageLines lines. */
  show(lines) {
    if (lines.length === 0) {
      return;
    }
    const list = this.list;
    const atEnd = list.scrollTop + list.clientHeight >= list.scrollHeight - 4;
    list.append(...lines.map((l) => h("li", {},
      h("time", { dateTime: l.at, title: l.at }, clock(l.at)), " ", h("span", { class: "log-line" }, l.line))));
    while (list.children.length > pageLines) {
      list.firstElementChild.remove();
    }
    this.run.shown = list.children.length;
    if (atEnd) {
      list.scrollTop = list.scrollHeight;
    }
  }

  showStatus() {
    if (this.run) {
      this.status.textContent = logStatus(this.run.shown, this.timer !== 0);
    }
  }
}
