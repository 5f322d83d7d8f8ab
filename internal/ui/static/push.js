// push.js: the "Push delivery" panel of a queue's page: the queue's push
// target (docs/push.md), where the service POSTs its jobs, with its limits
// and whether deliveries are signed, the names of the headers they carry
// (never their values), and its last failed deliveries, each linking to
// its job. For an admin key, a form sets the target (PUT
// /queues/{queue}/push), its write-only secret and headers included.

import { Problem, call, queuePath } from "./api.js";
import { duration, h, keepFocus, tabStopWhenScrolling, when } from "./dom.js";
import { may } from "./role.js";
import { jobHref } from "./routes.js";

/** A length of time in ms as duration() says it, or in ms under a second. */
function span(ms) {
  return ms < 1000 ? `${ms} ms` : duration(ms);
}

/**
 * The target's settings in words: "4 at once, 30 s timeout, 1 min 0 s
 * lease, signed", and the headers it sends by name ("with headers
 * Authorization, X-Tenant"): their values are never shown.
 */
export function describeTarget(t) {
  const names = t.header_names || [];
  return `${t.concurrency.toLocaleString()} at once, ${span(t.timeout_ms)} timeout, ` +
    `${span(t.lease_ms)} lease, ${t.secret_set ? "signed" : "not signed"}` +
    (names.length ? `, with headers ${names.join(", ")}` : "");
}

/**
 * The headers of the form's text, one "Name: value" a line (blank lines
 * skipped): {headers} or {problem} saying which line is wrong. The
 * service checks the names and values.
 */
export function headersOfText(text) {
  const headers = {};
  const lines = text.split(/\r\n|\r|\n/);
  for (let i = 0; i < lines.length; i++) {
    if (lines[i].trim() === "") {
      continue;
    }
    const colon = lines[i].indexOf(":");
    if (colon <= 0) {
      return { problem: `Line ${i + 1} of the headers is not "Name: value".` };
    }
    headers[lines[i].slice(0, colon).trim()] = lines[i].slice(colon + 1).trim();
  }
  return { headers };
}

/** The PUT body the form's values ask for: empty fields left to their defaults, or {problem}. */
export function targetOfForm(values) {
  const body = { url: (values.url || "").trim() };
  for (const field of ["timeout_ms", "concurrency", "lease_ms"]) {
    if (values[field] !== undefined && values[field] !== "") {
      body[field] = Number(values[field]);
    }
  }
  if (values.secret) {
    body.secret = values.secret;
  }
  const { headers, problem } = headersOfText(values.headers || "");
  if (problem) {
    return { problem };
  }
  if (Object.keys(headers).length > 0) {
    body.headers = headers;
  }
  return { body };
}

/**
 * The panel: load(queue, has, current) fills it; ctx gives notice(text)
 * and report(err), and changed() is called after a change, so that the
 * page reads itself again.
 */
export class PushPanel {
  constructor(ctx, changed) {
    this.ctx = ctx;
    this.changed = changed;
    this.heading = h("h3", { id: "push-heading" }, "Push delivery");
    this.body = h("div");
    this.form = h("div");
    this.panel = h("section", { class: "push", "aria-labelledby": "push-heading" }, this.heading, this.body, this.form);
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
    // The form is drawn again only when the target was put again (not for
    // a new failed delivery) or the key's role changed (a reader's key
    // forgotten, an admin's given), and never while it is being filled in.
    const shown = `${may("push")} ${target ? `${target.url} ${target.updated_at}` : ""}`;
    const formChanged = this.queue !== queue || shown !== this.shownTarget;
    this.queue = queue;
    this.shownTarget = shown;
    if (formChanged && !this.form.contains(document.activeElement)) {
      this.form.replaceChildren(...this.targetForm(target));
    }
  }

  /**
   * The form that sets the target, for a role that may: a put replaces
   * the target whole, and its secret and headers are never read back, so
   * the form asks for them again (naming the headers set now).
   */
  targetForm(t) {
    if (!may("push")) {
      return [];
    }
    const field = (id, text, attrs) => [h("label", { htmlFor: `push-${id}` }, text),
      h("input", { id: `push-${id}`, name: id, ...attrs })];
    const number = (id, text, value, min, max) => field(id, text, { type: "number", min: String(min), max: String(max),
      step: "1", inputMode: "numeric", value: value === undefined ? "" : String(value) });
    const names = (t && t.header_names) || [];
    const form = h("form", { class: "settings push-form" },
      h("p", { class: "status" }, "Saving replaces the target whole. Its secret and headers are never shown: " +
        "give them again to keep them; an empty field takes the default."),
      ...field("url", "URL", { type: "url", required: true, value: t ? t.url : "", autocomplete: "off", spellcheck: false }),
      ...number("timeout_ms", "Timeout, ms", t?.timeout_ms, 100, 3600000),
      ...number("concurrency", "Most deliveries at once", t?.concurrency, 1, 1000),
      ...number("lease_ms", "Lease, ms", t?.lease_ms, 1100, 86400000),
      ...field("secret", t?.secret_set ? "Signing secret (one is set)" : "Signing secret (whsec_…)",
        { type: "password", autocomplete: "off" }),
      h("label", { htmlFor: "push-headers" }, names.length ? `Headers (set now: ${names.join(", ")})` : "Headers"),
      h("textarea", { id: "push-headers", name: "headers", rows: 3, spellcheck: false, autocomplete: "off",
        placeholder: "Authorization: Bearer …\nOne \"Name: value\" a line" }),
      h("button", { type: "submit" }, "Save push target"));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.save(Object.fromEntries(new FormData(form)));
    });
    return [form];
  }

  async save(values) {
    const { body, problem } = targetOfForm(values);
    if (problem) {
      this.ctx.report(new Error(problem));
      return;
    }
    try {
      await call("PUT", `${queuePath(this.queue)}/push`, body);
      this.shownTarget = undefined; // draw the form again from what the service kept
      this.form.replaceChildren();
      this.ctx.clearError(); // a refusal of an earlier try is over
      this.ctx.notice(`Saved the push target of queue ${this.queue}.`);
      this.changed();
    } catch (err) {
      this.ctx.report(err);
    }
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
