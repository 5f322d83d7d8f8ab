// batches.mjs: dashboard.mjs's checks of batches and dependencies, on
// queues of their own: "imports", where the script makes a batch of three
// jobs (load-1 waits for extract-1 and extract-2) and a chain whose first
// job dies, and "import-reports", the batch's callback queue. The script
// is the jobs' worker, so it knows every count the pages must show.

import assert from "node:assert/strict";

import { accessible, schemes, until } from "./browser.mjs";

const q = "imports";
const callbackQueue = "import-reports";
const batchID = "import-7";

/** The page's record of the batch it is sent to that does not exist, on purpose. */
export const batchProblems = [
  /^404 for GET .*\/queues\/imports\/batches\/no-such-batch$/,
  /^console error: Failed to load resource: the server responded with a status of 404 \(Not Found\) \(at .*\/batches\/no-such-batch\)$/,
];

/**
 * The text of a field (a <dt>) of the view shown, a job's or a batch's,
 * read from its <dd>: the job and batch views both have fields, and the
 * one not shown keeps its last ones.
 */
async function field(page, name) {
  const dd = page.locator(".view:not([hidden]) dl.fields dt", { hasText: new RegExp(`^${name}$`) })
    .locator("xpath=following-sibling::dd[1]");
  return (await dd.innerText()).trim();
}

/**
 * Batches and dependencies in the dashboard: a waiting job is counted in
 * the queues table and the queue's tabs, and listed under waiting with
 * what it waits for; its page links its batch and each dependency, with
 * their states. The batch's page counts its jobs by state and follows
 * them live as the script works them, and once the batch is done links
 * its callback job, whose page links back. A dependant whose dependency
 * died shows the dependency-failure cancel reason, linked.
 *
 * helpers are dashboard.mjs's: base, call (the API), rowOf and
 * fitsAPhone.
 */
export async function seeBatches(page, helpers) {
  const { base, call } = helpers;
  await call("POST", `/queues/${q}/batches`, {
    id: batchID,
    jobs: [
      { id: "extract-1", payload: { part: 1 } },
      { id: "extract-2", payload: { part: 2 } },
      { id: "load-1", payload: { load: true }, depends_on: ["extract-1", "extract-2"] },
    ],
    callback: { queue: callbackQueue, payload: { notify: "ops" } },
  });
  await seeTheWaitingJob(page, helpers);
  await seeTheBatch(page, helpers);
  await seeADependencyFail(page, helpers);
  await page.goto(`${base}/ui/`);
}

