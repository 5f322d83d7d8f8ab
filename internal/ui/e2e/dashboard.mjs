// dashboard.mjs: the dashboard's browser test, in Debian's headless Chromium
// driven by playwright-core. The Go test in this folder (e2e_test.go) starts
// the service on a real Redis, enqueues jobs and runs this script with:
//
//   EMQ_URL          the service's base URL, such as http://127.0.0.1:41234
//   EMQ_QUEUE        the queue it filled
//   EMQ_PENDING      how many of its jobs are pending
//   EMQ_DEAD         how many are dead
//   EMQ_DEAD_ID      the id of its dead job failed with "mailbox full"; one
//                    other failed with "smtp timeout"
//   EMQ_ACTIVE_ID    the id of its one active job
//   EMQ_ACTIVE_TOKEN that job's lease token, as JSON: the script is its worker
//   EMQ_SCREENSHOTS  the folder to write the screenshots to
//   CHROMIUM         the browser (default /usr/bin/chromium)
//
// The schedules are checked on queues of their own, nightly and calendar,
// and batches on imports and import-reports (batches.mjs), and the
// operator's actions (editing a job, its log and progress, bulk actions,
// the batches list, push headers, job defaults and retention) on ops-*
// (operator.mjs), which the script makes over the API, so that their jobs
// leave the counts of EMQ_QUEUE alone.
//
// It selects elements by role, label and text only, as a person (or a
// screen reader) finds them. It exits non-zero with a message on the first
// check that fails.

import assert from "node:assert/strict";
import { join } from "node:path";

import { batchProblems, seeBatches } from "./batches.mjs";
import { accessible, need, schemes, tabTo, until, withPage } from "./browser.mjs";
import { seeCharts } from "./charts.mjs";
import { operatorProblems, seeOperatorActions } from "./operator.mjs";

const base = need("EMQ_URL");
const queue = need("EMQ_QUEUE");
const pending = Number(need("EMQ_PENDING"));
const dead = Number(need("EMQ_DEAD"));
const deadID = need("EMQ_DEAD_ID");
const activeID = need("EMQ_ACTIVE_ID");
const activeToken = JSON.parse(need("EMQ_ACTIVE_TOKEN"));
const shots = need("EMQ_SCREENSHOTS");

/** The sizes the screenshots are taken at. */
const sizes = {
  laptop: { width: 1280, height: 800 },
  phone: { width: 390, height: 844 },
};

/**
 * Reads the row of table whose row header is name as {column header:
 * text}, by the table's column headers; null while the row is not there.
 */
async function rowOf(table, name) {
  const headers = await table.getByRole("columnheader").allInnerTexts();
  const row = table.getByRole("row").filter({ has: table.page().getByRole("rowheader", { name, exact: true }) });
  if ((await row.count()) !== 1) {
    return null;
  }
  const texts = await row.getByRole("cell").allInnerTexts();
  // The row header fills the first column; the cells the rest.
  const out = {};
  headers.slice(1).forEach((header, i) => (out[header.trim()] = (texts[i] || "").trim()));
  return out;
}

/** Reads the queue's row of the queues table; null while it is not there. */
function queueRow(page) {
  return rowOf(page.getByRole("table", { name: /Queues/ }), queue);
}

/**
 * Checks that, at the given viewport, the page does not scroll sideways and
 * the Dead cell of the queue's row lies within the screen's width.
 */
async function fitsTheScreen(page, size, viewport) {
  const scrollWidth = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(scrollWidth <= viewport.width, `${size}: the page scrolls sideways (${scrollWidth} px wide)`);

  // The table's own box (its parent, which scrolls when it must) does not
  // scroll sideways either.
  const table = page.getByRole("table", { name: /Queues/ });
  const fit = await table.locator("..").evaluate((el) => ({ scroll: el.scrollWidth, client: el.clientWidth }));
  assert.ok(fit.scroll <= fit.client, `${size}: the queues table scrolls sideways (${fit.scroll} px in ${fit.client} px)`);

  const headers = (await table.getByRole("columnheader").allInnerTexts()).map((h) => h.trim());
  const deadColumn = headers.indexOf("Dead");
  assert.ok(deadColumn > 0, `${size}: no Dead column among ${JSON.stringify(headers)}`);
  const row = table.getByRole("row").filter({ has: page.getByRole("rowheader", { name: queue, exact: true }) });
  // The row header fills the first column, so cells count from the second.
  const cell = row.getByRole("cell").nth(deadColumn - 1);
  assert.equal((await cell.innerText()).trim(), String(dead), `${size}: the Dead cell of ${queue}`);
  const box = await cell.boundingBox();
  assert.ok(box, `${size}: the Dead cell of ${queue} is not shown`);
  assert.ok(
    box.x >= 0 && box.x + box.width <= viewport.width,
    `${size}: the Dead cell of ${queue} is off screen: x ${box.x}..${box.x + box.width}, screen 0..${viewport.width}`,
  );
}

