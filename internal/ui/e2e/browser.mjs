// browser.mjs: what the dashboard's browser tests (dashboard.mjs, keys.mjs)
// share: reading their settings, waiting for the page, running the page in
// Debian's headless Chromium with every console error, failed request and
// request to another origin recorded, and checking a page with axe-core.

import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

/**
 * How long a wait for the page may take before the check fails: a bound
 * for a hung page, not a measure of speed. It is Playwright's own 30 s,
 * since on two loaded cores (the whole suite beside the browser) a page's
 * round trip with the service, or the reaper's next visit, has taken
 * more than 10 s.
 */
export const waitMs = 30_000;

/** The colour schemes the pages are checked and shown in. */
export const schemes = ["light", "dark"];

/** axe-core, the accessibility checker, run inside the page. */
const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/** The axe-core rule sets checked: WCAG 2.1 A and AA, and axe's best practices. */
const axeTags = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"];

/** The environment variable name, which must be set. */
export function need(name) {
  const value = process.env[name];
  if (!value) {
    throw new Error(`${name} is not set: run this script through go test ./internal/ui/e2e`);
  }
  return value;
}

/** Polls check() until it returns a truthy value, or fails with what. */
export async function until(what, check) {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const last = await check();
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
 * Runs axe-core on the page in the light and the dark colour scheme and
 * fails on any violation, naming the rule and the elements: contrast,
 * names of buttons and links, labels, landmarks, headings.
 */
export async function accessible(page, what) {
  for (const colorScheme of schemes) {
    await page.emulateMedia({ colorScheme });
    await page.evaluate(axeSource); // through DevTools, which the page's CSP does not govern
    const result = await page.evaluate((tags) => globalThis.axe.run(document, { runOnly: { type: "tag", values: tags } }), axeTags);
    const found = result.violations.map((v) =>
      `${v.id} (${v.impact}): ${v.help}\n    ${v.nodes.slice(0, 5).map((n) => n.target.join(" ")).join("\n    ")}`);
    assert.deepEqual(found, [], `${what} in ${colorScheme} mode has accessibility violations`);
  }
  await page.emulateMedia({ colorScheme: "light" });
}

/**
 * Presses Tab until target has the focus, as a keyboard user would, and
 * returns how many presses it took; fails after max.
 */
export async function tabTo(page, target, what, max = 60) {
  const element = await target.elementHandle();
  for (let presses = 1; presses <= max; presses++) {
    await page.keyboard.press("Tab");
    if (await element.evaluate((el) => el === document.activeElement)) {
      return presses;
    }
  }
  throw new Error(`${what} was not reached in ${max} presses of Tab`);
}

/**
 * Runs test(page) in a fresh headless Chromium at viewport, and fails if
 * the page logged a console error, had a request fail (400 or more) or
 * asked another origin than base's, unless expected (a list of RegExps)
 * matches the problem. On a failure it prints what the page showed.
 */
export async function withPage(base, viewport, test, expected = []) {
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
    viewport,
  });
  const problems = [];
  try {
    const page = watchPage(context, new URL(base).origin, problems);
    await test(page);
    const unexpected = problems.filter((p) => !expected.some((re) => re.test(p)));
    assert.deepEqual(unexpected, [], "console errors, failed requests or requests to another origin");
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
}

/**
 * Takes the page the browser opened with, and records its console errors,
 * failed loads and requests to other origins than origin in problems.
 */
function watchPage(context, origin, problems) {
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
