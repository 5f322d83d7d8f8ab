// schedules.js: the "Schedules" panel of a queue's page: the queue's
// schedules by name, a page at a time, each with its cadence in words,
// whether it is paused, its next and last run (the last linking to its
// job) and its counts; and, for a key whose role may, a Pause or Resume
// and a "Run now" button each. Schedules are made and changed over the
// API (PUT /queues/{queue}/schedules/{name}); the panel shows and steers
// them. Its relative times ("in 42 s") count down each second.

import { call, queuePath } from "./api.js";
import { button, fromNow, h, keepFocus, tabStopWhenScrolling, when } from "./dom.js";
import { may } from "./role.js";
import { jobHref } from "./routes.js";

/** How many schedules a page of the panel lists. */
export const schedulesShown = 50;

/** The path of one schedule of a queue, both escaped. */
function schedulePath(queue, name) {
  return `${queuePath(queue)}/schedules/${encodeURIComponent(name)}`;
}

/** "1 min", "90 s", "2 h", "1,500 ms": an every_ms interval in its largest whole unit. */
export function interval(ms) {
  for (const [unit, size] of [["h", 3_600_000], ["min", 60_000], ["s", 1000]]) {
    if (ms >= size && ms % size === 0) {
      return `${(ms / size).toLocaleString()} ${unit}`;
    }
  }
  return `${ms.toLocaleString()} ms`;
}

/** A schedule's cadence in words: "every 1 min", or 'cron "0 3 * * *" in Europe/Berlin' (UTC when it names no zone). */
export function cadence(s) {
  if (s.cron) {
    return `cron "${s.cron}" in ${s.tz || "UTC"}`;
  }
  return s.every_ms ? `every ${interval(s.every_ms)}` : "—";
}

/** Why a schedule has no next run: it is paused, or it is past its end_at. */
export function noNextRun(s) {
  return s.paused ? "none while paused" : "none: past its end";
}

/** text with a line break allowed after each "/": a zone such as America/Argentina/Buenos_Aires is long for a phone. */
function breakAfterSlashes(text) {
  return text.split("/").flatMap((part, i, all) => (i < all.length - 1 ? [`${part}/`, h("wbr")] : [part]));
}

/** The cadence's words in a cell: a quoted cron expression kept on one line, the rest breakable after a "/". */
function cadenceCell(text) {
  return text.split('"').map((part, i) => (i % 2 === 1 ? h("span", { class: "nowrap" }, `"${part}"`) : breakAfterSlashes(part)));
}

/** Whether the key's role may use any of the schedules' buttons (they are all the admin's). */
function mayAct() {
  return may("pause") || may("resume") || may("run");
}

/**
 * The panel: load(queue, current) fills it with the current page of
 * queue's schedules; changed() is called after an action, so that the
 * page reads itself again; stop() stops the countdown while the page is
 * not shown.
 */
export class SchedulesPanel {
  constructor(ctx, changed) {
    this.ctx = ctx;
    this.changed = changed;
    this.timer = 0; // ticks the relative times
    this.current = () => false; // whether the page of the last load is still shown
    this.heading = h("h3", { id: "schedules-heading", tabIndex: -1 }, "Schedules");
    this.note = h("p", { class: "status" });
    this.ran = h("p", { class: "status", role: "status" }); // the job "Run now" enqueued, as a link
    this.caption = h("caption");
    this.actionsHead = h("th", { scope: "col" }, "Actions");
    this.body = h("tbody");
    this.region = h("div", { class: "table-scroll", role: "region", "aria-label": "Schedules, by name" },
      h("table", { class: "jobs schedules" }, this.caption,
        h("thead", {}, h("tr", {},
          h("th", { scope: "col" }, "Schedule"),
          h("th", { scope: "col" }, "Cadence"),
          h("th", { scope: "col", class: "minor" }, "Paused"),
          h("th", { scope: "col" }, "Next run"),
          h("th", { scope: "col" }, "Last run"),
          h("th", { scope: "col", class: "num minor" }, "Runs"),
          h("th", { scope: "col", class: "num minor" }, "Skipped"),
          h("th", { scope: "col", class: "num minor" }, "Missed"),
          this.actionsHead)),
        this.body));
    tabStopWhenScrolling(this.region);
    // After a page turn focus goes to the table, since the button pressed may now be disabled.
    this.first = button("First page", "First page of schedules", () => this.turn(0));
    this.next = button("Next page", "Next page of schedules", () => this.turn(this.cursors.length));
    this.pager = h("p", { class: "pager", hidden: true }, this.first, " ", this.next);
    this.panel = h("section", { class: "schedules-panel", "aria-labelledby": "schedules-heading" },
      this.heading, this.note, this.ran, this.region, this.pager);
  }