/**
 * Checks that the page, at a phone's size, does not scroll sideways (a
 * wide table may scroll inside its own box), then goes back to a laptop's.
 */
async function fitsAPhone(page, what) {
  await page.setViewportSize(sizes.phone);
  const scrollWidth = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(scrollWidth <= sizes.phone.width, `${what} scrolls sideways on a phone (${scrollWidth} px wide)`);
  await page.setViewportSize(sizes.laptop);
}

/** Asks the API itself for the queue. */
async function apiQueue() {
  return apiCall("GET", `/queues/${encodeURIComponent(queue)}`);
}

/**
 * Calls the API itself, as a worker or a producer would, with any extra
 * headers, and returns its 200 or 201 answer.
 */
async function apiCall(method, path, body, headers = {}) {
  const init = { method, headers };
  if (body !== undefined) {
    init.headers = { ...headers, "Content-Type": "application/json" };
    init.body = JSON.stringify(body);
  }
  const resp = await fetch(base + path, init);
  const answer = await resp.json();
  assert.ok(resp.status === 200 || resp.status === 201, `${method} ${path}: ${resp.status} ${JSON.stringify(answer)}`);
  return answer;
}

/** The path of one of the queue's jobs in the API. */
function jobPath(id) {
  return `/queues/${encodeURIComponent(queue)}/jobs/${encodeURIComponent(id)}`;
}

/** The text of the job page's field name (a <dt>), read from its <dd>. */
async function jobField(page, name) {
  const dd = page.locator(".view:not([hidden]) dl.fields dt", { hasText: new RegExp(`^${name}$`) }).locator("xpath=following-sibling::dd[1]");
  return (await dd.innerText()).trim();
}

/**
 * What an operator who has never seen echo_mq does about a dead job, with
 * the keyboard only: from the first page, follow the dead-jobs line to the
 * queue's dead jobs, read why it died, open it and retry it; then see it
 * pending, in the page and in the API, and the queue's counts move. Checks
 * each page with axe-core on the way, and says how many key presses and
 * how long it took.
 */
async function retryADeadJob(page) {
  const started = Date.now();
  let keys = 0;
  await page.goto(`${base}/ui/`);
  await until("the feed to be live", async () => (await page.locator("#live").innerText()) === "Live");
  await until(`the row of queue ${queue}`, () => queueRow(page));
  await accessible(page, "the queues page");
  keys += await tabTo(page, page.getByRole("link", { name: `${queue} (${dead}): ${dead} dead jobs`, exact: true }), "the dead-jobs link");
  await page.keyboard.press("Enter");
  keys++;

  // The queue's page, on its dead jobs: the dead letters panel says why.
  await page.getByRole("heading", { name: `Queue ${queue}`, exact: true }).waitFor();
  const panel = page.getByRole("region", { name: "Dead letters" });
  await panel.getByText("mailbox full", { exact: true }).waitFor();
  const table = page.getByRole("table", { name: /^Dead jobs of queue/ });
  const link = table.getByRole("link", { name: deadID, exact: true });
  await link.waitFor();
  await accessible(page, "a queue's page");
  await page.screenshot({ path: join(shots, "queue-laptop-light.png"), fullPage: true, animations: "disabled" });
  await fitsAPhone(page, "a queue's page");

  // The job's page: why it died, and Retry.
  keys += await tabTo(page, link, "the dead job's link");
  await page.keyboard.press("Enter");
  keys++;
  await page.getByRole("heading", { name: `Job ${deadID}`, exact: true }).waitFor();
  assert.equal(await jobField(page, "State"), "dead", "the dead job's page shows its state");
  assert.equal(await jobField(page, "Last error"), "mailbox full", "the dead job's page shows why it died");
  await accessible(page, "a job's page");
  await page.screenshot({ path: join(shots, "job-laptop-light.png"), fullPage: true, animations: "disabled" });
  await fitsAPhone(page, "a job's page");
  keys += await tabTo(page, page.getByRole("button", { name: `Retry job ${deadID}`, exact: true }), "the Retry button");
  await page.keyboard.press("Enter");
  keys++;
  await until("the retried job shown as pending", async () => (await jobField(page, "State")) === "pending");
  const took = Date.now() - started;
  const job = await apiCall("GET", jobPath(deadID));
  assert.equal(job.state, "pending", "the API says the retried job is pending");
  console.log(`dead job found and retried with the keyboard only: ${keys} key presses, ${took} ms in the browser (axe checks included)`);

  // The other dead job, from the dead letters panel: its group's button.
  // The way back leads to the tab the job was opened from.
  await page.getByRole("link", { name: `Queue ${queue}`, exact: true }).click();
  await page.getByRole("link", { name: `dead (${dead - 1})`, exact: true, current: "page" }).waitFor();
  const group = page.getByRole("region", { name: "Dead letters" }).getByRole("listitem").filter({ hasText: "smtp timeout" });
  await group.getByRole("button", { name: "Retry this job, failed with: smtp timeout", exact: true }).click();
  await page.getByText("Retried 1 of 1 job.", { exact: true }).first().waitFor();

  // Back on the first page the counts have moved: no dead job, two more pending.
  await page.getByRole("link", { name: "← All queues", exact: true }).click();
  await until("the dead count to reach 0", async () => (await queueRow(page))?.Dead === "0");
  assert.equal((await queueRow(page)).Pending, String(pending + dead), "the retried jobs counted as pending");
  assert.equal(await page.locator("#dead-summary").isVisible(), false, "the dead-jobs line is gone with the last dead job");
  assert.equal((await apiQueue()).counts.dead, 0, "the API counts no dead job");
}