/** The waiting job in the queues table, the queue's waiting tab, and on its page. */
async function seeTheWaitingJob(page, { base, rowOf, fitsAPhone }) {
  await page.goto(`${base}/ui/`);
  const queues = page.getByRole("table", { name: /Queues/ });
  const row = await until(`queue ${q} in the queues table with its waiting job`, async () => {
    const r = await rowOf(queues, q);
    return r?.Waiting === "1" ? r : null;
  });
  assert.equal(row.Pending, "2", `the pending count of ${q}: ${JSON.stringify(row)}`);
  const headers = (await queues.getByRole("columnheader").allInnerTexts()).map((t) => t.trim());
  assert.deepEqual(headers.slice(1, 8), ["Pending", "Active", "Delayed", "Waiting", "Completed", "Dead", "Cancelled"],
    "the queues table's state columns, waiting after delayed");

  await queues.getByRole("link", { name: q, exact: true }).click();
  await page.getByRole("heading", { name: `Queue ${q}`, exact: true }).waitFor();
  const nav = page.getByRole("navigation", { name: `Job states of queue ${q}` });
  const want = ["pending (2)", "active (0)", "delayed (0)", "waiting (1)", "completed (0)", "dead (0)", "cancelled (0)"];
  await until(`the queue's state tabs to be ${want.join(", ")}`, async () =>
    JSON.stringify(await nav.getByRole("link").allInnerTexts()) === JSON.stringify(want));
  await page.getByRole("link", { name: "waiting (1)", exact: true }).click();
  const table = page.getByRole("table", { name: `Waiting jobs of queue ${q}, page 1 (50 a page)`, exact: true });
  // rowOf reads the headings and the row apart: until both are there, the row may read {}.
  await until("load-1 in the waiting list, with what it waits for", async () =>
    (await rowOf(table, "load-1"))?.["Waits for"] === "extract-1, extract-2");
  assert.equal(await table.getByRole("rowheader").count(), 1, "only the waiting job is listed");
  await accessible(page, "a queue's waiting jobs");

  await table.getByRole("link", { name: "load-1", exact: true }).click();
  await page.getByRole("heading", { name: "Job load-1", exact: true }).waitFor();
  await until("the dependencies' states", async () => (await field(page, "Depends on")).includes("(pending)"));
  assert.equal(await field(page, "State"), "waiting");
  assert.equal(await field(page, "Batch"), batchID);
  assert.equal(await field(page, "Depends on"), "extract-1 (pending)\nextract-2 (pending)");
  assert.match(await field(page, "On dependency failure"), /^cancel: /);
  assert.equal(await page.getByRole("button", { name: "Cancel job load-1", exact: true }).count(), 1,
    "a waiting job may be cancelled");
  await accessible(page, "a waiting job's page");
  await fitsAPhone(page, "a waiting job's page");

  await page.getByRole("link", { name: "extract-2", exact: true }).click();
  await page.getByRole("heading", { name: "Job extract-2", exact: true }).waitFor();
  assert.equal(await field(page, "Batch"), batchID, "a dependency's page links its batch too");
  await page.goBack();
  await page.getByRole("heading", { name: "Job load-1", exact: true }).waitFor();
  await page.getByRole("link", { name: batchID, exact: true }).click();
  await page.getByRole("heading", { name: `Batch ${batchID}`, exact: true }).waitFor();
}

/** The counters of the batch's page, as their texts: "pending (2)", ... */
function counters(page) {
  return page.getByRole("region", { name: "Jobs by state" }).getByRole("listitem").allInnerTexts();
}

/** Waits until the batch's counters say want (a state's count for some states). */
async function countsAre(page, what, want) {
  const texts = Object.entries(want).map(([state, n]) => `${state} (${n})`);
  await until(what, async () => {
    const got = (await counters(page)).map((t) => t.trim());
    return texts.every((t) => got.includes(t));
  });
}

/** Claims the next job of q as its worker and completes it; returns its id. */
async function work(call, want) {
  const claimed = await call("POST", `/queues/${q}/claim`, { lease_ms: 30000 });
  assert.equal(claimed.jobs.length, 1, `a claim of ${q}: ${JSON.stringify(claimed)}`);
  const job = claimed.jobs[0];
  assert.equal(job.id, want, "the job claimed");
  await call("POST", `/queues/${q}/jobs/${encodeURIComponent(job.id)}/complete`, { token: job.token });
}

/**
 * The batch's page: its counts while running, then live as the script
 * completes its jobs, and once done its success and its callback job,
 * whose page links back to the batch.
 */
