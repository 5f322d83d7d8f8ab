// operator.mjs: dashboard.mjs's checks of what an operator does to jobs
// and queues beyond one click (issue 38): change a job that has not
// started, follow an active job's log and progress live, retry, clean up
// and promote a queue's jobs in bulk, list a queue's batches, give a push
// target its headers, and set a queue's job defaults and retention. Each
// check has a queue of its own, named ops-*, whose jobs the script makes
// and works as their worker over the API, so that it knows every count the
// pages must show and leaves dashboard.mjs's other queues alone.

import assert from "node:assert/strict";

import { accessible, until } from "./browser.mjs";

/** The page's record of the push target the service refuses, on purpose (a Host header). */
export const operatorProblems = [
  /^400 for PUT .*\/queues\/ops-push\/push$/,
  /^console error: Failed to load resource: the server responded with a status of 400 \(Bad Request\) \(at .*\/queues\/ops-push\/push\)$/,
];

/** The path of queue q in the API. */
function queuePath(q) {
  return `/queues/${encodeURIComponent(q)}`;
}

/** The path of job id of queue q in the API. */
function jobPath(q, id) {
  return `${queuePath(q)}/jobs/${encodeURIComponent(id)}`;
}

/**
 * The text of a field (a <dt>) of the view shown, read from its <dd>: the
 * views the script has left keep their last fields, hidden.
 */
async function field(page, name) {
  const dd = page.locator(".view:not([hidden]) dl.fields dt", { hasText: new RegExp(`^${name}$`) })
    .locator("xpath=following-sibling::dd[1]");
  return (await dd.innerText()).trim();
}

/** The JSON a section of the job's page (payload, result, progress) shows, parsed; undefined for none ("—"). */
async function shownJSON(page, section) {
  const text = (await page.locator(".view:not([hidden])").getByRole("region", { name: section, exact: true })
    .locator("pre").innerText()).trim();
  return text === "—" ? undefined : JSON.parse(text);
}

/** The page's notice (the line that says what an action did). */
function notice(page) {
  return page.locator("#notice").innerText();
}

/** The page's error line: "" while it is hidden. */
async function errorLine(page) {
  const error = page.locator("#error");
  return (await error.isVisible()) ? (await error.innerText()).trim() : "";
}

/** Waits until the state tabs of the queue page shown say want ({dead: 0, pending: 3}: some of its states). */
async function tabsSay(page, q, want) {
  const nav = page.getByRole("navigation", { name: `Job states of queue ${q}`, exact: true });
  const texts = Object.entries(want).map(([state, n]) => `${state} (${n})`);
  await until(`the tabs of ${q} to say ${texts.join(", ")}`, async () => {
    const got = (await nav.getByRole("link").allInnerTexts()).map((t) => t.trim());
    return texts.every((t) => got.includes(t));
  });
}

/** Enqueues a job of q, claims it as its worker, and returns {id, token}. */
async function claimOne(call, q, body) {
  const made = await call("POST", `${queuePath(q)}/jobs`, body);
  const claimed = await call("POST", `${queuePath(q)}/claim`, { lease_ms: 120000 });
  assert.equal(claimed.jobs.length, 1, `a claim of ${q}: ${JSON.stringify(claimed)}`);
  assert.equal(claimed.jobs[0].id, made.id, `the claim of ${q} takes the job just enqueued`);
  return { id: made.id, token: claimed.jobs[0].token };
}

/** Makes a dead job of q: one attempt, claimed and failed with error. */
async function deadJob(call, q, error) {
  const job = await claimOne(call, q, { payload: { error }, max_attempts: 1 });
  const failed = await call("POST", `${jobPath(q, job.id)}/fail`, { token: job.token, error });
  assert.equal(failed.state, "dead", "a job with one attempt, failed, is dead");
  return job.id;
}

/** Makes a completed job of q. */
async function completedJob(call, q) {
  const job = await claimOne(call, q, { payload: { done: true } });
  await call("POST", `${jobPath(q, job.id)}/complete`, { token: job.token });
  return job.id;
}

