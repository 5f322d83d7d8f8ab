// push.js: the "Push delivery" panel of a queue's page: the queue's push
// target (docs/push.md), where the service POSTs its jobs, with its limits
// and whether deliveries are signed, and its last failed deliveries, each
// linking to its job. Targets are set over the API (PUT
// /queues/{queue}/push, an admin's); the panel shows them.

import { Problem, call, queuePath } from "./api.js";
import { duration, h, keepFocus, tabStopWhenScrolling, when } from "./dom.js";
import { jobHref } from "./routes.js";

/** A length of time in ms as duration() says it, or in ms under a second. */
function span(ms) {
  return ms < 1000 ? `${ms} ms` : duration(ms);
}

/** The target's settings in words: "4 at once, 30 s timeout, 1 min 0 s lease, signed". */
export function describeTarget(t) {
  return `${t.concurrency.toLocaleString()} at once, ${span(t.timeout_ms)} timeout, ` +
    `${span(t.lease_ms)} lease, ${t.secret_set ? "signed" : "not signed"}`;
}

/** The panel: load(queue, has, current) fills it. */
export class PushPanel {
  constructor() {
    this.heading = h("h3", { id: "push-heading" }, "Push delivery");
    this.body = h("div");
    this.panel = h("section", { class: "push", "aria-labelledby": "push-heading" }, this.heading, this.body);
  }

  /**
   * Reads the queue's target when it has one (has: the queue's push flag,
   * so that a queue without one costs no request, nor a 404 in the
   * console); current() says whether the page is still shown.
   */
  async load(queue, has, current) {
    let target = null;
    try {
      target = has ? await call("GET", `${queuePath(queue)}/push`) : null;
    } catch (err) {
      if (!(err instanceof Problem && err.status === 404)) { // taken away since the queue was read
        throw err;
      }
    }
    if (!current()) {
      return;
    }
    keepFocus(this.body, () => this.body.replaceChildren(...(target ? this.target(queue, target) : [
      h("p", { class: "status" }, "No push target: workers claim this queue's jobs. One is set over the API, with ",
        h("code", {}, `PUT ${queuePath(queue)}/push`), "."),
    ])));
  }

  target(queue, t) {
    const errors = t.recent_errors || [];
    const rows = errors.map((e) => h("tr", {},
      h("th", { scope: "row" }, h("a", { href: jobHref(queue, e.job_id) }, e.job_id)),
      h("td", { class: "minor" }, when(e.at)),
      h("td", { class: "num" }, String(e.attempt)),
      h("td", { class: "num" }, e.status ? String(e.status) : "—"),
      h("td", { class: "wrap" }, e.error)));
    const table = h("div", { class: "table-scroll", role: "region", "aria-label": "Failed deliveries" },
      h("table", { class: "jobs" }, h("caption", {}, `The last ${errors.length} failed deliveries, newest first`),
        h("thead", {}, h("tr", {},
          h("th", { scope: "col" }, "Job id"),
          h("th", { scope: "col", class: "minor" }, "When"),
          h("th", { scope: "col", class: "num" }, "Attempt"),
          h("th", { scope: "col", class: "num" }, "Status"),
          h("th", { scope: "col" }, "Error"))),
        h("tbody", {}, rows)));
    tabStopWhenScrolling(table);
    return [
      h("p", { class: "wrap" }, "Jobs are POSTed to ", h("code", {}, t.url), `: ${describeTarget(t)}. Set `, when(t.updated_at), "."),
      errors.length ? table : h("p", { class: "status" }, "No failed deliveries."),
    ];
  }
}