  /** Reads the current page of queue's schedules; current() says whether the page is still shown. */
  async load(queue, current) {
    if (this.queue !== queue) {
      this.queue = queue;
      this.cursors = [""]; // the cursor of each page shown so far; the last is the current page
      this.ran.replaceChildren();
    }
    this.current = current;
    const i = this.cursors.length - 1;
    const query = new URLSearchParams({ limit: String(schedulesShown) });
    if (this.cursors[i]) {
      query.set("cursor", this.cursors[i]);
    }
    const page = await call("GET", `${queuePath(queue)}/schedules?${query}`);
    if (!current() || this.queue !== queue || this.cursors.length - 1 !== i) {
      return; // another page or queue was asked for meanwhile
    }
    this.nextCursor = page.next_cursor || "";
    this.show(page.schedules || [], i);
  }

  show(schedules, i) {
    const q = this.queue;
    const acts = mayAct();
    this.caption.textContent = `Schedules of queue ${q}, by name` +
      (i > 0 || this.nextCursor ? `, page ${i + 1} (${schedulesShown} a page)` : "");
    this.actionsHead.hidden = !acts;
    this.region.hidden = schedules.length === 0;
    if (schedules.length === 0 && i === 0) {
      this.note.replaceChildren("No schedules in this queue. They are made over the API, with ",
        h("code", {}, `PUT ${queuePath(q)}/schedules/{name}`), ".");
    } else {
      this.note.textContent = schedules.length === 0 ? "No more schedules."
        : acts ? "" : "Pausing, resuming or running a schedule needs an admin key.";
    }
    keepFocus(this.body, () => this.body.replaceChildren(...schedules.map((s) => this.row(s, acts))));
    this.pager.hidden = i === 0 && !this.nextCursor;
    this.first.disabled = i === 0;
    this.next.disabled = !this.nextCursor;
    if (!this.timer) {
      this.timer = setInterval(() => this.tick(), 1000);
    }
  }

  /** Stops the countdown of the relative times; the next load starts it again. */
  stop() {
    clearInterval(this.timer);
    this.timer = 0;
  }

  /** Says again how far each time shown is from now. */
  tick() {
    for (const node of this.body.querySelectorAll("[data-at]")) {
      node.textContent = `(${fromNow(node.dataset.at)})`;
    }
  }

  /** Shows page i (0 is the first); i == cursors.length follows next_cursor. */
  async turn(i) {
    if (i >= this.cursors.length) {
      if (!this.nextCursor) {
        return;
      }
      this.cursors.push(this.nextCursor);
    }
    this.cursors.length = i + 1;
    try {
      await this.load(this.queue, this.current);
    } catch (err) {
      this.ctx.report(err);
    }
    this.region.focus();
  }

  row(s, acts) {
    return h("tr", {},
      h("th", { scope: "row" }, s.name),
      h("td", {}, cadenceCell(cadence(s))),
      h("td", { class: s.paused ? "minor is-paused" : "minor" }, s.paused ? "paused" : "no"),
      h("td", {}, s.next_run_at ? this.time(s.next_run_at) : noNextRun(s)),
      h("td", {}, s.last_run_at ? this.time(s.last_run_at) : "never",
        s.last_job_id ? h("div", {}, "job ", h("a", { href: jobHref(this.queue, s.last_job_id) }, s.last_job_id)) : null),
      h("td", { class: "num minor" }, (s.runs || 0).toLocaleString()),
      h("td", { class: "num minor" }, (s.skipped || 0).toLocaleString()),
      h("td", { class: "num minor" }, (s.missed || 0).toLocaleString()),
      acts ? h("td", { class: "actions" }, this.buttons(s)) : null);
  }

  /** A time, absolute and then relative ("in 42 s"), which tick() keeps up to date. */
  time(iso) {
    return h("div", {}, when(iso), " ", h("span", { class: "ago", "data-at": iso }, `(${fromNow(iso)})`));
  }

  /** Pause or Resume, and Run now: those the role may use. */
  buttons(s) {
    const out = [];
    const verb = s.paused ? "resume" : "pause";
    if (may(verb)) {
      const text = s.paused ? "Resume" : "Pause";
      const toggle = button(text, `${text} schedule ${s.name}`, () => this.setPaused(s.name, verb));
      toggle.dataset.focusKey = `schedule:${s.name}`; // its label changes with the state
      out.push(toggle);
    }
    if (may("run")) {
      out.push(button("Run now", `Run now: schedule ${s.name}`, () => this.run(s.name)));
    }
    return out;
  }

  async setPaused(name, verb) {
    try {
      await call("POST", `${schedulePath(this.queue, name)}/${verb}`);
      this.ctx.notice(`${verb === "pause" ? "Paused" : "Resumed"} schedule ${name}.`);
      this.changed();
    } catch (err) {
      this.ctx.report(err);
    }
  }

  /** Enqueues one job of the schedule now, and links to it. */
  async run(name) {
    const queue = this.queue;
    try {
      const job = await call("POST", `${schedulePath(queue, name)}/run`);
      if (this.queue === queue) {
        this.ran.replaceChildren(`Ran schedule ${name} now: job `,
          h("a", { href: jobHref(queue, job.id) }, job.id), ` is ${job.state}.`);
      }
      this.changed();
    } catch (err) {
      this.ctx.report(err);
    }
  }
}
