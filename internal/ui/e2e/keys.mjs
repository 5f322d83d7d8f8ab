// keys.mjs: the dashboard's browser test behind API keys. The Go test in
// this folder (e2e_test.go, TestDashboardWithKeys) starts the service with
// EMQ_API_KEYS, makes one dead job and runs this script with:
//
//   EMQ_URL         the service's base URL
//   EMQ_QUEUE       the queue with the dead job
//   EMQ_DEAD_ID     the dead job's id
//   EMQ_SCHEDULE    the name of a schedule of the queue
//   EMQ_READER_KEY  a reader key
//   EMQ_ADMIN_KEY   an admin key
//
// It checks that the page asks for a key, says which key it acts as, shows
// only what the key's role may do (a reader sees the schedule, with no
// button to pause, resume or run it, and a delayed job it makes with the
// admin key with no Edit, no "Promote all", no push target or settings
// form; an admin has them), keeps the key in this tab only, and forgets it on
// request.

import assert from "node:assert/strict";

import { accessible, need, until, withPage } from "./browser.mjs";

const base = need("EMQ_URL");
const queue = need("EMQ_QUEUE");
const deadID = need("EMQ_DEAD_ID");
const schedule = need("EMQ_SCHEDULE");
const readerKey = need("EMQ_READER_KEY");
const adminKey = need("EMQ_ADMIN_KEY");

/** A delayed job the script makes with the admin key: a reader may not edit or promote it. */
const delayedID = "reminder-1";