/**
 * What an operator does beyond one job's buttons. helpers are
 * dashboard.mjs's: base, call (the API, failing on any answer but 200
 * and 201), rowOf and fitsAPhone.
 */
export async function seeOperatorActions(page, helpers) {
  await editAJob(page, helpers);
  await followAnActiveJob(page, helpers);
  await actInBulk(page, helpers);
  await listBatches(page, helpers);
  await setPushHeaders(page, helpers);
  await setDefaultsAndRetention(page, helpers);
  await page.goto(`${helpers.base}/ui/`);
}

/**
 * The job page's Edit form, on a delayed job: a payload that is not JSON
 * is refused in the page, with nothing sent; a new payload and priority
 * are saved, and the page and the API show them, with the run time left
 * as it was (only what changed is sent). Then "Run now" makes it pending.
 */
async function editAJob(page, { base, call, fitsAPhone }) {
  const q = "ops-edit";
  const id = "invoice-9";
  const made = await call("POST", `${queuePath(q)}/jobs`, { id, payload: { amount: 10 }, priority: 5, delay_ms: 3600000 });
  assert.equal(made.state, "delayed");
  await page.goto(`${base}/ui/#/queues/${q}/jobs/${id}`);
  await page.getByRole("heading", { name: `Job ${id}`, exact: true }).waitFor();
  await until("the delayed job's fields", async () => (await field(page, "State")) === "delayed");

  let patches = 0; // the page's PATCHes of the job: the changes it sent
  page.on("request", (req) => {
    if (req.method() === "PATCH") {
      patches++;
    }
  });
  await page.getByRole("button", { name: `Edit job ${id}`, exact: true }).click();
  const form = page.getByRole("form", { name: `Change job ${id}`, exact: true });
  const payload = form.getByLabel("Payload (JSON)", { exact: true });
  const priority = form.getByLabel("Priority (0 first, 9 last)", { exact: true });
  assert.deepEqual(JSON.parse(await payload.inputValue()), { amount: 10 }, "the form shows the job's payload");
  assert.equal(await priority.inputValue(), "5", "the form shows the job's priority");
  assert.notEqual(await form.getByLabel("Run at", { exact: true }).inputValue(), "", "the form shows the job's run time");
  await accessible(page, "a job's edit form");
  await fitsAPhone(page, "a job's edit form");

  // A payload that is not JSON: said in the page, nothing sent.
  await payload.fill("{amount: 12");
  await form.getByRole("button", { name: "Save changes", exact: true }).click();
  await until("the page to refuse a payload that is not JSON", async () => (await errorLine(page)) === "The payload is not JSON.");
  assert.equal(patches, 0, "a payload that is not JSON is not sent");
  assert.deepEqual((await call("GET", jobPath(q, id))).payload, { amount: 10 }, "a refused edit changes nothing");

  await payload.fill('{"amount": 12, "currency": "EUR"}');
  await priority.fill("2");
  await form.getByRole("button", { name: "Save changes", exact: true }).click();
  await until("the notice of the change", async () => (await notice(page)) === `Job ${id} changed.`);
  await until("the changed priority on the job's page", async () => (await field(page, "Priority")) === "2");
  assert.deepEqual(await shownJSON(page, "payload"), { amount: 12, currency: "EUR" }, "the page shows the new payload");
  assert.equal(await form.count(), 0, "the form closes once saved");
  assert.equal(await errorLine(page), "", "the refusal is cleared once a change is saved");
  assert.equal(patches, 1, "one change saved, one PATCH");
  const changed = await call("GET", jobPath(q, id));
  assert.deepEqual([changed.state, changed.priority, changed.payload, changed.run_at],
    ["delayed", 2, { amount: 12, currency: "EUR" }, made.run_at], "the API's job: payload and priority changed, run time kept");

  // Run now: the job becomes pending, at once.
  await page.getByRole("button", { name: `Edit job ${id}`, exact: true }).click();
  await form.getByLabel("Run now", { exact: true }).check();
  await form.getByRole("button", { name: "Save changes", exact: true }).click();
  await until("the job shown as pending after Run now", async () => (await field(page, "State")) === "pending");
  assert.equal((await call("GET", jobPath(q, id))).state, "pending", "the API says the job run now is pending");
}