/**
 * A change made by someone else (a producer) shows on the queue's page by
 * itself: it comes through the event feed into "Recent changes", and the
 * pending count follows, without a click.
 */
async function seeChangesLive(page) {
  await page.getByRole("link", { name: queue, exact: true }).click();
  await page.getByRole("heading", { name: `Queue ${queue}`, exact: true }).waitFor();
  const before = (await apiQueue()).counts.pending;
  const made = await apiCall("POST", `/queues/${encodeURIComponent(queue)}/jobs`, { id: "live-1", payload: { n: "live" } });
  const recent = page.getByRole("region", { name: "Recent changes" });
  await until("the enqueue in Recent changes", async () =>
    (await recent.getByRole("listitem").filter({ hasText: `enqueued ${made.id}` }).count()) === 1);
  await until("the pending tab to count the new job", async () =>
    (await page.getByRole("link", { name: `pending (${before + 1})`, exact: true }).count()) === 1);

  // A retried job's old error is marked as an earlier attempt's.
  const retried = page.getByRole("row").filter({ has: page.getByRole("link", { name: deadID, exact: true }) });
  assert.equal((await retried.getByRole("cell").last().innerText()).trim(), "earlier attempt: mailbox full",
    "a retried job's old error, in the pending list");

  // Another tab of the same queue keeps its recent changes.
  await page.getByRole("link", { name: /^completed \(/ }).click();
  await page.getByRole("table", { name: /^Completed jobs of queue/ }).waitFor();
  assert.equal(await recent.getByRole("listitem").filter({ hasText: `enqueued ${made.id}` }).count(), 1,
    "Recent changes kept after switching tabs");
}

/**
 * Cancels the active job from its page, answering the reason prompt; the
 * page says the cancel is requested. The script, as the job's worker, sees
 * the request and fails the job: the page shows it cancelled by itself.
 */
async function cancelAnActiveJob(page) {
  await page.getByRole("link", { name: /^active \(/ }).click();
  await page.getByRole("table", { name: /^Active jobs of queue/ }).getByRole("link", { name: activeID, exact: true }).click();
  await page.getByRole("heading", { name: `Job ${activeID}`, exact: true }).waitFor();
  assert.equal(await jobField(page, "State"), "active", "the active job's page shows its state");
  assert.match(await jobField(page, "Lease expires"), /expires in/, "the lease counts down");

  page.once("dialog", (dialog) => dialog.accept("operator: wrong address"));
  await page.getByRole("button", { name: `Cancel job ${activeID}`, exact: true }).click();
  await until("the cancel shown as requested", async () =>
    (await jobField(page, "Cancel requested")) === "yes: operator: wrong address");

  // The worker's side: the next checkpoint carries the request, and it stops.
  const seen = await apiCall("GET", `${jobPath(activeID)}/cancellation?token=${activeToken}`);
  assert.equal(seen.cancel_requested, true, `the worker sees the cancel: ${JSON.stringify(seen)}`);
  await apiCall("POST", `${jobPath(activeID)}/fail`, { token: activeToken, error: "cancelled: operator: wrong address" });
  await until("the job shown as cancelled without a reload", async () => (await jobField(page, "State")) === "cancelled");
}

/**
 * While live, the queues table reads itself every 30 s only; a job enqueued
 * elsewhere shows in it well before that, brought by its event.
 */
async function tableFollowsEvents(page) {
  await page.goto(`${base}/ui/`);
  await until("the feed to be live", async () => (await page.locator("#live").innerText()) === "Live");
  const before = (await apiQueue()).counts.pending;
  await until("the table to show the queue's pending count", async () => (await queueRow(page))?.Pending === String(before));
  await apiCall("POST", `/queues/${encodeURIComponent(queue)}/jobs`, { payload: { n: "elsewhere" } });
  await until("the table to count a job enqueued elsewhere", async () => (await queueRow(page))?.Pending === String(before + 1));
}

/**
 * While the event stream cannot be had (every request for it fails), the
 * page says it is reconnecting and still shows changes, read every 2
 * seconds; once the stream can be had again, it says "Live" by itself.
 */
async function reconnects(page) {
  let refused = 0;
  await page.route("**/events", (route) => {
    refused++;
    return route.abort("connectionrefused");
  });
  await page.goto(`${base}/ui/`);
  await until("the page to say it is reconnecting", async () => (await page.locator("#live").innerText()) === "Reconnecting…");
  const before = (await apiQueue()).counts.pending;
  await apiCall("POST", `/queues/${encodeURIComponent(queue)}/jobs`, { payload: { n: "while down" } });
  await until("the new job counted while the stream is down", async () => (await queueRow(page))?.Pending === String(before + 1));
  await page.unroute("**/events");
  await until("the page to be live again", async () => (await page.locator("#live").innerText()) === "Live");
  // 1 s, 2 s, 4 s… between attempts: a handful, not one per poll.
  assert.ok(refused >= 1 && refused <= 6, `the stream was asked for ${refused} times while refused, want 1 to 6`);
  console.log(`reconnected after ${refused} refused attempts at the stream`);
}

/**
 * The flow control panel: a job enqueued in a group lists the group, whose
 * Pause and Resume buttons pause it for the API too; the settings form
 * saves a limit, which the summary and the API then say.
 */
async function controlTheFlow(page) {
  await page.goto(`${base}/ui/#/queues/${encodeURIComponent(queue)}/pending`);
  const panel = page.getByRole("region", { name: "Flow control" });
  await panel.waitFor();
  await apiCall("POST", `/queues/${encodeURIComponent(queue)}/jobs`, { payload: { n: "grouped" }, group: "tenant-a" });
  const groupPaused = async () => (await apiCall("GET", `/queues/${encodeURIComponent(queue)}/groups`)).groups[0].paused;
  await panel.getByRole("button", { name: "Pause group tenant-a", exact: true }).click();
  await until("group tenant-a shown as paused", async () =>
    (await panel.getByRole("button", { name: "Resume group tenant-a", exact: true }).count()) === 1);
  assert.equal(await groupPaused(), true, "the API says tenant-a is paused after Pause");
  await panel.getByRole("button", { name: "Resume group tenant-a", exact: true }).click();
  await until("group tenant-a shown as not paused", async () =>
    (await panel.getByRole("button", { name: "Pause group tenant-a", exact: true }).count()) === 1);
  assert.equal(await groupPaused(), false, "the API says tenant-a is not paused after Resume");

  await panel.getByLabel("Most active jobs", { exact: true }).fill("5");
  await panel.getByRole("button", { name: "Save settings", exact: true }).click();
  await until("the summary to say the limit", async () => /at most 5 jobs active at once/.test(await panel.innerText()));
  const settings = await apiCall("GET", `/queues/${encodeURIComponent(queue)}/settings`);
  assert.deepEqual(settings, { concurrency: 5 }, "the API's settings after Save");
  await fitsAPhone(page, "the flow control panel");
  await apiCall("PUT", `/queues/${encodeURIComponent(queue)}/settings`, {});
}

/** The path of one schedule in the API. */
function schedulePath(q, name) {
  return `/queues/${encodeURIComponent(q)}/schedules/${encodeURIComponent(name)}`;
}

/**
 * The schedules panel: three schedules made over the API (every minute;
 * at 3 a.m. in Berlin; a paused one) are listed with their cadence in
 * words and their next run. Pause and Resume pause the schedule for the
 * API too; "Run now" enqueues a job, which the panel links to and the
 * queue's pending jobs list. The panel passes axe and fits a phone. The
 * every-minute schedule may tick during the test, so only the other two
 * are checked for what a tick changes (last run, runs).
 */
async function steerSchedules(page) {
  const q = "nightly";
  await apiCall("PUT", schedulePath(q, "digest"), { every_ms: 60000, job: { payload: { kind: "digest" } } });
  await apiCall("PUT", schedulePath(q, "cleanup"), { cron: "0 3 * * *", tz: "Europe/Berlin", job: { payload: null } });
  await apiCall("PUT", schedulePath(q, "archive"), { every_ms: 3600000, job: { payload: {} }, paused: true });
  await page.goto(`${base}/ui/#/queues/${q}/pending`);
  const panel = page.getByRole("region", { name: "Schedules", exact: true });
  const table = panel.getByRole("table", { name: `Schedules of queue ${q}, by name`, exact: true });
  const row = (name) => rowOf(table, name);
  await until("the three schedules listed", async () => (await table.getByRole("rowheader").allInnerTexts()).join(",") === "archive,cleanup,digest");

  const digest = await row("digest");
  assert.equal(digest.Cadence, "every 1 min");
  assert.equal(digest.Paused, "no");
  await until("digest's next run within the minute", async () => /\((in (\d+ s|1 min 0 s)|now)\)$/.test((await row("digest"))["Next run"]));
  const cleanup = await row("cleanup");
  assert.equal(cleanup.Cadence, 'cron "0 3 * * *" in Europe/Berlin');
  assert.match(cleanup["Next run"], /\(in \d+ (h|min) \d+ (min|s)\)$/, `the next run of cleanup: ${cleanup["Next run"]}`);
  assert.equal(cleanup["Last run"], "never");
  assert.equal(cleanup.Runs, "0");
  const next = (await apiCall("GET", schedulePath(q, "cleanup"))).next_run_at;
  assert.equal(await table.getByRole("row").filter({ hasText: "cleanup" }).locator("time").first().getAttribute("datetime"), next,
    "the next run shown is the API's");
  const archive = await row("archive");
  assert.deepEqual([archive.Cadence, archive.Paused, archive["Next run"], archive["Last run"]],
    ["every 1 h", "paused", "none while paused", "never"], "the paused schedule");
  await accessible(page, "the schedules panel");

  // Pause and Resume, as the API sees them.
  await panel.getByRole("button", { name: "Pause schedule digest", exact: true }).click();
  await until("digest shown as paused", async () => (await row("digest"))?.["Next run"] === "none while paused");
  assert.equal((await apiCall("GET", schedulePath(q, "digest"))).paused, true, "the API says digest is paused after Pause");
  await panel.getByRole("button", { name: "Resume schedule digest", exact: true }).click();
  await until("digest shown as running again", async () => (await row("digest"))?.Paused === "no");
  const resumed = await apiCall("GET", schedulePath(q, "digest"));
  assert.equal(resumed.paused, false, "the API says digest is not paused after Resume");
  assert.ok(resumed.next_run_at, "digest has a next run again");

  // Run now: the job is linked, counted, listed and has its page.
  await panel.getByRole("button", { name: "Run now: schedule cleanup", exact: true }).click();
  const ran = panel.getByRole("status").getByRole("link", { name: /^cleanup:run:\d+$/ });
  await ran.waitFor();
  const id = await ran.innerText();
  await until("cleanup's last run to be the job run now", async () => (await row("cleanup"))?.Runs === "1");
  // innerText puts a line between the cell's time and its job only once the
  // row is laid out; a row read while the table is drawn again has none.
  assert.match((await row("cleanup"))["Last run"], new RegExp(`\\)\\s*job ${id}$`));
  await page.getByRole("table", { name: /^Pending jobs of queue nightly/ }).getByRole("link", { name: id, exact: true }).waitFor();
  assert.equal((await apiCall("GET", `/queues/${q}/jobs/${encodeURIComponent(id)}`)).state, "pending", "the API has the job run now");
  await fitsAPhone(page, "the schedules panel");
  await page.setViewportSize(sizes.phone);
  const fit = await table.locator("..").evaluate((el) => ({ scroll: el.scrollWidth, client: el.clientWidth }));
  assert.ok(fit.scroll <= fit.client, `the schedules table scrolls sideways on a phone (${fit.scroll} px in ${fit.client} px)`);
  await page.setViewportSize(sizes.laptop);
  await ran.click();
  await page.getByRole("heading", { name: `Job ${id}`, exact: true }).waitFor();
  assert.equal(await jobField(page, "State"), "pending", "the page of the job run now");
}

/**
 * A queue with more schedules than a page (50) pages through them with
 * next_cursor, as the jobs table does; a queue without any says how
 * schedules are made.
 */
async function pageThroughSchedules(page) {
  const q = "calendar";
  for (let day = 1; day <= 51; day++) {
    const name = `day-${String(day).padStart(2, "0")}`;
    await apiCall("PUT", schedulePath(q, name), { cron: `0 3 ${Math.min(day, 28)} * *`, job: { payload: { day } } });
  }
  await page.goto(`${base}/ui/#/queues/${q}/pending`);
  const panel = page.getByRole("region", { name: "Schedules", exact: true });
  const table = panel.getByRole("table", { name: `Schedules of queue ${q}, by name, page 1 (50 a page)`, exact: true });
  await table.getByRole("rowheader", { name: "day-50", exact: true }).waitFor();
  assert.equal(await table.getByRole("rowheader").count(), 50, "the first page lists 50 schedules");
  await panel.getByRole("button", { name: "Next page of schedules", exact: true }).click();
  const second = panel.getByRole("table", { name: /, page 2 \(50 a page\)$/ });
  await second.getByRole("rowheader", { name: "day-51", exact: true }).waitFor();
  assert.equal(await second.getByRole("rowheader").count(), 1, "the second page lists the last schedule");
  assert.equal(await panel.getByRole("button", { name: "Next page of schedules", exact: true }).isDisabled(), true);
  await panel.getByRole("button", { name: "First page of schedules", exact: true }).click();
  await table.getByRole("rowheader", { name: "day-01", exact: true }).waitFor();

  await page.goto(`${base}/ui/#/queues/${encodeURIComponent(queue)}/pending`);
  await page.getByRole("region", { name: "Schedules", exact: true })
    .getByText(`No schedules in this queue. They are made over the API, with PUT /queues/${queue}/schedules/{name}.`, { exact: true })
    .waitFor();
}

/**
 * A job's admission options and trace on its page: a job enqueued with a
 * dedupe key, an expiry, a timeout and a producer's traceparent shows each
 * (the expiry as the API's time, the trace by its trace id); an enqueue
 * with the same key answers the same job; a job without them shows none
 * of the four rows.
 */
async function showAdmission(page) {
  const q = "reports";
  const body = { payload: { report: "weekly" }, dedupe: { key: "weekly-report", mode: "until_done" }, expires_in_ms: 3600000, timeout_ms: 90000 };
  const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  const job = await apiCall("POST", `/queues/${q}/jobs`, body, { traceparent });
  assert.equal((await apiCall("POST", `/queues/${q}/jobs`, body)).id, job.id, "the same dedupe key answers the same job");
  const plain = await apiCall("POST", `/queues/${q}/jobs`, { payload: { report: "daily" } });

  await page.goto(`${base}/ui/#/queues/${q}/jobs/${encodeURIComponent(job.id)}`);
  await page.getByRole("heading", { name: `Job ${job.id}`, exact: true }).waitFor();
  assert.equal(await jobField(page, "Dedupe key"), "weekly-report", "the job's page shows its dedupe key");
  assert.equal(await jobField(page, "Timeout"), "1 min 30 s", "the job's page shows its timeout");
  assert.equal(await jobField(page, "Trace"), "4bf92f3577b34da6a3ce929d0e0e4736", "the job's page shows its producer's trace id");
  const expires = page.locator("dl.fields dt", { hasText: /^Expires$/ }).locator("xpath=following-sibling::dd[1]").locator("time");
  assert.equal(await expires.getAttribute("datetime"), job.expires_at, "the job's page shows the API's expiry");
  await accessible(page, "a job's page with admission options");

  await page.goto(`${base}/ui/#/queues/${q}/jobs/${encodeURIComponent(plain.id)}`);
  await page.getByRole("heading", { name: `Job ${plain.id}`, exact: true }).waitFor();
  await until("the plain job's fields", async () => (await jobField(page, "State")) === "pending");
  assert.equal(await page.locator("dl.fields dt", { hasText: /^(Dedupe key|Expires|Timeout|Trace)$/ }).count(), 0,
    "a job without admission options or a trace shows none of their rows");
}

/**
 * The push delivery panel: a queue whose target is down shows the target
 * (its url and limits in words) and the failed delivery, linked to its
 * job, with the API's error; a queue without a target says how one is set.
 */
async function seePushDelivery(page) {
  const q = "webhooks";
  const job = await apiCall("POST", `/queues/${q}/jobs`, { payload: { hook: 1 }, max_attempts: 1 });
  // Port 9 on loopback: nothing listens, so the delivery fails at once.
  await apiCall("PUT", `/queues/${q}/push`, { url: "http://127.0.0.1:9/hooks", concurrency: 3, timeout_ms: 2000 });
  await until("the failed delivery in the API", async () => (await apiCall("GET", `/queues/${q}/push`)).recent_errors.length === 1);
  const error = (await apiCall("GET", `/queues/${q}/push`)).recent_errors[0];
  await page.goto(`${base}/ui/#/queues/${q}/dead`);
  const panel = page.getByRole("region", { name: "Push delivery", exact: true });
  await panel.getByText("http://127.0.0.1:9/hooks", { exact: true }).waitFor();
  assert.match(await panel.innerText(), /3 at once, 2 s timeout, 32 s lease, not signed/, "the target's limits in words");
  const table = panel.getByRole("table", { name: /failed deliveries, newest first$/ });
  const row = await until("the failed delivery's row", () => rowOf(table, job.id));
  assert.equal(row.Attempt, "1");
  assert.equal(row.Status, "—", "no status came from a receiver that is down");
  assert.equal(row.Error, error.error, "the row shows the API's error");
  assert.match(row.Error, /^unreachable: /);
  await accessible(page, "the push delivery panel");
  await fitsAPhone(page, "the push delivery panel");
  await table.getByRole("link", { name: job.id, exact: true }).click();
  await page.getByRole("heading", { name: `Job ${job.id}`, exact: true }).waitFor();
  assert.equal(await jobField(page, "State"), "dead", "the job its one attempt failed is dead");

  await page.goto(`${base}/ui/#/queues/${encodeURIComponent(queue)}/pending`);
  await page.getByRole("region", { name: "Push delivery", exact: true })
    .getByText(`No push target: workers claim this queue's jobs. One is set over the API, with PUT /queues/${queue}/push.`, { exact: true })
    .waitFor();
}

/**
 * The search box and the pages of queues: with more queues than a page
 * holds, the table shows them 100 at a time by name, the page buttons turn
 * the pages, and the search box keeps the queues whose names start with
 * what it holds; a start no queue has, and one no name could have, say so.
 */
async function searchAndPageQueues(page) {
  const names = Array.from({ length: 105 }, (_, i) => `paged-${String(i).padStart(3, "0")}`);
  for (const name of names) {
    await apiCall("POST", `/queues/${name}/jobs`, { payload: { n: name } });
  }
  await page.goto(`${base}/ui/`);
  await until(`the row of queue ${queue}`, () => queueRow(page));
  const table = page.getByRole("table", { name: /Queues/ });
  const shown = async () => JSON.stringify((await table.getByRole("rowheader").allInnerTexts()).map((t) => t.trim()));
  const showing = (what, want) => until(what, async () => (await shown()) === JSON.stringify(want));
  const search = page.getByRole("searchbox", { name: "Show the queues whose names start with", exact: true });
  const next = page.getByRole("button", { name: "Next page of queues", exact: true });
  const previous = page.getByRole("button", { name: "Previous page of queues", exact: true });

  await search.fill("paged-");
  await showing("the first page of the paged- queues", names.slice(0, 100));
  assert.match(await table.locator("caption").innerText(), /queues whose names start with paged-, by name, page 1 \(100 a page\)$/);
  assert.equal(await previous.isDisabled(), true, "the first page has no page before it");
  await next.click();
  await showing("the second page of the paged- queues", names.slice(100));
  assert.equal(await next.isDisabled(), true, "the last page has no page after it");
  await accessible(page, "the queues page, searched and on its second page");
  await previous.click();
  await showing("the first page again", names.slice(0, 100));

  await search.fill("paged-10");
  await showing("the queues that start with paged-10", names.slice(100));
  await search.fill("nope");
  await page.getByText("No queue's name starts with nope.", { exact: true }).waitFor();
  await search.fill("a b");
  await page.getByText("A queue's name has only the letters A-Z and a-z, the digits, and . _ -", { exact: true }).waitFor();
  await search.fill("");
  await until(`the row of queue ${queue} with the search box empty`, () => queueRow(page));
}

/** The browser's console lines for the stream requests reconnects() refuses on purpose. */
const refusedStream = [/^console error: Failed to load resource: net::ERR_CONNECTION_REFUSED/];

async function main() {
  await withPage(base, sizes.laptop, async (page) => {
    await page.goto(`${base}/ui/`);

    // The queues table shows the queue with its counts.
    const row = await until(`the row of queue ${queue} in the queues table`, () => queueRow(page));
    assert.equal(row.Pending, String(pending), `pending count of ${queue}: ${JSON.stringify(row)}`);
    assert.equal(row.Dead, String(dead), `dead count of ${queue}: ${JSON.stringify(row)}`);
    assert.equal(row.Paused, "no", `paused column of ${queue}: ${JSON.stringify(row)}`);
    await until(`the sparkline of ${queue}`, async () => (await queueRow(page))?.["Completed, last hour"] === "0");
    assert.equal(await page.getByRole("img", { name: "0 completed in the last hour", exact: true }).count(), 1,
      `the sparkline of ${queue}, which completed nothing, says so`);

    // Pause: the row says paused, and so does the API.
    await page.getByRole("button", { name: `Pause queue ${queue}`, exact: true }).click();
    await until(`queue ${queue} shown as paused`, async () => (await queueRow(page))?.Paused === "paused");
    assert.equal((await apiQueue()).paused, true, "the API says the queue is paused after Pause");

    // Resume: back to not paused, in the page and in the API.
    await page.getByRole("button", { name: `Resume queue ${queue}`, exact: true }).click();
    await until(`queue ${queue} shown as not paused`, async () => (await queueRow(page))?.Paused === "no");
    assert.equal((await apiQueue()).paused, false, "the API says the queue is not paused after Resume");

    // Screenshots at a laptop's and a phone's size, light and dark; at
    // each size the page fits its width and the dead count is on screen.
    for (const [size, viewport] of Object.entries(sizes)) {
      await page.setViewportSize(viewport);
      await fitsTheScreen(page, size, viewport);
      for (const colorScheme of schemes) {
        await page.emulateMedia({ colorScheme });
        const path = join(shots, `dashboard-${size}-${colorScheme}.png`);
        await page.screenshot({ path, fullPage: true, animations: "disabled" });
        console.log(`screenshot ${path}`);
      }
    }

    await page.setViewportSize(sizes.laptop);
    await page.emulateMedia({ colorScheme: "light" });
    await retryADeadJob(page);
    await seeChangesLive(page);
    await cancelAnActiveJob(page);
    await tableFollowsEvents(page);
    await controlTheFlow(page);
    await steerSchedules(page);
    await pageThroughSchedules(page);
    await showAdmission(page);
    await seePushDelivery(page);
    await seeBatches(page, { base, call: apiCall, rowOf, fitsAPhone });
    await seeOperatorActions(page, { base, call: apiCall, rowOf, fitsAPhone });
    await seeCharts(page, { base, call: apiCall, shots, sizes });
    await searchAndPageQueues(page);
    await reconnects(page);
  }, [...refusedStream, ...batchProblems, ...operatorProblems]);
  console.log(`dashboard ok: queue ${queue} with ${pending} pending and ${dead} dead, paused and resumed; ` +
    `dead job ${deadID} retried, new jobs seen live, active job ${activeID} cancelled; schedules listed, paused, resumed, run and paged; a job's admission options shown; a push target and its failed delivery shown; ` +
    "a waiting job counted, listed and linked to its dependencies and batch, the batch followed to done and its callback, a dependant cancelled by its dead dependency; " +
    "a delayed job edited and run now, an active job's log and progress followed live, dead jobs retried in bulk, finished ones cleaned up, " +
    "delayed ones promoted, batches listed, push headers set and never shown, job defaults and retention saved and read back; " +
    "the charts drawn, grown live and switched to 24 hours; 105 queues searched by name and paged");
}

await main();
