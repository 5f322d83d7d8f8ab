// queues.js: the queues table. Rows are kept by queue name and updated in
// place on each refresh, so that a focused button keeps its focus. A
// queue's name links to its jobs, and a dead count above zero to its dead
// jobs. The action buttons are rendered only
// for a key whose role may use them (role.js); the rows are rebuilt after
// the key changes.

import { plural } from "./dom.js";
import { may } from "./role.js";
import { queueHref, states } from "./routes.js"; // states: the table's column order

/** The states whose columns a phone hides (class "minor", see style.css). */
const minorStates = new Set(["delayed", "completed", "cancelled"]);

/**
 * The table's body: render(queues) shows the given queues, sorted by name;
 * onAction(action, name) is called when a row's button is pressed, with
 * action one of "pause", "resume", "drain", "obliterate".
 */
export class QueuesTable {
  constructor(tbody, onAction) {
    this.tbody = tbody;
    this.onAction = onAction;
    this.rows = new Map(); // queue name -> row
  }

  render(queues) {
    const byName = new Map(queues.map((q) => [q.name, q])); // a scan may repeat a queue
    for (const [name, row] of this.rows) {
      if (!byName.has(name)) {
        row.tr.remove();
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
    const row = { tr, counts, deadLink, paused, toggle };
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
