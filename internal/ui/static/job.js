// job.js: one job's page: its state, payload, result, progress, last error,
// attempts, timestamps and lease (counting down while active), with the
// actions its state and the key's role allow: retry, promote, cancel,
// remove. The page reads the job again when the event feed tells of a
// change to it (a worker finishing it, a cancel being honoured).

import { Problem, call, jobPath } from "./api.js";
import { button, duration, h, keepFocus, pretty, when } from "./dom.js";
import { throttle } from "./live.js";
import { may } from "./role.js";
import { finishedStates, queueHref } from "./routes.js";

/** The least time between two reads of the job after events. */
const reloadGapMs = 500;

/** "in 12 s", "3 s ago": how far the lease deadline is from now. */
export function countdown(iso, now = Date.now()) {
  const ms = new Date(iso).getTime() - now;
  if (Number.isNaN(ms)) {
    return "";
  }
  const span = duration(ms);
  return ms >= 0 ? `expires in ${span}` : `expired ${span} ago (the reaper sweeps it soon)`;
}

/** The job's last error; on a job that runs again, marked as an earlier attempt's. */
function lastError(job) {
  if (!job.last_error) {
    return "—";
  }
  const error = h("code", { class: "wrap" }, job.last_error);
  return finishedStates.has(job.state) ? error : h("span", {}, error, h("span", { class: "status" }, " (from an earlier attempt)"));
}

/** The actions a job in state allows, in the order of their buttons. */
export function actionsFor(state) {
  const actions = [];
  if (state === "dead" || state === "cancelled") {
    actions.push("retry");
  }
  if (state === "delayed") {
    actions.push("promote");
  }
  if (state === "pending" || state === "delayed" || state === "active") {
    actions.push("cancel");
  }
  actions.push("remove"); // an active job is removed only with force, after a confirm
  return actions;
}

/**
 * The job view. show(route) renders route.queue's job route.id into root;
 * ctx gives report(err), notice(text), clearError() and backState(queue),
 * the state tab of the queue to link back to.
 */
export class JobView {
  constructor(root, ctx) {
    this.root = root;
    this.ctx = ctx;
    this.timer = 0; // the lease countdown
    this.reloadSoon = throttle(() => this.shown && this.load(), reloadGapMs);
  }

  /** Reads the job again: the event feed (re)opened. */
  reload() {
    this.reloadSoon();
  }

  /**
   * Takes one event of the feed, and reads the job again when the event is
   * about it, or about its whole queue (drained: no job id).
   */
  heard(event) {
    if (this.shown && event.queue === this.queue && (event.job_id === this.id || !event.job_id)) {
      this.reloadSoon();
    }
  }

  show(route) {
    this.shown = route; // a load that ends after leave() or another show() draws nothing
    this.queue = route.queue;
    this.id = route.id;
    this.heading = h("h2", { tabIndex: -1 }, `Job ${this.id}`);
    this.body = h("div");
    this.root.replaceChildren(
      h("p", {}, h("a", { href: "#/" }, "All queues"), " / ",
        h("a", { href: queueHref(this.queue, this.ctx.backState(this.queue)) }, `Queue ${this.queue}`)),
      this.heading,
      h("p", {}, button("Refresh", `Refresh job ${this.id}`, () => this.load())),
      this.body,
    );
    this.heading.focus();
    this.load();
  }

  leave() {
    this.shown = null;
    clearInterval(this.timer);
  }

  async load() {
    const shown = this.shown;
    try {
      const job = await call("GET", jobPath(this.queue, this.id));
      if (this.shown === shown) {
        this.render(job);
      }
    } catch (err) {
      if (this.shown !== shown) {
        return; // an answer for a page that is gone
      }
      if (err instanceof Problem && err.status === 404) {
        clearInterval(this.timer);
        this.body.replaceChildren(h("p", { class: "error" }, `There is no job ${this.id} in queue ${this.queue}. ` +
          "It may have been removed, or a completed job may have aged out of the queue's retention."));
        return;
      }
      this.ctx.report(err);
    }
  }

