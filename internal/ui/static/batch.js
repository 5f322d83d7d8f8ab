// batch.js: one batch's page (#/queues/<queue>/batches/<id>): its state, how
// many jobs it has and how they stand (a bar, and the counts by state in
// the queue page's style), whether it succeeded, its callback (queue and
// when) and, once the callback job is enqueued, a link to it. The page
// reads the batch again when the event feed tells of a change to its
// queue or its callback's queue, at most once a second. A done batch's
// callback job is enqueued by a dispatcher within about a second, and the
// batch learns its id with no event of its own: while it is owed, the
// page reads the batch every second until the link is there. The batches
// view (#/queues/<queue>/batches) lists a queue's batches, newest first.

import { Problem, batchPath, call, queuePath } from "./api.js";
import { button, h, keepFocus, plural, pretty, when } from "./dom.js";
import { throttle } from "./live.js";
import { batchHref, batchesHref, jobHref, queueHref, states } from "./routes.js";

/** The least time between two reads of the batch after events. */
const reloadGapMs = 1000;

/** How often a done batch is read while its callback job is owed. */
const owedReadMs = 1000;

/** What each state of a batch means, after its word. */
export const batchStates = {
  open: "open: jobs may still be added; it is not done before it is committed",
  running: "running: committed, and some of its jobs have not ended",
  done: "done: every job of it has ended",
};

/** How many of the batch's jobs have ended: completed, dead or cancelled. */
export function ended(counts = {}) {
  return (counts.completed || 0) + (counts.dead || 0) + (counts.cancelled || 0);
}

/** The states the batch has jobs in, with their counts, in the dashboard's order: the bar's parts. */
export function parts(counts = {}) {
  return states.filter((state) => (counts[state] || 0) > 0).map((state) => ({ state, n: counts[state] }));
}

/** The bar's text alternative: "3 of 5 jobs ended; 2 completed, 1 dead, 2 pending". */
export function barText(batch) {
  const byState = parts(batch.counts).map(({ state, n }) => `${n.toLocaleString()} ${state}`).join(", ");
  const head = `${ended(batch.counts).toLocaleString()} of ${plural(batch.total, "job")} ended`;
  return byState ? `${head}: ${byState}` : head;
}

/** Whether a done batch still owes its callback job: when complete, or when success and it succeeded; never without a callback. */
export function callbackOwed(batch) {
  return batch.state === "done" && Boolean(batch.callback) && !batch.callback_job_id &&
    (batch.callback.when !== "success" || batch.success);
}

/** The callback as asked for, in words: absent when the batch was made without one. */
export function callbackText(callback) {
  if (!callback) {
    return "none: the batch enqueues no job when it is done";
  }
  const when = callback.when === "success" ? "only if every job completed (success)" : "once every job has ended (complete)";
  return `on queue ${callback.queue}, ${when}`;
}

/** Whether the batch succeeded, in words: known once it is done. */
export function successText(batch) {
  if (batch.state !== "done") {
    return "not known yet: the batch is not done";
  }
  return batch.success ? "yes: every job completed" : "no: not every job completed";
}

/**
 * The batch view. show(route) renders route.queue's batch route.id into
 * root; ctx gives report(err).
 */
export class BatchView {
  constructor(root, ctx) {
    this.root = root;
    this.ctx = ctx;
    this.timer = 0; // the next read while the callback is owed
    this.reloadSoon = throttle(() => this.shown && this.load(), reloadGapMs);
  }

  show(route) {
    this.shown = route; // a load that ends after leave() or another show() draws nothing
    this.queue = route.queue;
    this.id = route.id;
    this.callbackQueue = "";
    this.heading = h("h2", { tabIndex: -1 }, `Batch ${this.id}`);
    this.body = h("div");
    this.root.replaceChildren(
      h("p", {}, h("a", { href: "#/" }, "All queues"), " / ", h("a", { href: queueHref(this.queue) }, `Queue ${this.queue}`),
        " / ", h("a", { href: batchesHref(this.queue) }, "Batches")),
      this.heading,
      h("p", {}, button("Refresh", `Refresh batch ${this.id}`, () => this.load())),
      this.body,
    );
    this.heading.focus();
    this.load();
  }

