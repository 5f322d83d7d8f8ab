// flow.js: the "Flow control" panel of a queue's page: the queue's
// settings in words (limits, job defaults, retention), a form to change
// them (for a key whose role may), and the queue's groups with their
// counts and a pause or resume button each (docs/flow-control.md).

import { call, queuePath } from "./api.js";
import { button, h, keepFocus, plural } from "./dom.js";
import { may } from "./role.js";

/** The most groups the panel lists; the rest are counted, not shown. */
export const groupsShown = 50;

/** "at most 100 claims per 1,000 ms", for a rate limit. */
function rateText(rate) {
  return `at most ${plural(rate.limit, "claim")} starting per ${rate.window_ms.toLocaleString()} ms`;
}

/** The queue's settings in one sentence. */
export function describeSettings(s) {
  const queue = [];
  if (s.concurrency) {
    queue.push(`at most ${plural(s.concurrency, "job")} active at once`);
  }
  if (s.rate_limit) {
    queue.push(rateText(s.rate_limit));
  }
  const group = [];
  if (s.group_concurrency) {
    group.push(`at most ${s.group_concurrency} active`);
  }
  if (s.group_rate_limit) {
    group.push(rateText(s.group_rate_limit));
  }
  if (s.group_order === "fifo") {
    group.push("one job at a time, in the order they were enqueued");
  }
  const parts = [];
  if (queue.length === 0 && group.length === 0) {
    parts.push("No limits: workers get jobs as fast as they claim them, taking turns over the groups.");
  }
  if (queue.length) {
    parts.push(`Queue: ${queue.join("; ")}.`);
  }
  if (group.length) {
    parts.push(`Each group: ${group.join("; ")}.`);
  }
  const defaults = describeDefaults(s.job_defaults);
  if (defaults) {
    parts.push(`A job that names none gets ${defaults}.`);
  }
  const kept = describeRetention(s.retention);
  if (kept) {
    parts.push(`Keeps ${kept}; the rest deleted, oldest first.`);
  }
  return parts.join(" ");
}

/** "5 attempts, priority 3, ...": the job defaults d sets, or "" for none. */
function describeDefaults(d) {
  if (!d) {
    return "";
  }
  const out = [];
  if (d.max_attempts) {
    out.push(plural(d.max_attempts, "attempt"));
  }
  if (d.backoff) {
    const b = d.backoff;
    out.push(`a ${b.type} backoff from ${(b.delay_ms ?? 1000).toLocaleString()} ms`);
  }
  if (d.priority !== undefined && d.priority !== null) {
    out.push(`priority ${d.priority}`);
  }
  if (d.timeout_ms) {
    out.push(`a timeout of ${d.timeout_ms.toLocaleString()} ms`);
  }
  if (d.expires_in_ms) {
    out.push(`an expiry ${d.expires_in_ms.toLocaleString()} ms after its enqueue`);
  }
  return out.join(", ");
}

/** "completed: the newest 1,000, for 86,400,000 ms": the retention r names, or "". */
function describeRetention(r) {
  if (!r) {
    return "";
  }
  const out = [];
  for (const state of ["completed", "dead", "cancelled"]) {
    const rule = r[state];
    if (!rule) {
      continue;
    }
    const limits = [];
    if (rule.count) {
      limits.push(`the newest ${rule.count.toLocaleString()}`);
    }
    if (rule.age_ms) {
      limits.push(`for ${rule.age_ms.toLocaleString()} ms`);
    }
    out.push(`${state} jobs: ${limits.length ? limits.join(", ") : "all"}`);
  }
  return out.join("; ");
}

/** A number input of the settings form, empty for no limit. */
function numberField(id, text, value, min, max) {
  const input = h("input", { id, name: id, type: "number", min: String(min), max: String(max), step: "1",
    inputMode: "numeric", value: value === undefined || value === null ? "" : String(value) });
  return [h("label", { htmlFor: id }, text), input];
}

/** The settings the form asks for, empty fields left out (no limit). */
export function settingsOfForm(values) {
  const out = {};
  const num = (v) => (v === "" || v === undefined ? undefined : Number(v));
  const defaults = defaultsOfForm(values, num);
  if (defaults) {
    out.job_defaults = defaults;
  }
  const retention = retentionOfForm(values, num);
  if (retention) {
    out.retention = retention;
  }
  if (num(values.concurrency) !== undefined) {
    out.concurrency = num(values.concurrency);
  }
  if (num(values.rate_limit) !== undefined || num(values.rate_window_ms) !== undefined) {
    out.rate_limit = { limit: num(values.rate_limit), window_ms: num(values.rate_window_ms) };
  }
  if (num(values.group_concurrency) !== undefined) {
    out.group_concurrency = num(values.group_concurrency);
  }
  if (num(values.group_rate_limit) !== undefined || num(values.group_rate_window_ms) !== undefined) {
    out.group_rate_limit = { limit: num(values.group_rate_limit), window_ms: num(values.group_rate_window_ms) };
  }
  if (values.group_order) {
    out.group_order = "fifo";
  }
  return out;
}

