// job.js: one job's page: its state, payload, result, progress, last error,
// attempts, timestamps and lease (counting down while active), its batch
// and the jobs it depends on (each with its state), with the actions its
// state and the key's role allow: retry, promote, cancel, remove, and edit
// (its payload, priority and run time, edit.js) while it has not started. The page
// reads the job again when the event feed tells of a change to it (a
// worker finishing it, a cancel being honoured, its release) or to one of
// its dependencies; a progress event that carries the progress (at most
// 1 KB of JSON) is drawn at once, without a read. Below, the job's log
// (joblog.js), followed while the job is active.

import { Problem, call, jobPath } from "./api.js";
import { button, duration, h, keepFocus, pretty, when } from "./dom.js";
import { editForm, editable } from "./edit.js";
import { JobLog } from "./joblog.js";
import { throttle } from "./live.js";
import { may } from "./role.js";
import { batchHref, finishedStates, jobHref, queueHref } from "./routes.js";

/** The least time between two reads of the job after events. */
const reloadGapMs = 500;

/** How many of a job's dependencies (up to 100) its page reads the state of; the rest are linked only. */
export const depsRead = 20;

/** How many of a waiting job's dependencies its row in a queue's list names; the rest are counted. */
const depsNamed = 3;

/** "a, b, c and 2 more": the jobs a waiting job waits for, in its row of a queue's list. */
export function waitsFor(ids = []) {
  const named = ids.slice(0, depsNamed).join(", ");
  return ids.length > depsNamed ? `${named} and ${ids.length - depsNamed} more` : named;
}

/**
 * The dependency that cancelled a job, from its cancel_reason ("dependency
 * <id> <state>", lua/batches.lua), as {id, state}; null for another reason
 * or an id the job does not depend on.
 */
export function failedDependency(reason, dependsOn = []) {
  const m = /^dependency (\S+) (\S+)$/.exec(reason || "");
  return m && dependsOn.includes(m[1]) ? { id: m[1], state: m[2] } : null;
}

/** What a dependant's on_dependency_failure does, in words after the API's word. */
export const onFailureText = {
  cancel: "cancel: the job is cancelled if one of them ends dead or cancelled",
  run: "run: the job runs once each has ended, however it ended",
};

/**
 * The batch a callback job reports on, {queue, id}, from its id
 * ("batch:<id>", or "batch:<queue>:<id>:<ms>" when another batch's
 * callback held that one; no enqueue may start an id with "batch:") and
 * payload ({"batch": the batch, ...}); null for any other job.
 */
export function callbackOf(job) {
  const batch = job.payload && job.payload.batch;
  if (!job.id.startsWith("batch:") || !batch || typeof batch.id !== "string" || typeof batch.queue !== "string") {
    return null;
  }
  const rest = job.id.slice("batch:".length);
  return rest === batch.id || rest.startsWith(`${batch.queue}:${batch.id}:`) ? { queue: batch.queue, id: batch.id } : null;
}

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

/**
 * What a progress event of job id says of its progress: {value} when the
 * event carries it (its JSON is at most 1 KB), "read" when it left out a
 * larger one (progress_truncated: read the job), null for any other event.
 */
