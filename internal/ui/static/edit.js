// edit.js: the job page's form that changes a job that has not started
// (PATCH /queues/{queue}/jobs/{id}, an admin key's): its payload, its
// priority and when it runs. It sends only what the person changed, so
// that a field left as it was keeps what the job has, even if the job
// changed meanwhile.

import { h } from "./dom.js";

/** The states a job can be changed in: it has not started. */
const editableStates = new Set(["pending", "delayed", "waiting"]);

/** Whether a job in state can be changed. */
export function editable(state) {
  return editableStates.has(state);
}

/** "2026-12-01T10:00:05": an RFC 3339 time as a datetime-local input shows it, in local time; "" for none. */
export function localInput(iso) {
  const d = new Date(iso || "");
  if (!iso || Number.isNaN(d.getTime())) {
    return "";
  }
  const pad = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** The payload as the form shows it: JSON, indented. */
export function payloadText(payload) {
  return JSON.stringify(payload === undefined ? null : payload, null, 2);
}

/**
 * The PATCH body the form's values ({payload, priority, run_at, now}) ask
 * for, against the job as the form showed it: only the fields that differ
 * (the payload compared as JSON, the run time to the second), delay_ms 0
 * when "now" is checked. Returns {body}, or {error} naming what is wrong:
 * a payload that is no JSON, a priority out of 0 to 9, a run time that is
 * no time, or nothing changed.
 */
export function changeOfForm(job, values) {
  const body = {};
  let payload;
  try {
    payload = JSON.parse(values.payload);
  } catch {
    return { error: "The payload is not JSON." };
  }
  if (JSON.stringify(payload) !== JSON.stringify(job.payload === undefined ? null : job.payload)) {
    body.payload = payload;
  }
  const priority = Number(values.priority);
  if (values.priority === "" || !Number.isInteger(priority) || priority < 0 || priority > 9) {
    return { error: "The priority must be a whole number from 0 to 9." };
  }
  if (priority !== (job.priority ?? 0)) {
    body.priority = priority;
  }
  if (values.now) {
    body.delay_ms = 0;
  } else if (values.run_at) {
    const at = new Date(values.run_at);
    if (Number.isNaN(at.getTime())) {
      return { error: "The run time is not a time." };
    }
    const second = (ms) => Math.floor(ms / 1000);
    if (!job.run_at || second(at.getTime()) !== second(new Date(job.run_at).getTime())) {
      body.run_at = at.toISOString();
    }
  }
  if (Object.keys(body).length === 0) {
    return { error: "Nothing was changed." };
  }
  return { body };
}

/** What "Run now" does to a job in state, in words. */
function nowText(state) {
  return state === "waiting" ? "Run as soon as its dependencies have ended" : "Run now";
}

/**
 * The form for job: save(body) sends a change (and rejects to keep the form
 * open), cancel() closes it, report(text) shows what is wrong.
 */
export function editForm(job, { save, cancel, report }) {
  const runAt = localInput(job.run_at);
  const form = h("form", { class: "settings job-edit", "aria-label": `Change job ${job.id}` },
    h("p", { class: "status" }, "Only what you change is sent. Times are your browser's local time."),
    h("label", { htmlFor: "edit-payload" }, "Payload (JSON)"),
    h("textarea", { id: "edit-payload", name: "payload", rows: 8, spellcheck: false, value: payloadText(job.payload) }),
    h("label", { htmlFor: "edit-priority" }, "Priority (0 first, 9 last)"),
    h("input", { id: "edit-priority", name: "priority", type: "number", min: "0", max: "9", step: "1",
      inputMode: "numeric", required: true, value: String(job.priority ?? 0) }),
    h("label", { htmlFor: "edit-run-at" }, job.state === "waiting" ? "Run at, once its dependencies have ended" : "Run at"),
    h("input", { id: "edit-run-at", name: "run_at", type: "datetime-local", step: "1", value: runAt }),
    h("label", { htmlFor: "edit-now", class: "wide" }, h("input", { id: "edit-now", name: "now", type: "checkbox" }), ` ${nowText(job.state)}`),
    h("div", { class: "wide job-actions" }, h("button", { type: "submit" }, "Save changes"),
      h("button", { type: "button", onclick: cancel }, "Cancel")),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const values = Object.fromEntries(new FormData(form));
    const { body, error } = changeOfForm(job, values);
    if (error) {
      report(error);
      return;
    }
    await save(body);
  });
  return form;
}
