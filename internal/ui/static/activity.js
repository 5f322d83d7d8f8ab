// activity.js: the "Activity" panel of a queue's page: the queue's
// latency now in words ("Oldest pending job: 1.3 s") and three charts of
// its history (GET /queues/{queue}/stats): throughput (enqueued and
// completed), failures (retried, dead, cancelled) and latency (mean wait
// and run), per minute over the last hour or per 10 minutes over the last
// 24 hours, with a switch between the two. Each chart has a one-sentence
// text alternative, and a table under them holds the numbers. The panel
// reads the history again when the event feed says the queue changed, at
// most every 5 seconds, and every 30 seconds without events, so that the
// time axis and the latency move on.

import { Chart } from "./charts.js";
import { h, tabStopWhenScrolling, when } from "./dom.js";
import { throttle } from "./live.js";
import { busyBuckets, columns, counts, describe, latencyText, msText, ranges, readStats, tableCaption } from "./stats.js";

/** The least time between two reads of the history after events. */
export const chartGapMs = 5000;

/** How often the history is read when no event comes. */
const idleReadMs = 30_000;

/** The charts: their name, heading and series (colours in style.css). */
const charts = [
  { name: "throughput", heading: "Throughput", unit: "count", series: [
    { key: "enqueued", label: "Enqueued", colour: "--chart-enqueued", dash: [6, 4] },
    { key: "completed", label: "Completed", colour: "--chart-completed" },
  ] },
  { name: "failures", heading: "Failures", unit: "count", series: [
    { key: "failed", label: "Retried", colour: "--chart-retried", dash: [6, 4] },
    { key: "dead", label: "Dead", colour: "--chart-dead" },
    { key: "cancelled", label: "Cancelled", colour: "--chart-cancelled", dash: [2, 3] },
  ] },
  { name: "latency", heading: "Latency", unit: "ms", series: [
    { key: "wait", label: "Mean wait", colour: "--chart-wait" },
    { key: "run", label: "Mean run", colour: "--chart-run", dash: [6, 4] },
  ] },
];

/** The table's columns after the time: each count, then the two means. */
const tableColumns = [
  ["enqueued", "Enqueued"], ["completed", "Completed"], ["failed", "Retried"], ["dead", "Dead"],
  ["cancelled", "Cancelled"], ["wait", "Mean wait"], ["run", "Mean run"],
];

/** The panel: show(queue) fills it and keeps it current; stop() ends that. */
export class ActivityPanel {
  constructor(ctx) {
    this.ctx = ctx;
    this.range = "hour";
    this.queue = "";
    this.active = false;
    this.reads = 0; // numbers each read, so that only the latest is drawn
    this.timer = 0;
    this.loadSoon = throttle(() => this.load(), chartGapMs);
    this.build();
  }

  build() {
    this.heading = h("h3", { id: "activity-heading" }, "Activity");
    this.latency = h("p", { class: "latency" });
    this.note = h("p", { class: "status" });
    this.buttons = Object.entries(ranges).map(([range, r]) => {
      const b = h("button", { type: "button", "aria-pressed": String(range === this.range) }, r.button);
      b.addEventListener("click", () => this.choose(range));
      return b;
    });
    this.charts = charts.map((c) => {
      const chart = new Chart({ series: c.series, unit: c.unit, height: 180 });
      chart.el.role = "img";
      chart.el.dataset.chart = c.name;
      return chart;
    });
    this.figures = charts.map((c, i) => h("figure", { class: "chart" }, h("figcaption", {}, c.heading), this.charts[i].el));
    this.caption = h("caption");
    this.tbody = h("tbody");
    this.empty = h("p", { class: "status" });
    const table = h("table", { class: "activity-table" }, this.caption,
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "From"),
        ...tableColumns.map(([, label]) => h("th", { scope: "col", class: "num" }, label)))),
      this.tbody);
    this.region = h("div", { class: "table-scroll", role: "region", "aria-label": "Activity, as numbers" }, table);
    tabStopWhenScrolling(this.region);
    this.panel = h("section", { class: "activity", "aria-labelledby": "activity-heading" },
      this.heading, this.latency,
      h("div", { class: "range", role: "group", "aria-label": "Time range of the charts" }, this.buttons),
      this.note,
      h("div", { class: "charts" }, this.figures),
      h("details", {}, h("summary", {}, "The numbers, as a table"), this.empty, this.region));
  }

  /** Shows queue's activity, and keeps it current until stop(). */
  show(queue) {
    if (queue !== this.queue) {
      this.queue = queue;
      this.latency.textContent = "";
      for (const chart of this.charts) {
        chart.set(null);
      }
    }
    this.active = true;
    this.load();
  }

  stop() {
    this.active = false;
    clearTimeout(this.timer);
  }

  /** Takes an event of the queue: the history is read again soon. */
  heard() {
    if (this.active) {
      this.loadSoon();
    }
  }

  choose(range) {
    this.range = range;
    for (const b of this.buttons) {
      b.setAttribute("aria-pressed", String(b.textContent === ranges[range].button));
    }
    this.load();
  }

  async load() {
    clearTimeout(this.timer);
    if (!this.active) {
      return; // a read planned before the page was left
    }
    const read = ++this.reads;
    const { queue, range } = this;
    try {
      const stats = await readStats(queue, ranges[range].minutes);
      if (this.active && read === this.reads) {
        this.draw(stats, range);
      }
    } catch (err) {
      if (this.active && read === this.reads) {
        this.ctx.report(err);
      }
    }
    if (this.active && read === this.reads) {
      this.timer = setTimeout(() => this.loadSoon(), idleReadMs);
    }
  }

  draw(stats, range) {
    const r = ranges[range];
    const cols = columns(stats.minutes || [], r.bucket);
    this.latency.textContent = latencyText(stats.oldest_pending_age_ms || 0);
    this.note.textContent = `Per ${r.per} over ${r.words}, in local time; read again as jobs change, at most every 5 seconds.`;
    const words = describe(cols, range, (t) => timeOf(t, range));
    charts.forEach((c, i) => {
      this.charts[i].el.setAttribute("aria-label", words[c.name]);
      this.charts[i].set([cols.at, ...c.series.map((s) => cols[s.key])]);
    });
    this.showTable(cols, range);
  }

  showTable(cols, range) {
    const rows = busyBuckets(cols);
    this.caption.textContent = tableCaption(this.queue, range);
    this.tbody.replaceChildren(...rows.map((i) => h("tr", {},
      h("th", { scope: "row" }, when(new Date(cols.at[i] * 1000).toISOString(), range === "hour")),
      ...tableColumns.map(([key]) => h("td", { class: "num" }, cell(cols, key, i))))));
    this.empty.hidden = rows.length > 0;
    this.empty.textContent = `Nothing happened in queue ${this.queue} over ${ranges[range].words}.`;
    this.region.hidden = rows.length === 0;
  }
}

/** A bucket's time in the sentences: "10:05", with the day over 24 hours. */
function timeOf(unixSeconds, range) {
  const day = range === "hour" ? {} : { month: "short", day: "numeric" };
  return new Date(unixSeconds * 1000).toLocaleString([], { ...day, hour: "2-digit", minute: "2-digit" });
}

/** One cell of the table: a count, or a mean ("—" when there is none). */
function cell(cols, key, i) {
  const v = cols[key][i];
  if (counts.includes(key)) {
    return v.toLocaleString();
  }
  return v === null ? "—" : msText(v);
}
