// queues.js: the queues table. Rows are kept by queue name and updated in
// place on each refresh, so that a focused button keeps its focus. A
// queue's name links to its jobs, and a dead count above zero to its dead
// jobs. Each row has a sparkline of the jobs the queue completed per
// minute over the last hour (GET /queues/{queue}/stats), with the hour's
// total beside it and as its text alternative; those are read at most
// every 10 seconds, however often the counts are. The action buttons are
// rendered only for a key whose role may use them (role.js); the rows are
// rebuilt after the key changes.

import { Chart } from "./charts.js";
import { h, plural } from "./dom.js";
import { throttle } from "./live.js";
import { may } from "./role.js";
import { queueHref, states } from "./routes.js"; // states: the table's column order
import { columns, readStats, sparkLabel, totals } from "./stats.js";

/** The least time between two reads of the sparklines, and how many queues are read at once. */
const sparkGapMs = 10_000;
const sparkReads = 4;

/** The states whose columns a phone hides (class "minor", see style.css), as it hides the sparkline. */
const minorStates = new Set(["delayed", "waiting", "completed", "cancelled"]);

/**
 * The table's body: render(queues) shows the given queues (a page of
 * them), sorted by name;
 * onAction(action, name) is called when a row's button is pressed, with
 * action one of "pause", "resume", "drain", "obliterate". throughputSoon()
 * reads the sparklines again (at once, or at the end of their gap) while
 * shown() says the table is on screen.
 */
export class QueuesTable {
  constructor(tbody, onAction, shown) {
    this.tbody = tbody;
    this.onAction = onAction;
    this.shown = shown;
    this.rows = new Map(); // queue name -> row
    this.throughputSoon = throttle(() => this.loadThroughput(), sparkGapMs);
  }

  render(queues) {
    const byName = new Map(queues.map((q) => [q.name, q]));
    for (const [name, row] of this.rows) {
      if (!byName.has(name)) {
        row.tr.remove();
        row.spark.chart.set(null);
        this.rows.delete(name);
      }
    }
    const names = [...byName.keys()].sort();
    for (const name of names) {
      const row = this.rows.get(name) || this.addRow(name);
      update(row, byName.get(name));
      this.tbody.append(row.tr); // appending in order keeps the rows sorted
    }
  }

  addRow(name) {
    const tr = document.createElement("tr");
    const th = document.createElement("th");
    th.scope = "row";
    const link = document.createElement("a");
    link.href = queueHref(name);
    link.textContent = name;
    th.append(link);
    tr.append(th);
    const counts = {};
    for (const state of states) {
      const td = document.createElement("td");
      td.className = minorStates.has(state) ? "num minor" : "num";
      td.dataset.state = state;
      counts[state] = td;
      tr.append(td);
    }
    // The dead count links to the dead jobs; the same link is kept, so a focused one keeps its focus.
    const deadLink = document.createElement("a");
    deadLink.href = queueHref(name, "dead");
    const spark = sparkline();
    tr.append(h("td", { class: "minor" }, spark.box)); // a phone has no room for it: the queue page has the charts
    const paused = document.createElement("td");
    tr.append(paused);
    let toggle = null; // pause or resume, when the role may use them
    if (actionsShown()) {
      const actions = document.createElement("td");
      actions.className = "actions";
      toggle = this.button(name, "pause");
      actions.append(toggle,
        this.button(name, "drain", "", "Remove the queue's pending and delayed jobs; active jobs finish"),
        this.button(name, "obliterate", "danger", "Delete the queue and every job of it"));
      tr.append(actions);
    }
    const row = { tr, counts, deadLink, spark, paused, toggle };
    this.rows.set(name, row);
    return row;
  }

  button(name, action, className, title) {
    const b = document.createElement("button");
    b.type = "button";
    b.dataset.action = action;
    if (className) {
      b.className = className;
    }
    if (title) {
      b.title = title; // what the word means, on hover; the confirm says it again
    }
    label(b, action, name);
    b.addEventListener("click", () => this.onAction(b.dataset.action, name));
    return b;
  }

  /** Reads every row's sparkline, a few queues at a time. */
  async loadThroughput() {
    if (!this.shown()) {
      return;
    }
    const names = [...this.rows.keys()];
    const next = async () => {
      for (let name = names.shift(); name !== undefined; name = names.shift()) {
        await this.showThroughput(name);
      }
    };
    await Promise.all(Array.from({ length: sparkReads }, next));
  }

  async showThroughput(name) {
    let stats;
    try {
      stats = await readStats(name, 60);
    } catch {
      return; // the table's own refresh reports what is wrong
    }
    const row = this.rows.get(name);
    if (!row) {
      return; // gone meanwhile
    }
    const cols = columns(stats.minutes || []);
    const completed = totals(cols).completed;
    row.spark.count.textContent = completed.toLocaleString();
    row.spark.box.setAttribute("aria-label", sparkLabel(completed));
    row.spark.chart.set([cols.at, cols.completed]);
  }
}

/**
 * A row's sparkline: the line and the hour's total in one box, which a
 * screen reader reads as its label ("142 completed in the last hour").
 */
function sparkline() {
  const chart = new Chart({ spark: true, width: 64, height: 22, unit: "count",
    series: [{ label: "Completed", colour: "--chart-completed" }] });
  const count = h("span", { class: "spark-count" }, "—");
  const box = h("span", { class: "spark", role: "img", "aria-label": "Jobs completed in the last hour: not read yet" }, chart.el, count);
  return { chart, count, box };
}

/** Whether the table has its Actions column: the queue actions are all the admin's. */
export function actionsShown() {
  return may("pause") && may("resume") && may("drain") && may("obliterate");
}

/** Shows one queue's counts and paused flag in its row. */
function update(row, queue) {
  for (const state of states) {
    const n = (queue.counts && queue.counts[state]) || 0;
    const td = row.counts[state];
    if (state === "dead" && n > 0) {
      row.deadLink.textContent = n.toLocaleString();
      row.deadLink.setAttribute("aria-label", `${plural(n, "dead job")} in queue ${queue.name}`);
      if (row.deadLink.parentNode !== td) {
        td.replaceChildren(row.deadLink);
      }
    } else {
      td.textContent = n.toLocaleString();
    }
    if (state === "dead") {
      td.classList.toggle("has-dead", n > 0);
    }
  }
  row.paused.textContent = queue.paused ? "paused" : "no";
  row.paused.classList.toggle("is-paused", queue.paused);
  const action = queue.paused ? "resume" : "pause";
  if (row.toggle && row.toggle.dataset.action !== action) {
    row.toggle.dataset.action = action;
    label(row.toggle, action, queue.name);
  }
}

/** Gives a button its visible text and a label that names the queue. */
function label(button, action, name) {
  button.textContent = action[0].toUpperCase() + action.slice(1);
  button.setAttribute("aria-label", `${button.textContent} queue ${name}`);
}