/** The job defaults the form asks for (fields "default_..."), or undefined for none. */
function defaultsOfForm(values, num) {
  const d = {};
  for (const name of ["max_attempts", "priority", "timeout_ms", "expires_in_ms"]) {
    if (num(values[`default_${name}`]) !== undefined) {
      d[name] = num(values[`default_${name}`]);
    }
  }
  if (values.default_backoff_type) {
    d.backoff = { type: values.default_backoff_type };
    if (num(values.default_backoff_delay_ms) !== undefined) {
      d.backoff.delay_ms = num(values.default_backoff_delay_ms);
    }
    if (num(values.default_backoff_max_delay_ms) !== undefined) {
      d.backoff.max_delay_ms = num(values.default_backoff_max_delay_ms);
    }
  }
  return Object.keys(d).length ? d : undefined;
}

/**
 * The retention the form asks for (fields "keep_<state>_count" and
 * "keep_<state>_age_ms"), or undefined: a state whose two fields are
 * empty keeps the service's default; 0 is no limit.
 */
function retentionOfForm(values, num) {
  const r = {};
  for (const state of ["completed", "dead", "cancelled"]) {
    const count = num(values[`keep_${state}_count`]);
    const age = num(values[`keep_${state}_age_ms`]);
    if (count !== undefined || age !== undefined) {
      r[state] = {};
      if (count !== undefined) {
        r[state].count = count;
      }
      if (age !== undefined) {
        r[state].age_ms = age;
      }
    }
  }
  return Object.keys(r).length ? r : undefined;
}

/**
 * The panel: load(queue, current) fills it; changed() is called after a
 * change, so that the page reads itself again.
 */
export class FlowPanel {
  constructor(ctx, changed) {
    this.ctx = ctx;
    this.changed = changed;
    this.heading = h("h3", { id: "flow-heading", tabIndex: -1 }, "Flow control");
    this.summary = h("p", { class: "wrap" });
    this.form = h("div");
    this.groupsNote = h("p", { class: "status" });
    this.groupsBody = h("tbody");
    this.groupsTable = h("div", { class: "table-scroll", role: "region", "aria-label": "Groups" },
      h("table", { class: "jobs" }, h("caption", {}, "Groups, by name"),
        h("thead", {}, h("tr", {},
          h("th", { scope: "col" }, "Group"),
          h("th", { scope: "col" }, "Paused"),
          h("th", { scope: "col", class: "num" }, "Pending"),
          h("th", { scope: "col", class: "num" }, "Active"),
          h("th", { scope: "col", class: "num" }, "Delayed"),
          h("th", { scope: "col" }, "Action"))),
        this.groupsBody));
    this.panel = h("section", { class: "flow", "aria-labelledby": "flow-heading" },
      this.heading, this.summary, this.form, h("h4", {}, "Groups"), this.groupsNote, this.groupsTable);
  }

  /** Reads the queue's settings and first groups; current() says whether the page is still shown. */
  async load(queue, current) {
    const [settings, page] = await Promise.all([
      call("GET", `${queuePath(queue)}/settings`),
      call("GET", `${queuePath(queue)}/groups?limit=${groupsShown}`),
    ]);
    if (!current()) {
      return;
    }
    // Drawn again for other settings, or another role (a reader's key forgotten, an admin's given).
    const formChanged = this.queue !== queue || JSON.stringify(settings) !== JSON.stringify(this.settings) ||
      may("settings") !== this.mayChange;
    this.queue = queue;
    this.settings = settings;
    this.mayChange = may("settings");
    this.summary.textContent = describeSettings(settings);
    if (formChanged && !this.form.contains(document.activeElement)) {
      this.form.replaceChildren(...this.settingsForm(settings));
    }
    const groups = page.groups || [];
    this.groupsTable.hidden = groups.length === 0;
    this.groupsNote.textContent = groups.length === 0
      ? "No groups: no job of this queue names one."
      : page.next_cursor ? `The first ${groupsShown} groups by name.` : "";
    keepFocus(this.groupsBody, () => this.groupsBody.replaceChildren(...groups.map((g) => this.groupRow(g))));
  }