  leave() {
    this.shown = null;
    clearTimeout(this.timer);
  }

  /** Reads the batch again: the event feed (re)opened. */
  reload() {
    this.reloadSoon();
  }

  /** Takes one event of the feed: one of the batch's queue or its callback's is a reason to read it again. */
  heard(event) {
    if (this.shown && (event.queue === this.queue || event.queue === this.callbackQueue)) {
      this.reloadSoon();
    }
  }

  async load() {
    const shown = this.shown;
    clearTimeout(this.timer);
    try {
      const batch = await call("GET", batchPath(this.queue, this.id));
      if (this.shown !== shown) {
        return;
      }
      this.callbackQueue = batch.callback ? batch.callback.queue : "";
      this.render(batch);
      if (callbackOwed(batch)) {
        this.timer = setTimeout(() => this.load(), owedReadMs);
      }
    } catch (err) {
      if (this.shown !== shown) {
        return; // an answer for a page that is gone
      }
      if (err instanceof Problem && err.status === 404) {
        this.body.replaceChildren(h("p", { class: "error" }, `There is no batch ${this.id} in queue ${this.queue}. ` +
          "A batch is kept 7 days after it is done."));
        return;
      }
      this.ctx.report(err);
    }
  }

  render(batch) {
    const rows = [
      ["State", h("strong", {}, batchStates[batch.state] || batch.state)],
      ["Jobs", `${plural(batch.total, "job")}, ${ended(batch.counts).toLocaleString()} ended`],
      ["Success", successText(batch)],
      ["Callback", callbackText(batch.callback)],
      ["Callback job", this.callbackJob(batch)],
      ["Created", when(batch.created_at)],
      ["Finished", when(batch.finished_at)],
    ];
    keepFocus(this.body, () => this.body.replaceChildren(
      h("dl", { class: "fields" }, rows.map(([name, value]) => [h("dt", {}, name), h("dd", {}, value)])),
      this.countsSection(batch),
      batch.callback?.payload === undefined ? null : h("section", { "aria-label": "Callback payload" },
        h("h3", {}, "Callback payload"),
        h("pre", { class: "json", tabIndex: 0 }, pretty(batch.callback.payload))),
    ));
  }

  /** The callback job: a link once it is enqueued, else why there is none (yet). */
  callbackJob(batch) {
    if (batch.callback_job_id) {
      return h("a", { href: jobHref(batch.callback.queue, batch.callback_job_id) }, batch.callback_job_id);
    }
    if (batch.state !== "done") {
      return "not yet: it is enqueued once the batch is done";
    }
    return callbackOwed(batch) ? "being enqueued (within about a second)" : "none: not every job completed";
  }

  /** The batch's jobs by state: a bar of the states it has jobs in, and every state's count, which are its legend. */
  countsSection(batch) {
    const counts = batch.counts || {};
    const bar = h("div", { class: "batch-bar", role: "img", "aria-label": barText(batch) },
      parts(counts).map(({ state, n }) => {
        const part = h("span", { class: `part state-fill-${state}` });
        part.style.flexGrow = String(n); // through the CSSOM, which the CSP allows (a style attribute it does not)
        return part;
      }));
    bar.hidden = batch.total === 0;
    return h("section", { class: "batch-counts", "aria-labelledby": "batch-counts-heading" },
      h("h3", { id: "batch-counts-heading" }, "Jobs by state"),
      bar,
      h("ul", { class: "tabs counters" }, states.map((state) => h("li", {},
        h("span", { class: `swatch state-fill-${state}`, "aria-hidden": "true" }),
        `${state} (${(counts[state] || 0).toLocaleString()})`))));
  }
}

/** How many batches a page of the batches view shows. */
const batchesPageSize = 20;

/** A batch's row text for its jobs: "3 of 5 ended". */
export function endedText(batch) {
  return `${ended(batch.counts).toLocaleString()} of ${plural(batch.total, "job")} ended`;
}