/**
 * An active job's page follows it: the lines its worker (the script)
 * appends to its log show by themselves within seconds; a checkpoint's
 * progress is drawn from its event, with no read of the job, and one too
 * large for an event from a read; once the job completes the log stops
 * being followed.
 */
async function followAnActiveJob(page, { base, call }) {
  const q = "ops-work";
  const job = await claimOne(call, q, { id: "import-42", payload: { rows: 120 } });
  const path = jobPath(q, job.id);
  await call("POST", `${path}/logs`, { token: job.token, lines: ["fetched 120 rows"] });

  let reads = 0; // the page's reads of the job itself (not of its log)
  page.on("request", (req) => {
    if (req.method() === "GET" && new URL(req.url()).pathname === path) {
      reads++;
    }
  });
  await page.goto(`${base}/ui/#/queues/${q}/jobs/${job.id}`);
  await page.getByRole("heading", { name: `Job ${job.id}`, exact: true }).waitFor();
  await until("the active job's fields", async () => (await field(page, "State")) === "active");
  const log = page.getByRole("region", { name: "log", exact: true });
  const lines = () => log.locator(".log-line").allInnerTexts();
  await until("the line logged before the page opened", async () => (await lines()).join("|") === "fetched 120 rows");
  await until("the log's status to say it follows the job", async () =>
    (await log.getByRole("status").innerText()) === "1 line, oldest first. Following the job: new lines show every 2 s.");

  await call("POST", `${path}/logs`, { token: job.token, lines: ["validated 120 rows", "loading…"] });
  await until("the new lines shown without a reload", async () =>
    (await lines()).join("|") === "fetched 120 rows|validated 120 rows|loading…");
  const times = await log.locator("time").evaluateAll((ts) => ts.map((t) => t.getAttribute("datetime")));
  const read = await call("GET", `${path}/logs`);
  assert.deepEqual(times, read.lines.map((l) => l.at), "each line shows the time the API stamped it with");
  await accessible(page, "an active job's page with its log");

  // Progress from the checkpoint's event, with no read of the job.
  const readsBefore = reads;
  await call("POST", `${path}/lease`, { token: job.token, progress: { pct: 50, step: "load" } });
  await until("the progress drawn live", async () =>
    JSON.stringify(await shownJSON(page, "progress")) === JSON.stringify({ pct: 50, step: "load" }));
  await call("POST", `${path}/lease`, { token: job.token, lease_ms: 120000, progress: { pct: 90, step: "load" } });
  await until("the next progress drawn live", async () => (await shownJSON(page, "progress"))?.pct === 90);
  assert.equal(reads, readsBefore, "a progress event that carries the progress is drawn without reading the job");
  // Progress over 1 KB of JSON: the event leaves it out, and the page reads the job for it.
  const large = { pct: 95, note: "x".repeat(1100) };
  await call("POST", `${path}/lease`, { token: job.token, progress: large });
  await until("the large progress, read from the job", async () => (await shownJSON(page, "progress"))?.pct === 95);
  assert.ok(reads > readsBefore, "a progress event without the progress makes the page read the job");
  assert.equal((await shownJSON(page, "progress")).note, large.note);

  // The worker logs its last line and completes the job: the log stops following it.
  await call("POST", `${path}/logs`, { token: job.token, lines: ["done"] });
  await call("POST", `${path}/complete`, { token: job.token, result: { rows: 120 } });
  await until("the job shown completed", async () => (await field(page, "State")) === "completed");
  await until("the log's last line, and the log no longer followed", async () =>
    (await lines()).at(-1) === "done" && (await log.getByRole("status").innerText()) === "4 lines, oldest first.");
  assert.deepEqual(await shownJSON(page, "result"), { rows: 120 });
}

