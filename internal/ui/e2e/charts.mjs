// charts.mjs: dashboard.mjs's checks of the charts (uPlot), on a queue of
// their own, "charts", whose jobs the script enqueues and works as their
// worker, so that it knows every count the charts must show. A chart's
// element holds its uPlot instance as el.uplot (charts.js): the checks
// read its data there, and its canvas's pixels to see that a line was
// drawn above the zero line.

import assert from "node:assert/strict";
import { join } from "node:path";

import { accessible, schemes, until } from "./browser.mjs";

const q = "charts";

/** uPlot's columns of the chart named name ("throughput", "failures", "latency"), with its labels and size; null before it is drawn. */
function chartData(page, name) {
  return page.locator(`[data-chart="${name}"]`).evaluate((el) => {
    const u = el.uplot;
    return u ? { data: u.data.map((col) => Array.from(col)), labels: u.series.map((s) => s.label), width: u.width } : null;
  });
}

/** Each series' sum in a chart's data, by label: {Enqueued: 7, Completed: 3}. */
function sums(chart) {
  const out = {};
  chart.labels.forEach((label, i) => {
    if (i > 0) {
      out[label] = chart.data[i].reduce((sum, v) => sum + (v || 0), 0);
    }
  });
  return out;
}

/**
 * How many pixels of the canvas of chart name are in series i's colour
 * above its zero line: more than a few, and the series drew a value above
 * 0 (a blank chart, or one with only a flat line at 0, has none).
 */
function pixelsAboveZero(page, name, i) {
  return page.locator(`[data-chart="${name}"]`).evaluate((el, i) => {
    const u = el.uplot;
    const probe = document.createElement("canvas").getContext("2d");
    probe.fillStyle = u.series[i].stroke(u, i);
    const rgb = [1, 3, 5].map((k) => parseInt(probe.fillStyle.slice(k, k + 2), 16));
    const { width } = u.ctx.canvas;
    const zero = Math.floor(u.valToPos(0, "y", true)) - 3;
    const pixels = u.ctx.getImageData(0, 0, width, zero).data;
    let found = 0;
    for (let p = 0; p < pixels.length; p += 4) {
      if (pixels[p + 3] > 200 && rgb.every((c, k) => Math.abs(pixels[p + k] - c) < 24)) {
        found++;
      }
    }
    return found;
  }, i);
}

/** Waits until the chart name's sums are want (some of its labels), and returns its data. */
async function chartSums(page, name, want) {
  let last = null;
  try {
    return await until(`the ${name} chart to sum ${JSON.stringify(want)}`, async () => {
      last = await chartData(page, name);
      return last && Object.entries(want).every(([label, n]) => sums(last)[label] === n) ? last : null;
    });
  } catch (err) {
    err.message += `; it holds ${last ? JSON.stringify(sums(last)) : "no plot"}`;
    throw err;
  }
}

/**
 * Fills queue "charts": 4 jobs and one with a single attempt enqueued and
 * claimed; 3 completed, 1 failed and retried (in an hour, so that it stays
 * delayed), the single-attempt one failed and so dead; one more enqueued
 * and cancelled, and one left waiting. Returns the counts.
 */
async function fill(call) {
  const path = `/queues/${q}`;
  const jobPath = (id) => `${path}/jobs/${encodeURIComponent(id)}`;
  for (let i = 0; i < 4; i++) {
    await call("POST", `${path}/jobs`, { payload: { n: i } });
  }
  const once = await call("POST", `${path}/jobs`, { payload: { n: "once" }, max_attempts: 1 });
  const { jobs } = await call("POST", `${path}/claim`, { lease_ms: 60_000, count: 5 });
  assert.equal(jobs.length, 5, "the script claims the five jobs it enqueued");
  const [dying] = jobs.filter((j) => j.id === once.id);
  const others = jobs.filter((j) => j.id !== once.id);
  for (const job of others.slice(0, 3)) {
    await call("POST", `${jobPath(job.id)}/complete`, { token: job.token, result: { ok: true } });
  }
  assert.equal((await call("POST", `${jobPath(others[3].id)}/fail`, { token: others[3].token, error: "smtp timeout", retry_in_ms: 3_600_000 })).state,
    "delayed", "a failed job with attempts left is retried");
  assert.equal((await call("POST", `${jobPath(dying.id)}/fail`, { token: dying.token, error: "mailbox full" })).state, "dead");
  const cancelled = await call("POST", `${path}/jobs`, { payload: { n: "cancelled" } });
  await call("POST", `${jobPath(cancelled.id)}/cancel`, { reason: "not needed" });
  await call("POST", `${path}/jobs`, { payload: { n: "waiting" } });
  return { Enqueued: 7, Completed: 3, Retried: 1, Dead: 1, Cancelled: 1 };
}