  render(job) {
    clearInterval(this.timer); // here, not before the call: two loads may overlap
    const lease = h("span");
    const rows = [
      ["State", h("strong", { class: `state state-${job.state}` }, job.state)],
      ["Attempts", `${job.attempts ?? 0} of ${job.max_attempts ?? "—"}`],
      ["Times stalled", String(job.stalled ?? 0)], // its lease ran out while a worker held it
      ["Priority", String(job.priority ?? 0)],
      ["Group", job.group || "none"],
      ["Last error", lastError(job)],
      ["Cancel requested", job.cancel_requested ? `yes${job.cancel_reason ? `: ${job.cancel_reason}` : ""}` : "no"],
      ["Created", when(job.created_at)],
      ["Run at", when(job.run_at)],
      ["Last started", when(job.started_at)],
      ["Finished", when(job.finished_at)],
      ["Lease expires", job.lease_expires_at ? h("span", {}, when(job.lease_expires_at), " ", lease) : "—"],
    ];
    if (job.cancel_reason && !job.cancel_requested) {
      rows.splice(6, 0, ["Cancel reason", job.cancel_reason]);
    }
    // Admission and lifetimes (docs/admission.md): only for a job that has them.
    if (job.dedupe_key) rows.push(["Dedupe key", job.dedupe_key]);
    if (job.expires_at) rows.push(["Expires", when(job.expires_at)]);
    if (job.timeout_ms) rows.push(["Timeout", duration(job.timeout_ms)]);
    // The producer's trace (docs/observability.md): its trace id, what a
    // tracing backend is searched by; the whole traceparent on hover.
    if (job.traceparent) {
      rows.push(["Trace", h("code", { title: `traceparent ${job.traceparent}` }, job.traceparent.split("-")[1] ?? job.traceparent)]);
    }
    const allowed = actionsFor(job.state).filter((action) => may(action)); // none for a reader key
    keepFocus(this.body, () => this.body.replaceChildren(
      ...(allowed.length === 0 ? [] : [h("div", { class: "job-actions", role: "group", "aria-label": `Actions on job ${job.id}` },
        allowed.map((action) => this.actionButton(action, job)))]),
      h("dl", { class: "fields" }, rows.map(([name, value]) => [h("dt", {}, name), h("dd", {}, value)])),
      ...["payload", "result", "progress"].map((field) => h("section", { "aria-label": field },
        h("h3", {}, field[0].toUpperCase() + field.slice(1)),
        h("pre", { class: "json", tabIndex: 0 }, pretty(job[field])))),
    ));
    if (job.state === "active" && job.lease_expires_at) {
      const tick = () => { lease.textContent = `(${countdown(job.lease_expires_at)})`; };
      tick();
      this.timer = setInterval(tick, 1000);
    }
  }

  actionButton(action, job) {
    const text = action[0].toUpperCase() + action.slice(1);
    const danger = action === "remove" || action === "cancel" ? "danger" : undefined;
    return button(text, `${text} job ${job.id}`, () => this.act(action, job), danger);
  }

  /** Runs one action on the job, asking first where it matters, then refreshes. */
  async act(action, job) {
    const path = jobPath(this.queue, job.id);
    try {
      switch (action) {
        case "retry":
        case "promote":
          await call("POST", `${path}/${action}`);
          this.ctx.notice(`Job ${job.id} ${action === "retry" ? "sent back to pending" : "promoted to pending"}.`);
          break;
        case "cancel": {
          const reason = prompt(`Cancel job ${job.id}? Give a reason (shown to its worker and kept on the job):`, "");
          if (reason === null) {
            return;
          }
          const body = reason.trim() === "" ? {} : { reason: reason.trim() };
          await call("POST", `${path}/cancel`, body);
          this.ctx.notice(job.state === "active"
            ? `Cancel requested for job ${job.id}: its worker stops at its next check.`
            : `Job ${job.id} cancelled.`);
          break;
        }
        case "remove":
          if (!(await this.remove(job, path))) {
            return;
          }
          this.ctx.notice(`Job ${job.id} removed.`);
          location.hash = queueHref(this.queue, job.state);
          return;
      }
      this.ctx.clearError();
    } catch (err) {
      this.ctx.report(err);
    }
    await this.load();
    this.heading.focus();
  }

  /** Deletes the job after a confirm; an active one only with force. */
  async remove(job, path) {
    if (job.state === "active") {
      if (!confirm(`Job ${job.id} is active: a worker holds it. Remove it anyway (force)? The worker's next call for it will fail.`)) {
        return false;
      }
      await call("DELETE", `${path}?force=true`);
      return true;
    }
    if (!confirm(`Remove job ${job.id} for good?`)) {
      return false;
    }
    await call("DELETE", path);
    return true;
  }
}