async function seeTheBatch(page, { base, call, fitsAPhone }) {
  const region = page.getByRole("region", { name: "Jobs by state" });
  await countsAre(page, "the running batch's counts", { pending: 2, waiting: 1, completed: 0 });
  assert.deepEqual((await counters(page)).map((t) => t.trim()),
    ["pending (2)", "active (0)", "delayed (0)", "waiting (1)", "completed (0)", "dead (0)", "cancelled (0)"],
    "every state counted, in the dashboard's order");
  assert.match(await field(page, "State"), /^running: /);
  assert.equal(await field(page, "Jobs"), "3 jobs, 0 ended");
  assert.equal(await field(page, "Success"), "not known yet: the batch is not done");
  assert.equal(await field(page, "Callback"), `on queue ${callbackQueue}, once every job has ended (complete)`);
  assert.match(await field(page, "Callback job"), /^not yet: /);
  assert.equal(await region.getByRole("img", { name: "0 of 3 jobs ended: 2 pending, 1 waiting", exact: true }).count(), 1,
    "the bar's text alternative");
  for (const colorScheme of schemes) {
    await page.emulateMedia({ colorScheme });
    const colours = await region.locator(".part").evaluateAll((parts) => parts.map((p) => getComputedStyle(p).backgroundColor));
    assert.equal(new Set(colours).size, 2, `two parts of two colours in ${colorScheme} mode: ${colours}`);
  }
  await page.emulateMedia({ colorScheme: "light" });
  await accessible(page, "a batch's page");
  await fitsAPhone(page, "a batch's page");

  // Live, with no click: the extracts complete, load-1 is released, then it completes too.
  await work(call, "extract-1");
  await work(call, "extract-2");
  await countsAre(page, "the batch's counts after the extracts", { pending: 1, waiting: 0, completed: 2 });
  assert.equal(await field(page, "Jobs"), "3 jobs, 2 ended");
  await work(call, "load-1");
  await until("the batch shown as done", async () => /^done: /.test(await field(page, "State")));
  await countsAre(page, "the done batch's counts", { pending: 0, completed: 3 });
  assert.equal(await field(page, "Success"), "yes: every job completed");
  const link = page.getByRole("link", { name: `batch:${batchID}`, exact: true });
  await link.waitFor();
  const batch = await call("GET", `/queues/${q}/batches/${batchID}`);
  assert.equal(batch.callback_job_id, `batch:${batchID}`, "the API's callback job");
  await accessible(page, "a done batch's page");

  await link.click();
  await page.getByRole("heading", { name: `Job batch:${batchID}`, exact: true }).waitFor();
  assert.equal(await field(page, "State"), "pending", "the callback job waits for its worker");
  assert.equal(page.url(), `${base}/ui/#/queues/${callbackQueue}/jobs/batch%3A${batchID}`, "the callback job is on its queue");
  await page.getByRole("link", { name: batchID, exact: true }).click();
  await page.getByRole("heading", { name: `Batch ${batchID}`, exact: true }).waitFor();
  assert.equal(page.url(), `${base}/ui/#/queues/${q}/batches/${batchID}`, "the callback job links back to its batch");

  await page.goto(`${base}/ui/#/queues/${q}/batches/no-such-batch`);
  await page.getByText(`There is no batch no-such-batch in queue ${q}.`, { exact: false }).waitFor();
}

/**
 * A chain whose first job dies: its dependant is cancelled, and its page
 * shows why, with the dependency linked and shown dead.
 */
async function seeADependencyFail(page, { base, call }) {
  await call("POST", `/queues/${q}/jobs`, { id: "bad-1", payload: {}, max_attempts: 1 });
  await call("POST", `/queues/${q}/jobs`, { id: "after-bad", payload: {}, depends_on: ["bad-1"] });
  await page.goto(`${base}/ui/#/queues/${q}/jobs/after-bad`);
  await page.getByRole("heading", { name: "Job after-bad", exact: true }).waitFor();
  await until("the dependant shown waiting", async () => (await field(page, "State")) === "waiting");
  const claimed = await call("POST", `/queues/${q}/claim`, { lease_ms: 30000 });
  assert.equal(claimed.jobs[0]?.id, "bad-1", `the claim: ${JSON.stringify(claimed)}`);
  await call("POST", `/queues/${q}/jobs/bad-1/fail`, { token: claimed.jobs[0].token, error: "bad input" });
  await until("the dependant shown cancelled without a reload", async () => (await field(page, "State")) === "cancelled");
  assert.equal(await field(page, "Cancel reason"), "dependency bad-1 dead");
  await until("the dependency shown dead", async () => (await field(page, "Depends on")) === "bad-1 (dead)");
  const reason = page.locator(".view:not([hidden]) dl.fields dt", { hasText: /^Cancel reason$/ }).locator("xpath=following-sibling::dd[1]");
  await reason.getByRole("link", { name: "bad-1", exact: true }).click();
  await page.getByRole("heading", { name: "Job bad-1", exact: true }).waitFor();
  assert.equal(await field(page, "State"), "dead");
}