/** Enqueues n jobs and claims and completes n, as a worker would (the one waiting goes first). */
async function workMore(call, n) {
  for (let i = 0; i < n; i++) {
    await call("POST", `/queues/${q}/jobs`, { payload: { more: i } });
  }
  const { jobs } = await call("POST", `/queues/${q}/claim`, { lease_ms: 60_000, count: n });
  for (const job of jobs) {
    await call("POST", `/queues/${q}/jobs/${encodeURIComponent(job.id)}/complete`, { token: job.token });
  }
}

/**
 * The charts of a queue's page and the queues table's sparkline: the
 * charts hold the counts the script caused and drew them; they grow live
 * when more jobs are worked, without a reload; the 24 hours switch shows
 * 10-minute buckets over a day and back; the latency is said in words;
 * the table under the charts has the same numbers; the page passes axe
 * with the table open, in light and dark; on a phone the charts shrink to
 * the screen, which does not scroll sideways. Screenshots of the panel at
 * both sizes in both schemes. opts: {base, call (dashboard.mjs's apiCall),
 * shots, sizes}.
 */
export async function seeCharts(page, { base, call, shots, sizes }) {
  const counts = await fill(call);
  await page.goto(`${base}/ui/#/queues/${q}/pending`);
  const panel = page.getByRole("region", { name: "Activity", exact: true });
  await panel.waitFor();

  const throughput = await chartSums(page, "throughput", { Enqueued: counts.Enqueued, Completed: counts.Completed });
  assert.equal(throughput.data[0].length, 60, "the last hour is 60 points, one a minute");
  await chartSums(page, "failures", { Retried: counts.Retried, Dead: counts.Dead, Cancelled: counts.Cancelled });
  const latency = await chartData(page, "latency");
  assert.ok(latency.data[1].some((v) => v !== null), "the latency chart has a mean wait");
  assert.ok(latency.data[2].some((v) => v !== null), "the latency chart has a mean run");
  assert.ok(await pixelsAboveZero(page, "throughput", 2) > 5, "the throughput chart drew its Completed line above 0");
  assert.ok(await pixelsAboveZero(page, "failures", 2) > 5, "the failures chart drew its Dead line above 0");
  const legend = await panel.locator('[data-chart="throughput"] .u-legend').innerText();
  assert.match(legend, /Enqueued[\s\S]*Completed/, "the throughput chart's legend names its lines");
  assert.match(await panel.getByText(/^Oldest pending job: /).innerText(), /^Oldest pending job: [\d.,]+ (ms|s)$/,
    "the latency in words");
  const label = await page.locator('[data-chart="throughput"]').getAttribute("aria-label");
  assert.match(label, /^Jobs enqueued and completed per minute over the last hour: 7 enqueued, 3 completed; /, "the chart's text alternative");
  assert.equal(await page.getByRole("img", { name: /^Failures per minute over the last hour: 1 failed and retried, 1 dead, 1 cancelled\.$/ }).count(), 1);

  // The numbers as a table, for a screen reader or a careful reader.
  await panel.getByText("The numbers, as a table", { exact: true }).click();
  const table = panel.getByRole("table", { name: /^Jobs of queue charts per minute over the last hour, newest first/ });
  const completedColumn = (await table.getByRole("columnheader").allInnerTexts()).indexOf("Completed") - 1; // the row header is first
  const column = await table.locator("tbody tr").evaluateAll((rows, i) => rows.map((r) => Number(r.querySelectorAll("td")[i].textContent)), completedColumn);
  assert.equal(column.reduce((a, b) => a + b, 0), counts.Completed, "the table's Completed column adds up");
  await accessible(page, "the activity charts, with their table open");

  // Live: more jobs worked, and the charts grow by themselves.
  await workMore(call, 2);
  await chartSums(page, "throughput", { Enqueued: counts.Enqueued + 2, Completed: counts.Completed + 2 });
  console.log("the charts grew live: 2 more jobs enqueued and completed, no reload");

  // 24 hours: 10-minute buckets over a day, the same sums; and back.
  await panel.getByRole("button", { name: "Last 24 hours", exact: true }).click();
  assert.equal(await panel.getByRole("button", { name: "Last 24 hours", exact: true }).getAttribute("aria-pressed"), "true");
  const day = await until("the 24-hour chart", async () => {
    const c = await chartData(page, "throughput");
    return c && c.data[0].length >= 144 ? c : null;
  });
  const at = day.data[0];
  assert.ok(at.length <= 145 && at[at.length - 1] - at[0] >= 23 * 3600 + 50 * 60, `24 hours in 10-minute buckets: ${at.length} points`);
  assert.ok(at.every((t, i) => i === 0 || t - at[i - 1] === 600), "one point per 10 minutes");
  assert.deepEqual(sums(day), { Enqueued: counts.Enqueued + 2, Completed: counts.Completed + 2 }, "the day's sums");
  await panel.getByText(/^Per 10 minutes over the last 24 hours/).waitFor();
  await panel.getByRole("button", { name: "Last hour", exact: true }).click();
  await until("the hour chart again", async () => (await chartData(page, "throughput"))?.data[0].length === 60);

  await pictures(page, panel, shots, sizes);
  await sparkline(page, base, counts.Completed + 2);
}

