// queue.js: one queue's page. Links to its jobs per state (with counts), a
// form to open a job by id, the dead letters panel when the queue has dead
// jobs, the activity charts (activity.js), the flow control panel
// (settings and groups), the schedules panel, a link to its batches,
// a table of the jobs in the chosen state, a page at a time (on the
// delayed tab with "Promote all", bulk.js), and the
// queue's recent changes. The page reads itself again when the event feed
// tells it the queue changed, at most once a second.

import { ActivityPanel } from "./activity.js";
import { Problem, call, jobPath, jobsPage, queuePath } from "./api.js";
import { PromoteAll } from "./bulk.js";
import { DeadLetters } from "./deadletters.js";
import { FlowPanel } from "./flow.js";
import { button, h, keepFocus, tabStopWhenScrolling, when } from "./dom.js";
import { waitsFor } from "./job.js";
import { throttle } from "./live.js";
import { batchesHref, finishedStates, jobHref, queueHref, states } from "./routes.js";
import { PushPanel } from "./push.js";
import { SchedulesPanel } from "./schedules.js";

const pageSize = 50;

/** How many of the queue's latest changes the page lists. */
const recentMax = 20;

/** The least time between two reads of the page after events. */
const reloadGapMs = 1000;

/** What one event says, after its kind and job: the group or schedule, reason, error, count or who did it. */
function eventDetail(event) {
  const parts = [];
  if (event.group) {
    parts.push(`group ${event.group}`);
  }
  if (event.schedule) {
    parts.push(`schedule ${event.schedule}`);
  }
  if (event.state) {
    parts.push(`now ${event.state}`);
  }
  if (event.error) {
    parts.push(event.error);
  }
  if (event.reason) {
    parts.push(`reason: ${event.reason}`);
  }
  if (event.count !== undefined) {
    parts.push(`${event.count} jobs`);
  }
  if (event.actor) {
    parts.push(`by ${event.actor}`);
  }
  return parts.join(" · ");
}

/**
 * The one-line summary of a job for the list's last column: for a waiting
 * job, the jobs it waits for. A job that runs again keeps its last error;
 * it is marked as an earlier attempt's, so that a retried job does not
 * read as failing.
 */
function lastColumn(job) {
  if (job.state === "waiting") {
    return waitsFor(job.depends_on);
  }
  if (job.last_error) {
    return finishedStates.has(job.state) ? job.last_error : `earlier attempt: ${job.last_error}`;
  }
  if (job.cancel_reason) {
    return `cancel: ${job.cancel_reason}`;
  }
  return "";
}

/** The time column's heading and value for jobs in state. */
const timeColumn = {
  pending: ["Ready since", (job) => job.run_at || job.created_at],
  active: ["Lease ends", (job) => job.lease_expires_at],
  delayed: ["Due", (job) => job.run_at],
  waiting: ["Not before", (job) => job.run_at], // a delay_ms still counts once it is released
  completed: ["Finished", (job) => job.finished_at],
  dead: ["Died", (job) => job.finished_at],
  cancelled: ["Cancelled", (job) => job.finished_at],
};

/**
 * The queue view. show(route) renders route.queue's page for route.state
 * into root; ctx gives report(err), notice(text) and clearError().
 */
export class QueueView {
  constructor(root, ctx) {
    this.root = root;
    this.ctx = ctx;
    this.reloadSoon = throttle(() => this.shown && this.load(), reloadGapMs);
    // After a retry the page reloads; focus stays near the panel (or the heading once no job is dead).
    this.dead = new DeadLetters(ctx, async () => {
      await this.load();
      (this.dead.panel.hidden ? this.heading : this.dead.heading).focus();
    });
    this.flow = new FlowPanel(ctx, () => this.load());
    this.schedules = new SchedulesPanel(ctx, () => this.load());
    this.push = new PushPanel(ctx, () => this.load());
    this.activity = new ActivityPanel(ctx);
    this.promoteAll = new PromoteAll(ctx, () => this.load());
  }