export function progressOf(event, id) {
  if (event.kind !== "progress" || event.job_id !== id) {
    return null;
  }
  return "progress" in event && !event.progress_truncated ? { value: event.progress } : "read";
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
  if (state === "pending" || state === "delayed" || state === "waiting" || state === "active") {
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
    this.dependsOn = new Set(); // the jobs the one shown depends on: their events matter too
    this.reloadSoon = throttle(() => this.shown && this.load(), reloadGapMs);
    this.log = new JobLog(); // its lines, followed while the job is active (joblog.js)
  }

  /** Reads the job again: the event feed (re)opened. */
  reload() {
    this.reloadSoon();
  }

  /**
   * Takes one event of the feed, and reads the job again when the event is
   * about it, one of its dependencies, or its whole queue (drained: no job id).
   */
  heard(event) {
    if (!this.shown || event.queue !== this.queue) {
      return;
    }
    const progress = progressOf(event, this.id);
    if (progress && progress !== "read" && this.progressView) {
      // The event carries the progress: drawn at once, with no read.
      this.progressView.textContent = pretty(progress.value);
      return;
    }
    if (event.job_id === this.id || !event.job_id || this.dependsOn.has(event.job_id)) {
      this.reloadSoon();
    }
  }

  show(route) {
    this.shown = route; // a load that ends after leave() or another show() draws nothing
    this.queue = route.queue;
    this.id = route.id;
    this.dependsOn = new Set();
    this.progressView = null; // the progress's <pre>, once the job is drawn
    this.heading = h("h2", { tabIndex: -1 }, `Job ${this.id}`);
    this.body = h("div");
    this.editor = h("div"); // the edit form while it is open: a reload leaves it as the person left it
    this.editing = false;
    this.root.replaceChildren(
      h("p", {}, h("a", { href: "#/" }, "All queues"), " / ",
        h("a", { href: queueHref(this.queue, this.ctx.backState(this.queue)) }, `Queue ${this.queue}`)),
      this.heading,
      h("p", {}, button("Refresh", `Refresh job ${this.id}`, () => this.load())),
      this.editor,
      this.body,
      this.log.element,
    );
    this.heading.focus();
    this.load();
    this.log.start(this.queue, this.id);
  }

  leave() {
    this.shown = null;
    clearInterval(this.timer);
    this.log.stop();
  }

  async load() {
    const shown = this.shown;
    try {
      const job = await call("GET", jobPath(this.queue, this.id));
      const deps = await this.dependencyStates(job.depends_on || []);
      if (this.shown === shown) {
        this.dependsOn = new Set(job.depends_on || []);
        this.render(job, deps);
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

  /**
   * The states of the first depsRead of ids, by id: a job's state, "gone"
   * for one that no longer exists (removed, or aged out of retention), ""
   * when it could not be read.
   */
  async dependencyStates(ids) {
    const read = await Promise.all(ids.slice(0, depsRead).map(async (id) => {
      try {
        return [id, (await call("GET", jobPath(this.queue, id))).state];
      } catch (err) {
        return [id, err instanceof Problem && err.status === 404 ? "gone" : ""];
      }
    }));
    return new Map(read);
  }

  render(job, deps = new Map()) {
    clearInterval(this.timer); // here, not before the call: two loads may overlap
    this.log.follow(job.state === "active");
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
      rows.splice(6, 0, ["Cancel reason", this.cancelReason(job)]);
    }
    rows.splice(5, 0, ...this.linkRows(job, deps)); // after Group
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
    const edit = editable(job.state) && may("edit");
    if (this.editing && !edit) {
      this.closeEditor(); // it started, or ended, meanwhile
    }
    const buttons = allowed.map((action) => this.actionButton(action, job));
    if (edit) {
      buttons.unshift(button("Edit", `Edit job ${job.id}`, () => this.openEditor(job)));
    }
    keepFocus(this.body, () => this.body.replaceChildren(
      ...(buttons.length === 0 ? [] : [h("div", { class: "job-actions", role: "group", "aria-label": `Actions on job ${job.id}` },
        buttons)]),
      h("dl", { class: "fields" }, rows.map(([name, value]) => [h("dt", {}, name), h("dd", {}, value)])),
      ...["payload", "result", "progress"].map((field) => h("section", { "aria-label": field },
        h("h3", {}, field[0].toUpperCase() + field.slice(1)),
        this.jsonView(field, job[field]))),
    ));
    if (job.state === "active" && job.lease_expires_at) {
      const tick = () => { lease.textContent = `(${countdown(job.lease_expires_at)})`; };
      tick();
      this.timer = setInterval(tick, 1000);
    }
  }

  /** One JSON field of the job; the progress's is kept, for a progress event to redraw. */
  jsonView(field, value) {
    const view = h("pre", { class: "json", tabIndex: 0 }, pretty(value));
    if (field === "progress") {
      this.progressView = view;
    }
    return view;
  }

  /** The cancel reason; a failed dependency it names links to that job's page. */
  cancelReason(job) {
    const dep = failedDependency(job.cancel_reason, job.depends_on);
    if (!dep) {
      return job.cancel_reason;
    }
    return h("span", {}, "dependency ", h("a", { href: jobHref(this.queue, dep.id) }, dep.id), ` ${dep.state}`);
  }

  /** The rows of what the job is linked to, for a job that has them: its batch, the batch it reports on, its dependencies. */
  linkRows(job, deps) {
    const rows = [];
    if (job.batch_id) {
      rows.push(["Batch", h("a", { href: batchHref(this.queue, job.batch_id) }, job.batch_id)]);
    }
    const callback = callbackOf(job);
    if (callback) {
      rows.push(["Callback of batch", h("a", { href: batchHref(callback.queue, callback.id) }, callback.id)]);
    }
    const ids = job.depends_on || [];
    if (ids.length > 0) {
      rows.push(["Depends on", h("ul", { class: "ids" }, ids.map((id) => h("li", {},
        h("a", { href: jobHref(this.queue, id) }, id), deps.get(id) ? ` (${deps.get(id)})` : null)))]);
      rows.push(["On dependency failure", onFailureText[job.on_dependency_failure] || job.on_dependency_failure || "—"]);
    }
    return rows;
  }

  /** Opens the form that changes the job as shown (anew, when it is open). */
  openEditor(job) {
    const path = jobPath(this.queue, job.id);
    this.editing = true;
    this.editor.replaceChildren(editForm(job, {
      save: async (body) => {
        try {
          await call("PATCH", path, body);
        } catch (err) {
          this.ctx.report(err); // the form stays as it was, to fix and send again
          return;
        }
        this.closeEditor();
        this.ctx.clearError();
        this.ctx.notice(`Job ${job.id} changed.`);
        await this.load();
        this.heading.focus();
      },
      cancel: () => {
        this.closeEditor();
        this.heading.focus();
      },
      report: (text) => this.ctx.report(new Error(text)),
    }));
    this.editor.querySelector("textarea").focus();
  }

  closeEditor() {
    this.editing = false;
    this.editor.replaceChildren();
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