/**
 * The bulk actions of a queue's page: "Retry all N" in the dead letters
 * panel (shown as the dead jobs have two errors), the clean-up form
 * (an age that no job has reached deletes nothing; any age deletes every
 * finished job) and the delayed tab's "Promote all", each after its
 * confirm, with the counts following in the page and the API.
 */
async function actInBulk(page, { base, call, fitsAPhone }) {
  const q = "ops-bulk";
  for (const error of ["smtp timeout", "smtp timeout", "mailbox full"]) {
    await deadJob(call, q, error);
  }
  await completedJob(call, q);
  await completedJob(call, q);
  const cancelled = await call("POST", `${queuePath(q)}/jobs`, { payload: { n: "cancel me" } });
  await call("POST", `${jobPath(q, cancelled.id)}/cancel`, { reason: "not needed" });
  for (let i = 0; i < 4; i++) {
    await call("POST", `${queuePath(q)}/jobs`, { payload: { n: i }, delay_ms: 3600000 });
  }
  const counts = async () => (await call("GET", queuePath(q))).counts;
  assert.deepEqual(await counts(), { pending: 0, active: 0, delayed: 4, waiting: 0, completed: 2, dead: 3, cancelled: 1 });

  await page.goto(`${base}/ui/#/queues/${q}/dead`);
  const panel = page.getByRole("region", { name: "Dead letters", exact: true });
  const retryAll = panel.getByRole("button", { name: `Retry all 3 dead jobs of queue ${q}, whatever their error`, exact: true });
  await retryAll.waitFor();
  assert.equal(await retryAll.innerText(), "Retry all 3");
  await accessible(page, "the dead letters panel with its bulk actions");
  await fitsAPhone(page, "the dead letters panel with its bulk actions");
  let asked = "";
  page.once("dialog", (dialog) => {
    asked = dialog.message();
    dialog.accept();
  });
  await retryAll.click();
  await until("the retry of all dead jobs to be done", async () => (await notice(page)) === `Retried 3 dead jobs of queue ${q}.`);
  assert.match(asked, /^Retry all 3 dead jobs of queue "ops-bulk"\?/, "Retry all asks first");
  await tabsSay(page, q, { pending: 3, dead: 0 });
  assert.deepEqual([(await counts()).pending, (await counts()).dead], [3, 0], "the API: the dead jobs are pending again");

  // The retried jobs die again (the script is their worker): 6 finished jobs.
  for (let i = 0; i < 3; i++) {
    const claimed = await call("POST", `${queuePath(q)}/claim`, { lease_ms: 30000 });
    const job = claimed.jobs[0];
    await call("POST", `${jobPath(q, job.id)}/fail`, { token: job.token, error: "smtp timeout", fatal: true });
  }
  await tabsSay(page, q, { pending: 0, dead: 3, completed: 2, cancelled: 1 });

  // The clean-up form: finished more than an hour ago, none; at any time, all six.
  const cleanup = panel.getByRole("group", { name: "Delete all finished jobs older than…", exact: true });
  await cleanup.getByLabel("Jobs", { exact: true }).selectOption({ label: "completed, dead and cancelled" });
  await cleanup.getByLabel("that finished", { exact: true }).selectOption({ label: "more than 1 hour ago" });
  page.once("dialog", (dialog) => {
    asked = dialog.message();
    dialog.accept();
  });
  await cleanup.getByRole("button", { name: "Delete the chosen finished jobs", exact: true }).click();
  await until("the clean-up of jobs older than an hour to be done", async () =>
    (await notice(page)) === `Deleted 0 jobs of queue ${q}: completed, dead and cancelled jobs that finished more than 1 hour ago.`);
  assert.equal(asked, `Delete the completed, dead and cancelled jobs of queue "${q}" that finished more than 1 hour ago? ` +
    "They are deleted for good, with their logs.");
  assert.deepEqual(await counts(), { pending: 0, active: 0, delayed: 4, waiting: 0, completed: 2, dead: 3, cancelled: 1 },
    "no job is an hour old: the clean-up deleted none");

  await cleanup.getByLabel("that finished", { exact: true }).selectOption({ label: "at any time (all of them)" });
  page.once("dialog", (dialog) => dialog.accept());
  await cleanup.getByRole("button", { name: "Delete the chosen finished jobs", exact: true }).click();
  await until("the clean-up of every finished job to be done", async () =>
    (await notice(page)) === `Deleted 6 jobs of queue ${q}: all completed, dead and cancelled jobs.`);
  await tabsSay(page, q, { completed: 0, dead: 0, cancelled: 0, delayed: 4 });
  const cleaned = await counts();
  assert.deepEqual([cleaned.completed, cleaned.dead, cleaned.cancelled, cleaned.delayed], [0, 0, 0, 4],
    "the API: every finished job deleted, the delayed ones kept");
  await until("the dead letters panel gone with the last finished job", async () => !(await panel.isVisible()));

  // Promote all, on the delayed tab.
  await page.getByRole("link", { name: "delayed (4)", exact: true }).click();
  await page.getByRole("table", { name: /^Delayed jobs of queue ops-bulk/ }).getByRole("rowheader").nth(3).waitFor();
  const promoteAll = page.getByRole("button", { name: `Promote all 4 delayed jobs of queue ${q}`, exact: true });
  page.once("dialog", (dialog) => {
    asked = dialog.message();
    dialog.accept();
  });
  await promoteAll.click();
  await until("the promotion of every delayed job to be done", async () =>
    (await notice(page)) === `Promoted 4 delayed jobs of queue ${q}.`);
  assert.match(asked, /^Promote all 4 delayed jobs of queue "ops-bulk"\?/, "Promote all asks first");
  await tabsSay(page, q, { delayed: 0, pending: 4 });
  await page.getByText(`No delayed jobs in queue ${q}.`, { exact: true }).waitFor();
  assert.equal(await promoteAll.isVisible(), false, "no Promote all once no job is delayed");
  const promoted = await counts();
  assert.deepEqual([promoted.delayed, promoted.pending], [0, 4], "the API: the delayed jobs are pending");
}