  show(route) {
    this.shown = route; // an answer that comes after leave() or another show() is not drawn
    this.queue = route.queue;
    this.state = route.state;
    this.cursors = [""]; // the cursor of each page shown so far; the last is the current page
    this.build();
    this.load();
    this.activity.show(this.queue);
  }

  leave() {
    this.shown = null;
    this.schedules.stop();
    this.activity.stop();
  }

  /** Reads the page again: the event feed (re)opened. */
  reload() {
    this.reloadSoon();
    this.activity.heard();
  }

  /** Takes one event of the feed: one of this queue's is listed, and the page read again soon. */
  heard(event) {
    if (!this.shown || event.queue !== this.queue) {
      return;
    }
    const job = event.job_id ? h("a", { href: jobHref(this.queue, event.job_id) }, event.job_id) : null;
    const detail = eventDetail(event);
    this.recent.prepend(h("li", {}, when(event.at, true), " ", h("strong", {}, event.kind),
      job ? [" ", job] : null, detail ? ` — ${detail}` : null));
    while (this.recent.children.length > recentMax) {
      this.recent.lastElementChild.remove();
    }
    this.recentEmpty.hidden = true;
    this.reloadSoon();
    this.activity.heard();
  }

  /** Builds the page's fixed parts; load() fills them in. */
  build() {
    const q = this.queue;
    this.heading = h("h2", { tabIndex: -1 }, `Queue ${q}`);
    this.paused = h("p", { class: "status" });
    this.tabs = h("ul", { class: "tabs" });
    this.findInput = h("input", { id: "find-id", name: "id", required: true, autocomplete: "off", spellcheck: false });
    this.findMessage = h("p", { class: "status", role: "status" });
    const find = h("form", { class: "find" },
      h("label", { htmlFor: "find-id" }, "Find a job by id"),
      this.findInput,
      h("button", { type: "submit" }, "Open job"));
    find.addEventListener("submit", (event) => {
      event.preventDefault();
      this.find(this.findInput.value.trim());
    });
    this.caption = h("caption");
    this.tbody = h("tbody");
    const table = h("table", { class: "jobs" }, this.caption,
      h("thead", {}, h("tr", {},
        h("th", { scope: "col" }, "Job id"),
        h("th", { scope: "col", class: "num" }, "Attempts"),
        h("th", { scope: "col", class: "minor" }, "Created"),
        h("th", { scope: "col", class: "minor" }, timeColumn[this.state][0]),
        h("th", { scope: "col" }, this.state === "waiting" ? "Waits for" : "Last error or reason"))),
      this.tbody);
    this.empty = h("p", { class: "status", hidden: true });
    // After a page turn focus goes to the table, since the button pressed may now be disabled.
    this.first = button("First page", `First page of ${this.state} jobs`, () => this.turn(0));
    this.next = button("Next page", `Next page of ${this.state} jobs`, () => this.turn(this.cursors.length));
    this.region = h("div", { class: "table-scroll", role: "region", "aria-label": `Jobs of queue ${q}` }, table);
    tabStopWhenScrolling(this.region);
    if (this.recentQueue !== q) { // switching tabs keeps the queue's recent changes
      this.recentQueue = q;
      this.recent = h("ol", { class: "recent" });
      this.recentEmpty = h("p", { class: "status" }, "No changes since this page opened.");
    }
    const recent = h("section", { class: "recent-changes", "aria-labelledby": "recent-heading" },
      h("h3", { id: "recent-heading" }, "Recent changes"),
      h("p", { class: "status" }, `The latest ${recentMax} changes to this queue's jobs since this page opened, newest first.`),
      this.recentEmpty, this.recent);
    this.root.replaceChildren(
      h("p", {}, h("a", { href: "#/" }, "← All queues")),
      this.heading,
      h("p", {}, h("a", { href: batchesHref(q) }, `Batches of queue ${q}`)),
      h("p", {}, button("Refresh", `Refresh queue ${q}`, () => {
        this.load();
        this.activity.load();
      })),
      this.paused,
      this.dead.panel,
      this.activity.panel,
      this.flow.panel,
      this.schedules.panel,
      this.push.panel,
      h("nav", { "aria-label": `Job states of queue ${q}` }, this.tabs),
      find,
      this.findMessage,
      ...(this.state === "delayed" ? [this.promoteAll.panel] : []),
      this.region,
      this.empty,
      h("p", { class: "pager" }, this.first, " ", this.next),
      recent,
    );
    this.heading.focus();
  }