/**
 * The batches view (#/queues/<queue>/batches): the queue's batches, newest
 * first, a page at a time, each linking to its page. It reads the page
 * again when the event feed tells of a change to the queue, at most once
 * a second.
 */
export class BatchesView {
  constructor(root, ctx) {
    this.root = root;
    this.ctx = ctx;
    this.reloadSoon = throttle(() => this.shown && this.page(this.cursors.length - 1), reloadGapMs);
  }

  show(route) {
    this.shown = route;
    this.queue = route.queue;
    this.cursors = [""]; // the cursor of each page shown so far; the last is the current page
    this.nextCursor = "";
    const q = this.queue;
    this.heading = h("h2", { tabIndex: -1 }, `Batches of queue ${q}`);
    this.caption = h("caption");
    this.tbody = h("tbody");
    this.region = h("div", { class: "table-scroll", role: "region", "aria-label": `Batches of queue ${q}`, tabIndex: -1 },
      h("table", { class: "jobs" }, this.caption,
        h("thead", {}, h("tr", {},
          h("th", { scope: "col" }, "Batch id"),
          h("th", { scope: "col" }, "State"),
          h("th", { scope: "col" }, "Jobs"),
          h("th", { scope: "col" }, "Success"),
          h("th", { scope: "col", class: "minor" }, "Created"),
          h("th", { scope: "col", class: "minor" }, "Finished"))),
        this.tbody));
    this.empty = h("p", { class: "status", hidden: true });
    this.first = button("First page", `First page of the batches of queue ${q}`, () => this.turn(0));
    this.next = button("Next page", `Next page of the batches of queue ${q}`, () => this.turn(this.cursors.length));
    this.root.replaceChildren(
      h("p", {}, h("a", { href: "#/" }, "All queues"), " / ", h("a", { href: queueHref(q) }, `Queue ${q}`)),
      this.heading,
      h("p", { class: "status" }, "Newest first: open, running and done batches (a done batch is kept 7 days)."),
      h("p", {}, button("Refresh", `Refresh the batches of queue ${q}`, () => this.page(this.cursors.length - 1))),
      this.region,
      this.empty,
      h("p", { class: "pager" }, this.first, " ", this.next),
    );
    this.heading.focus();
    this.page(0);
  }

  leave() {
    this.shown = null;
  }

  /** Reads the page again: the event feed (re)opened. */
  reload() {
    this.reloadSoon();
  }

  /** Takes one event of the feed: one of the queue's may change a batch. */
  heard(event) {
    if (this.shown && event.queue === this.queue) {
      this.reloadSoon();
    }
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
    const query = new URLSearchParams({ limit: String(batchesPageSize) });
    if (this.cursors[i]) {
      query.set("cursor", this.cursors[i]);
    }
    try {
      const page = await call("GET", `${queuePath(this.queue)}/batches?${query}`);
      if (this.shown !== shown) {
        return;
      }
      this.nextCursor = page.next_cursor || "";
      this.render(page.batches || [], i);
    } catch (err) {
      if (this.shown === shown) {
        this.ctx.report(err);
      }
    }
  }

  render(batches, i) {
    this.caption.textContent = `Batches of queue ${this.queue}, newest first, page ${i + 1} (${batchesPageSize} a page)`;
    keepFocus(this.tbody, () => this.tbody.replaceChildren(...batches.map((b) => h("tr", {},
      h("th", { scope: "row" }, h("a", { href: batchHref(this.queue, b.id) }, b.id)),
      h("td", {}, b.state),
      h("td", {}, endedText(b)),
      h("td", {}, b.state === "done" ? (b.success ? "yes" : "no") : "—"),
      h("td", { class: "minor" }, when(b.created_at)),
      h("td", { class: "minor" }, when(b.finished_at))))));
    this.empty.hidden = batches.length > 0;
    this.empty.textContent = i === 0 ? `No batches in queue ${this.queue}.` : "No more batches.";
    this.first.disabled = i === 0;
    this.next.disabled = !this.nextCursor;
  }
}