/**
 * The batches list, linked from the queue's page: the queue's batches in
 * the API's order (newest first), each with how many of its jobs ended,
 * followed live as the script completes one batch's job; a batch's link
 * opens its page, which links back to the list.
 */
async function listBatches(page, { base, call, rowOf, fitsAPhone }) {
  const q = "ops-batches";
  await call("POST", `${queuePath(q)}/batches`, { id: "nightly-1", jobs: [{ id: "n1-a", payload: {} }] });
  await call("POST", `${queuePath(q)}/batches`, { id: "nightly-2", jobs: [{ id: "n2-a", payload: {} }, { id: "n2-b", payload: {} }] });
  const listed = (await call("GET", `${queuePath(q)}/batches`)).batches.map((b) => b.id);
  assert.deepEqual([...listed].sort(), ["nightly-1", "nightly-2"], "the API lists both batches");

  await page.goto(`${base}/ui/#/queues/${q}/pending`);
  await page.getByRole("link", { name: `Batches of queue ${q}`, exact: true }).click();
  await page.getByRole("heading", { name: `Batches of queue ${q}`, exact: true }).waitFor();
  const table = page.getByRole("table", { name: `Batches of queue ${q}, newest first, page 1 (20 a page)`, exact: true });
  await until("the batches listed in the API's order", async () =>
    JSON.stringify((await table.getByRole("rowheader").allInnerTexts()).map((t) => t.trim())) === JSON.stringify(listed));
  // rowOf reads the headings and the row apart: until both are there, the row may read {}.
  const two = await until("nightly-2's row", async () => {
    const row = await rowOf(table, "nightly-2");
    return row?.Jobs ? row : null;
  });
  assert.deepEqual([two.State, two.Jobs, two.Success], ["running", "0 of 2 jobs ended", "—"], "a running batch's row");
  await accessible(page, "a queue's batches");
  await fitsAPhone(page, "a queue's batches");

  const claimed = await call("POST", `${queuePath(q)}/claim`, { lease_ms: 30000 });
  assert.equal(claimed.jobs[0]?.id, "n1-a", `the claim: ${JSON.stringify(claimed)}`);
  await call("POST", `${jobPath(q, "n1-a")}/complete`, { token: claimed.jobs[0].token });
  await until("nightly-1 shown done, without a click", async () => (await rowOf(table, "nightly-1"))?.State === "done");
  const one = await rowOf(table, "nightly-1");
  assert.deepEqual([one.Jobs, one.Success], ["1 of 1 job ended", "yes"], "a done batch's row");

  await table.getByRole("link", { name: "nightly-2", exact: true }).click();
  await page.getByRole("heading", { name: "Batch nightly-2", exact: true }).waitFor();
  await until("the batch's fields", async () => (await field(page, "Jobs")) === "2 jobs, 0 ended");
  await page.getByRole("link", { name: "Batches", exact: true }).click();
  await page.getByRole("heading", { name: `Batches of queue ${q}`, exact: true }).waitFor();
}