  /** The form that changes the settings, for a role that may; nothing else. */
  settingsForm(s) {
    if (!may("settings")) {
      return [h("p", { class: "status" }, "Changing the settings needs an admin key.")];
    }
    const rate = s.rate_limit || {};
    const grate = s.group_rate_limit || {};
    const fifo = h("input", { id: "group_order", name: "group_order", type: "checkbox", checked: s.group_order === "fifo" });
    const form = h("form", { class: "settings" },
      h("p", { class: "status" }, "Leave a field empty for no limit. Saving replaces every setting."),
      ...numberField("concurrency", "Most active jobs", s.concurrency, 1, 100000),
      ...numberField("rate_limit", "Most claims starting per window", rate.limit, 1, 1000000),
      ...numberField("rate_window_ms", "Window, ms", rate.window_ms, 10, 86400000),
      ...numberField("group_concurrency", "Most active jobs per group", s.group_concurrency, 1, 100000),
      ...numberField("group_rate_limit", "Most claims starting per group per window", grate.limit, 1, 1000000),
      ...numberField("group_rate_window_ms", "Group window, ms", grate.window_ms, 10, 86400000),
      h("label", { htmlFor: "group_order" }, fifo, " One job per group at a time, in order (fifo)"),
      ...this.defaultsFields(s.job_defaults || {}),
      ...this.retentionFields(s.retention || {}),
      h("button", { type: "submit" }, "Save settings"));
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const values = Object.fromEntries(new FormData(form));
      try {
        await call("PUT", `${queuePath(this.queue)}/settings`, settingsOfForm(values));
        this.settings = null; // draw the form again from what the service kept
        this.ctx.notice(`Saved the settings of queue ${this.queue}.`);
        this.changed();
      } catch (err) {
        this.ctx.report(err);
      }
    });
    return [form];
  }

  /** The job defaults' fields: what a job that names none gets; empty for the service's default. */
  defaultsFields(d) {
    const b = d.backoff || {};
    const type = h("select", { id: "default_backoff_type", name: "default_backoff_type" },
      ...[["", "the service's (exponential from 1,000 ms)"], ["exponential", "exponential"], ["fixed", "fixed"]]
        .map(([value, text]) => h("option", { value, selected: (b.type || "") === value }, text)));
    return [
      h("h4", {}, "Job defaults"),
      h("p", { class: "status" }, "What an enqueue that does not name them gets; empty: the service's default."),
      ...numberField("default_max_attempts", "Attempts", d.max_attempts, 1, 1000),
      h("label", { htmlFor: "default_backoff_type" }, "Backoff"), type,
      ...numberField("default_backoff_delay_ms", "Backoff delay, ms", b.delay_ms, 0, 86400000),
      ...numberField("default_backoff_max_delay_ms", "Backoff cap, ms", b.max_delay_ms, 0, 604800000),
      ...numberField("default_priority", "Priority (0 first)", d.priority, 0, 9),
      ...numberField("default_timeout_ms", "Timeout of a run, ms", d.timeout_ms, 100, 86400000),
      ...numberField("default_expires_in_ms", "Expires if not started within, ms", d.expires_in_ms, 1, 31536000000),
    ];
  }

  /** The retention's fields: a count and an age per finished state. */
  retentionFields(r) {
    const fields = [
      h("h4", {}, "Retention"),
      h("p", { class: "status" },
        "Finished jobs kept: the newest count that finished within the age (86,400,000 ms is a day). " +
        "Both empty: the service's default (completed: EMQ_KEEP_COMPLETED; dead, cancelled: all); 0: no limit."),
    ];
    for (const state of ["completed", "dead", "cancelled"]) {
      const rule = r[state] || {};
      const title = state[0].toUpperCase() + state.slice(1);
      // A rule with no limit (keep all) shows a count of 0, not empty (the default).
      const count = rule.count ?? (r[state] && rule.age_ms === undefined ? 0 : undefined);
      fields.push(...numberField(`keep_${state}_count`, `${title}: newest kept`, count, 0, 100000000),
        ...numberField(`keep_${state}_age_ms`, `${title}: for at most, ms`, rule.age_ms, 0, 315360000000));
    }
    return fields;
  }

  groupRow(g) {
    const verb = g.paused ? "resume" : "pause";
    const action = may("pause")
      ? button(g.paused ? "Resume" : "Pause", `${g.paused ? "Resume" : "Pause"} group ${g.name}`, () => this.setPaused(g.name, verb))
      : "—";
    if (action !== "—") {
      action.dataset.focusKey = `group:${g.name}`; // its label changes with the state
    }
    const counts = g.counts || {};
    return h("tr", {},
      h("th", { scope: "row" }, g.name),
      h("td", {}, g.paused ? "paused" : "no"),
      h("td", { class: "num" }, (counts.pending || 0).toLocaleString()),
      h("td", { class: "num" }, (counts.active || 0).toLocaleString()),
      h("td", { class: "num" }, (counts.delayed || 0).toLocaleString()),
      h("td", {}, action));
  }

  async setPaused(group, verb) {
    try {
      await call("POST", `${queuePath(this.queue)}/groups/${encodeURIComponent(group)}/${verb}`);
      this.ctx.notice(`${verb === "pause" ? "Paused" : "Resumed"} group ${group}.`);
      this.changed();
    } catch (err) {
      this.ctx.report(err);
    }
  }
}