/** Calls the API with the admin key, as a producer would, and returns its 200 or 201 answer. */
async function adminCall(method, path, body) {
  const resp = await fetch(base + path, {
    method,
    headers: { Authorization: `Bearer ${adminKey}`, "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  const answer = await resp.json();
  assert.ok(resp.status === 200 || resp.status === 201, `${method} ${path}: ${resp.status} ${JSON.stringify(answer)}`);
  return answer;
}

/**
 * What a reader is not offered on the queue's page and a delayed job's
 * (issue 38's operator actions): no clean-up form, no push target form,
 * no settings form, no "Promote all", no Edit; then back to the dead
 * job's page.
 */
async function readerActsOnNothing(page) {
  const q = encodeURIComponent(queue);
  await page.goto(`${base}/ui/#/queues/${q}/delayed`);
  await page.getByRole("heading", { name: `Queue ${queue}`, exact: true }).waitFor();
  await page.getByRole("table", { name: /^Delayed jobs of queue/ }).getByRole("link", { name: delayedID, exact: true }).waitFor();
  assert.equal(await page.getByRole("button", { name: /^Promote all/ }).count(), 0, "a reader gets no Promote all");
  assert.equal(await page.getByRole("group", { name: "Delete all finished jobs older than…" }).count(), 0,
    "a reader gets no clean-up form");
  const push = page.getByRole("region", { name: "Push delivery", exact: true });
  await push.getByText(/^No push target:/).waitFor();
  assert.equal(await push.getByRole("button").count() + await push.getByRole("textbox").count(), 0,
    "a reader gets no push target form");
  const flow = page.getByRole("region", { name: "Flow control", exact: true });
  await flow.getByText("Changing the settings needs an admin key.", { exact: true }).waitFor();
  assert.equal(await flow.getByRole("button", { name: "Save settings" }).count(), 0, "a reader gets no settings form");
  await page.getByRole("link", { name: delayedID, exact: true }).click();
  await page.getByRole("heading", { name: `Job ${delayedID}`, exact: true }).waitFor();
  await until("the delayed job's state", async () => (await page.locator(".view:not([hidden]) dl.fields dd").first().innerText()).trim() === "delayed");
  assert.equal(await page.getByRole("button", { name: `Edit job ${delayedID}`, exact: true }).count(), 0, "a reader cannot edit a job");
  await page.goto(`${base}/ui/#/queues/${q}/jobs/${encodeURIComponent(deadID)}`);
  await page.getByRole("heading", { name: `Job ${deadID}`, exact: true }).waitFor();
}

/**
 * What an admin is offered where a reader was, in the same tab: Promote
 * all, the push target and settings forms (drawn again for the new
 * role), Edit.
 */
async function adminMayAct(page) {
  const q = encodeURIComponent(queue);
  await page.goto(`${base}/ui/#/queues/${q}/delayed`);
  await page.getByRole("button", { name: `Promote all 1 delayed job of queue ${queue}`, exact: true }).waitFor();
  await page.getByRole("region", { name: "Push delivery", exact: true }).getByRole("button", { name: "Save push target", exact: true }).waitFor();
  await page.getByRole("region", { name: "Flow control", exact: true }).getByRole("button", { name: "Save settings", exact: true }).waitFor();
  await page.goto(`${base}/ui/#/queues/${q}/jobs/${delayedID}`);
  await page.getByRole("button", { name: `Edit job ${delayedID}`, exact: true }).waitFor();
}

/** Until a key is given, the API's answers are 401s, which the browser logs. */
const expected = [/^401 for GET /, /^console error: Failed to load resource: .* 401 /];

/** Types key into the key form and sends it. */
async function useKey(page, key) {
  const form = page.getByRole("heading", { name: "API key needed", exact: true });
  await form.waitFor();
  await page.getByLabel("API key", { exact: true }).fill(key);
  await page.getByRole("button", { name: "Use key", exact: true }).click();
}

/** What the page keeps of the key: in sessionStorage, localStorage and cookies. */
function stored(page) {
  return page.evaluate(() => ({
    session: Object.values(sessionStorage),
    local: Object.keys(localStorage).length,
    cookies: document.cookie,
  }));
}

async function main() {
  await adminCall("POST", `/queues/${encodeURIComponent(queue)}/jobs`, { id: delayedID, payload: {}, delay_ms: 3600000 });
  await withPage(base, { width: 1280, height: 800 }, async (page) => {
    await page.goto(`${base}/ui/`);

    // No key: the page asks for one, and says it is not live.
    await page.getByRole("heading", { name: "API key needed", exact: true }).waitFor();
    await until("the feed to say it needs a key", async () => (await page.locator("#live").innerText()) === "Not live: needs a key");

    // A wrong key is refused, plainly, and the form stays.
    await useKey(page, "not-a-key");
    await page.getByRole("alert").filter({ hasText: "The service refused this API key." }).waitFor();

    // A reader key: the page reads, and offers no action.
    await useKey(page, readerKey);
    await page.getByText(/^Signed in with a reader key \(reader-[0-9a-f]+\)$/).waitFor();
    await page.getByRole("rowheader", { name: queue, exact: true }).waitFor();
    await until("the feed to be live with the reader key", async () => (await page.locator("#live").innerText()) === "Live");
    assert.equal(await page.getByRole("button", { name: `Pause queue ${queue}`, exact: true }).count(), 0, "a reader sees no Pause");
    assert.equal(await page.getByRole("columnheader", { name: "Actions" }).count(), 0, "a reader sees no Actions column");
    assert.deepEqual(await stored(page), { session: [readerKey], local: 0, cookies: "" }, "the key is kept in sessionStorage only");

    await page.getByRole("link", { name: `${queue} (1): 1 dead job`, exact: true }).click();
    await page.getByText("Retrying needs an admin key.", { exact: false }).waitFor();
    assert.equal(await page.getByRole("button", { name: /^Retry/ }).count(), 0, "a reader gets no retry button");
    const schedules = page.getByRole("region", { name: "Schedules", exact: true });
    await schedules.getByRole("rowheader", { name: schedule, exact: true }).waitFor();
    await schedules.getByText("Pausing, resuming or running a schedule needs an admin key.", { exact: true }).waitFor();
    assert.equal(await schedules.getByRole("button").count(), 0, "a reader gets no button to pause, resume or run a schedule");
    assert.equal(await schedules.getByRole("columnheader", { name: "Actions" }).count(), 0, "a reader's schedules have no Actions column");
    await accessible(page, "a queue's page for a reader");
    await page.getByRole("link", { name: deadID, exact: true }).first().click();
    await page.getByRole("heading", { name: `Job ${deadID}`, exact: true }).waitFor();
    assert.equal(await page.getByRole("button", { name: `Retry job ${deadID}`, exact: true }).count(), 0, "a reader cannot retry a job");
    await readerActsOnNothing(page);

    // Forget key: the key is gone, and the page asks again.
    await page.getByRole("button", { name: "Forget key", exact: true }).click();
    await page.getByRole("heading", { name: "API key needed", exact: true }).waitFor();
    assert.deepEqual((await stored(page)).session, [], "Forget key empties sessionStorage");

    // An admin key: the job's page offers Retry, and it works.
    await useKey(page, adminKey);
    await page.getByText(/^Signed in with an admin key \(admin-[0-9a-f]+\)$/).waitFor();
    await page.getByRole("button", { name: `Retry job ${deadID}`, exact: true }).click();
    await until("the retried job shown as pending", async () =>
      (await page.locator("dl.fields dd").first().innerText()).trim() === "pending");
    await page.getByRole("link", { name: `Queue ${queue}`, exact: true }).click();
    for (const name of [`Pause schedule ${schedule}`, `Run now: schedule ${schedule}`]) {
      await page.getByRole("button", { name, exact: true }).waitFor();
    }
    await adminMayAct(page);

    // The key belongs to this tab: another tab asks for one again.
    const other = await page.context().newPage();
    await other.goto(`${base}/ui/`);
    await other.getByRole("heading", { name: "API key needed", exact: true }).waitFor();
    assert.deepEqual((await stored(other)).session, [], "a new tab starts with no key");
    await other.close();
  }, expected);
  console.log("keys ok: asked for a key, refused a wrong one, reader read only, forgot the key, admin retried the job and may steer the schedule, edit and promote jobs and set a push target and settings, a new tab asked again");
}

await main();