/**
 * Screenshots of the panel at a laptop's and a phone's size, light and
 * dark; in dark mode the lines take the dark colours, and on a phone each
 * chart fits its box and the page does not scroll sideways.
 */
async function pictures(page, panel, shots, sizes) {
  for (const [size, viewport] of Object.entries(sizes)) {
    await page.setViewportSize(viewport);
    for (const colorScheme of schemes) {
      await page.emulateMedia({ colorScheme });
      await until(`the charts in ${colorScheme} colours`, () => page.locator('[data-chart="throughput"]').evaluate((el) => {
        const u = el.uplot;
        const want = getComputedStyle(document.documentElement).getPropertyValue("--chart-completed").trim();
        return u && u.series[2].stroke(u, 2) === want;
      }));
      await until(`the charts to fit a ${size}`, () => page.locator("[data-chart]").evaluateAll((els) =>
        els.every((el) => el.uplot && el.uplot.width <= el.clientWidth && el.clientWidth > 0)));
      assert.ok(await pixelsAboveZero(page, "throughput", 2) > 5, `${size}, ${colorScheme}: the Completed line drawn`);
      const scrollWidth = await page.evaluate(() => document.documentElement.scrollWidth);
      assert.ok(scrollWidth <= viewport.width, `the charts scroll sideways on a ${size} (${scrollWidth} px wide)`);
      const path = join(shots, `charts-${size}-${colorScheme}.png`);
      await panel.screenshot({ path, animations: "disabled" });
      console.log(`screenshot ${path}`);
    }
  }
  await page.setViewportSize(sizes.laptop);
  await page.emulateMedia({ colorScheme: "light" });
}

/** The queues table's sparkline of queue charts: its total, its label, and a line drawn. */
async function sparkline(page, base, completed) {
  await page.goto(`${base}/ui/`);
  const spark = page.getByRole("img", { name: `${completed} completed in the last hour`, exact: true });
  await spark.waitFor({ timeout: 15_000 });
  assert.equal((await spark.innerText()).trim(), String(completed), "the sparkline's total, beside it");
  const drawn = await spark.locator(".spark-line").evaluate((el) => el.uplot && el.uplot.data[1].reduce((a, b) => a + b, 0));
  assert.equal(drawn, completed, "the sparkline's data sums the hour's completed jobs");
}