  /** Reads the queue's counts, the dead letters, flow control, schedules, its push target and the current page. */
  async load() {
    const shown = this.shown;
    if (!shown) {
      return; // the page was left (a retry that ends later asks for a load)
    }
    try {
      const queue = await call("GET", queuePath(this.queue));
      if (this.shown !== shown) {
        return;
      }
      this.showQueue(queue);
      await this.dead.load(this.queue, (queue.counts && queue.counts.dead) || 0, () => this.shown === shown, queue.counts || {});
      await this.flow.load(this.queue, () => this.shown === shown);
      await this.schedules.load(this.queue, () => this.shown === shown);
      await this.push.load(this.queue, queue.push, () => this.shown === shown);
      await this.page(this.cursors.length - 1);
    } catch (err) {
      if (this.shown === shown) {
        this.ctx.report(err);
      }
    }
  }

  showQueue(queue) {
    const counts = queue.counts || {};
    this.paused.textContent = queue.paused ? "This queue is paused: workers get no jobs until it is resumed." : "";
    this.promoteAll.show(this.queue, counts.delayed || 0);
    keepFocus(this.tabs, () => this.tabs.replaceChildren(...states.map((state) => {
      const n = (counts[state] || 0).toLocaleString();
      const current = state === this.state ? "page" : undefined;
      return h("li", {}, h("a", { href: queueHref(this.queue, state), "aria-current": current }, `${state} (${n})`));
    })));
  }

  async turn(i) {
    await this.page(i);
    this.region.focus();
  }

  /** Shows page i (0 is the first); i == cursors.length follows next_cursor. */
  async page(i) {
    if (i >= this.cursors.length) {
      if (!this.nextCursor) {
        return;
      }
      this.cursors.push(this.nextCursor);
    }
    this.cursors.length = i + 1;
    const shown = this.shown;
    try {
      const page = await jobsPage(this.queue, this.state, pageSize, this.cursors[i]);
      if (this.shown !== shown) {
        return;
      }
      this.nextCursor = page.next_cursor || "";
      this.showPage(page.jobs || [], i);
    } catch (err) {
      if (this.shown === shown) {
        this.ctx.report(err);
      }
    }
  }

  showPage(jobs, i) {
    this.caption.textContent = `${this.state[0].toUpperCase()}${this.state.slice(1)} jobs of queue ${this.queue}, page ${i + 1} (${pageSize} a page)`;
    keepFocus(this.tbody, () => this.tbody.replaceChildren(...jobs.map((job) => h("tr", {},
      h("th", { scope: "row" }, h("a", { href: jobHref(this.queue, job.id) }, job.id)),
      h("td", { class: "num" }, `${job.attempts ?? 0} / ${job.max_attempts ?? "—"}`),
      h("td", { class: "minor" }, when(job.created_at)),
      h("td", { class: "minor" }, when(timeColumn[this.state][1](job))),
      h("td", { class: "wrap" }, lastColumn(job))))));
    this.empty.hidden = jobs.length > 0;
    this.empty.textContent = i === 0 ? `No ${this.state} jobs in queue ${this.queue}.` : "No more jobs.";
    this.first.disabled = i === 0;
    this.next.disabled = !this.nextCursor;
  }

  /** Opens the job with id, or says plainly that the queue has none. */
  async find(id) {
    if (id === "") {
      return;
    }
    this.findMessage.textContent = "";
    try {
      await call("GET", jobPath(this.queue, id));
      location.hash = jobHref(this.queue, id);
    } catch (err) {
      if (err instanceof Problem && err.status === 404) {
        this.findMessage.textContent = `There is no job ${id} in queue ${this.queue}.`;
        return;
      }
      this.ctx.report(err);
    }
  }
}
