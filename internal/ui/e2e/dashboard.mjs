// dashboard.mjs: the dashboard's browser test, in Debian's headless Chromium
// driven by playwright-core. The Go test in this folder (e2e_test.go) starts
// the service on a real Redis, enqueues jobs and runs this script with:
//
//   EMQ_URL          the service's base URL, such as http://127.0.0.1:41234
//   EMQ_QUEUE        the queue it filled
//   EMQ_PENDING      how many of its jobs are pending
//   EMQ_DEAD         how many are dead
//   EMQ_SCREENSHOTS  the folder to write the screenshots to
//   CHROMIUM         the browser (default /usr/bin/chromium)
//
// It selects elements by role, label and text only, as a person (or a
// screen reader) finds them. It exits non-zero with a message on the first
// check that fails.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const base = need("EMQ_URL");
const queue = need("EMQ_QUEUE");
const pending = Number(need("EMQ_PENDING"));
const dead = Number(need("EMQ_DEAD"));
const shots = need("EMQ_SCREENSHOTS");
const origin = new URL(base).origin;

/** The sizes and colour schemes the screenshots are taken at. */
const sizes = {
  laptop: { width: 1280, height: 800 },
  phone: { width: 390, height: 844 },
};
const schemes = ["light", "dark"];

/** How long a wait for the page may take before the check fails. */
const waitMs = 10_000;

function need(name) {
  const value = process.env[name];
  if (!value) {
    throw new Error(`${name} is not set: run this script through go test ./internal/ui/e2e`);
  }
  return value;
}

/** Polls check() until it returns a truthy value, or fails with what. */
async function until(what, check) {
  const deadline = Date.now() + waitMs;
  let last;
  for (;;) {
    last = await check();
    if (last) {
      return last;
    }
    if (Date.now() > deadline) {
      throw new Error(`waited ${waitMs} ms for ${what}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * Reads the queue's row of the queues table as {column header: text}, by
 * the table's column headers; null while the row is not there.
 */
async function queueRow(page) {
  const table = page.getByRole("table", { name: /Queues/ });
  const headers = await table.getByRole("columnheader").allInnerTexts();
  const row = table.getByRole("row").filter({ has: page.getByRole("rowheader", { name: queue, exact: true }) });
  if ((await row.count()) !== 1) {
    return null;
  }
  const texts = await row.getByRole("cell").allInnerTexts();
  // The row header fills the first column ("Queue"); the cells the rest.
  const out = {};
  headers.slice(1).forEach((header, i) => (out[header.trim()] = (texts[i] || "").trim()));
  return out;
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

/** Asks the API itself for the queue. */
async function apiQueue() {
  const resp = await fetch(`${base}/queues/${encodeURIComponent(queue)}`);
  assert.equal(resp.status, 200, `GET /queues/${queue}`);
  return resp.json();
}

/**
 * Takes the page the browser opened with, and records its console errors,
 * failed loads and requests to other origins in problems.
 */
function watchPage(context, problems) {
  const page = context.pages()[0];
  page.on("console", (msg) => {
    // Any console error fails the test (the page names its own icon, so
    // the browser asks for no /favicon.ico).
    if (msg.type() === "error") {
      problems.push(`console error: ${msg.text()} (at ${msg.location().url || "?"})`);
    }
  });
  page.on("pageerror", (err) => problems.push(`page error: ${err.message}`));
  page.on("response", (resp) => {
    if (resp.status() >= 400) {
      problems.push(`${resp.status()} for ${resp.request().method()} ${resp.url()}`);
    }
  });
  page.on("request", (req) => {
    const url = req.url();
    if (!url.startsWith(origin + "/")) {
      problems.push(`request to another origin: ${req.method()} ${url}`);
    }
  });
  return page;
}

async function main() {
  const profile = mkdtempSync(join(tmpdir(), "emq-e2e-chromium-"));
  // A persistent context on a fresh, empty profile: Chromium gets its own
  // --user-data-dir, and the flags keep it off the network (this machine's
  // network is closed, and a test must not phone home).
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
    viewport: sizes.laptop,
  });
  const problems = [];
  try {
    const page = watchPage(context, problems);
    await page.goto(`${base}/ui/`);

    // The queues table shows the queue with its counts.
    const row = await until(`the row of queue ${queue} in the queues table`, () => queueRow(page));
    assert.equal(row.Pending, String(pending), `pending count of ${queue}: ${JSON.stringify(row)}`);
    assert.equal(row.Dead, String(dead), `dead count of ${queue}: ${JSON.stringify(row)}`);
    assert.equal(row.Paused, "no", `paused column of ${queue}: ${JSON.stringify(row)}`);

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

    assert.deepEqual(problems, [], "console errors or requests to another origin");
  } catch (err) {
    // Say what the page showed and what went wrong in it, to debug from CI's log.
    for (const page of context.pages()) {
      console.error(`--- the page ${page.url()} showed:\n${await page.locator("body").innerText().catch((e) => e.message)}`);
    }
    console.error(`--- problems seen in the page:\n${problems.join("\n") || "none"}`);
    throw err;
  } finally {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
  }
  console.log(`dashboard ok: queue ${queue} with ${pending} pending and ${dead} dead, paused and resumed`);
}

await main();