/**
 * The push panel's form, for an admin: a headers line that is not
 * "Name: value" is refused in the page, a header the service may not send
 * (Host) by the service, each writing nothing; a target with two headers
 * is saved, and the panel, its form and the API name the headers but
 * never show their values.
 */
async function setPushHeaders(page, { base, call, fitsAPhone }) {
  const q = "ops-push";
  const secretValue = "Bearer gw-token-5f1c";
  const tenantValue = "tenant-4711";
  await page.goto(`${base}/ui/#/queues/${q}/pending`);
  const panel = page.getByRole("region", { name: "Push delivery", exact: true });
  await panel.getByText(/^No push target:/).waitFor();
  const url = panel.getByLabel("URL", { exact: true });
  const headers = panel.getByLabel("Headers", { exact: true });
  const save = panel.getByRole("button", { name: "Save push target", exact: true });
  await url.fill("http://127.0.0.1:9/hooks");
  await panel.getByLabel("Most deliveries at once", { exact: true }).fill("2");
  await accessible(page, "the push target form");
  await fitsAPhone(page, "the push target form");

  await headers.fill(`Authorization: ${secretValue}\nX-Tenant ${tenantValue}`);
  await save.click();
  await until("the page to refuse a headers line", async () =>
    (await errorLine(page)) === 'Line 2 of the headers is not "Name: value".');
  await headers.fill(`Authorization: ${secretValue}\nHost: evil.example`);
  await save.click();
  await until("the service's refusal of a Host header", async () => /\(400 EMQINVALID\)$/.test(await errorLine(page)));
  assert.match(await errorLine(page), /headers/, "the refusal names the headers");
  assert.equal((await call("GET", queuePath(q))).push, false, "a refused target writes nothing");

  await headers.fill(`Authorization: ${secretValue}\nX-Tenant: ${tenantValue}\n`);
  await save.click();
  await until("the notice of the saved target", async () => (await notice(page)) === `Saved the push target of queue ${q}.`);
  assert.equal(await errorLine(page), "", "the refusal is cleared once the target is saved");
  await until("the panel to name the target's headers", async () =>
    (await panel.innerText()).includes("2 at once, 30 s timeout") &&
    (await panel.innerText()).includes("not signed, with headers Authorization, X-Tenant"));
  await panel.getByLabel("Headers (set now: Authorization, X-Tenant)", { exact: true }).waitFor();
  const target = await call("GET", `${queuePath(q)}/push`);
  assert.deepEqual(target.header_names, ["Authorization", "X-Tenant"], "the API names the headers");
  const values = [secretValue, tenantValue, "gw-token"];
  const seen = JSON.stringify(target) + (await page.content()) + (await page.locator("body").innerText()) +
    JSON.stringify(await page.evaluate(() => [...document.querySelectorAll("input, textarea")].map((el) => el.value)));
  for (const value of values) {
    assert.ok(!seen.includes(value), `a header's value (${value}) is shown in the page or answered by the API`);
  }
  await call("DELETE", `${queuePath(q)}/push`);
}

/**
 * The settings form's job defaults and retention: saved, said in words,
 * answered by the API, applied to a job that names none, shown again in
 * the form; the retention (completed: the newest 1) trims the queue's
 * completed jobs, which the page counts once read again (a trim writes
 * no event).
 */
async function setDefaultsAndRetention(page, { base, call, fitsAPhone }) {
  const q = "ops-settings";
  for (let i = 0; i < 3; i++) {
    await completedJob(call, q);
  }
  await page.goto(`${base}/ui/#/queues/${q}/pending`);
  const panel = page.getByRole("region", { name: "Flow control", exact: true });
  await tabsSay(page, q, { completed: 3 });
  await panel.getByLabel("Attempts", { exact: true }).fill("5");
  await panel.getByLabel("Backoff", { exact: true }).selectOption("fixed");
  await panel.getByLabel("Backoff delay, ms", { exact: true }).fill("2000");
  await panel.getByLabel("Priority (0 first)", { exact: true }).fill("3");
  await panel.getByLabel("Completed: newest kept", { exact: true }).fill("1");
  await panel.getByLabel("Dead: for at most, ms", { exact: true }).fill("86400000");
  await accessible(page, "the settings form with job defaults and retention");
  await fitsAPhone(page, "the settings form with job defaults and retention");
  await panel.getByRole("button", { name: "Save settings", exact: true }).click();
  await until("the summary to say the job defaults and retention", async () => {
    const text = await panel.innerText();
    return text.includes("A job that names none gets 5 attempts, a fixed backoff from 2,000 ms, priority 3.") &&
      text.includes("Keeps completed jobs: the newest 1; dead jobs: for 86,400,000 ms; the rest deleted, oldest first.");
  });
  const settings = await call("GET", `${queuePath(q)}/settings`);
  assert.deepEqual(settings, {
    job_defaults: { max_attempts: 5, backoff: { type: "fixed", delay_ms: 2000, max_delay_ms: 3600000 }, priority: 3 },
    retention: { completed: { count: 1 }, dead: { age_ms: 86400000 } },
  }, "the API's settings after Save");

  const job = await call("POST", `${queuePath(q)}/jobs`, { payload: { plain: true } });
  assert.deepEqual([job.max_attempts, job.priority], [5, 3], "a job that names none gets the defaults");
  await until("the retention to trim the completed jobs to 1", async () => (await call("GET", queuePath(q))).counts.completed === 1);

  // Read again, the page shows what the service kept, in the form too.
  await page.reload();
  await tabsSay(page, q, { completed: 1, pending: 1 });
  await until("the form filled from the service", async () =>
    (await panel.getByLabel("Backoff cap, ms", { exact: true }).inputValue()) === "3600000");
  const shown = {};
  for (const label of ["Attempts", "Backoff", "Backoff delay, ms", "Priority (0 first)", "Completed: newest kept",
    "Completed: for at most, ms", "Dead: newest kept", "Dead: for at most, ms", "Cancelled: newest kept"]) {
    shown[label] = await panel.getByLabel(label, { exact: true }).inputValue();
  }
  assert.deepEqual(shown, {
    "Attempts": "5", "Backoff": "fixed", "Backoff delay, ms": "2000", "Priority (0 first)": "3",
    "Completed: newest kept": "1", "Completed: for at most, ms": "", "Dead: newest kept": "", "Dead: for at most, ms": "86400000",
    "Cancelled: newest kept": "",
  }, "the settings form read again");
}
