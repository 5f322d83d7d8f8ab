// app.js: the dashboard's entry point. It shows the view the location hash
// names (see routes.js): the queues table, a page of queues by name (those
// whose names start with what the search box holds), with the queue actions
// (pause, resume, drain, obliterate) its buttons ask for; a queue's jobs (queue.js);
// one job (job.js); one batch, or a queue's batches (batch.js). One event feed (live.js) runs while the page is open
// and tells the view shown what changed; while the feed is down the queues
// table is read every 2 seconds instead. It asks for an API key when the
// service answers 401, and asks /whoami (role.js) on load and after a key is
// entered or forgotten, so that the views show only what the key's role may
// do and the header says who the dashboard acts as.

import { KeyNeeded, Problem, call, forgetKey, queuePath, queuesPage, storeKey, storedKey } from "./api.js";
import { BatchView, BatchesView } from "./batch.js";
import { h, plural, tabStopWhenScrolling } from "./dom.js";
import { JobView } from "./job.js";
import { EventFeed, throttle } from "./live.js";
import { QueueView } from "./queue.js";
import { QueuesTable, actionsShown } from "./queues.js";
import { describe, isOpen, known, loadRole } from "./role.js";
import { parseRoute, prefixProblem, queueHref } from "./routes.js";

/** How often the queues table is read while the event feed is down, and while it is up. */
const pollMs = 2000;
const liveCheckMs = 30_000; // counts can change without an event (retention trims finished jobs)

/** The least time between two reads of what the events say changed. */
const eventGapMs = 500;

/** How many queues the table shows a page, and how long typing may pause before the search box is read. */
const queuesPageSize = 100;
const typingMs = 300;

const el = {
  keyForm: document.getElementById("key-form"),
  keyInput: document.getElementById("key-input"),
  forget: document.getElementById("forget-key"),
  whoami: document.getElementById("whoami"),
  actionsColumn: document.getElementById("actions-column"),
  error: document.getElementById("error"),
  refreshed: document.getElementById("refreshed"),
  live: document.getElementById("live"),
  liveMode: document.getElementById("live-mode"),
  deadSummary: document.getElementById("dead-summary"),
  notice: document.getElementById("notice"), // read out by screen readers: one line per event
  empty: document.getElementById("empty"),
  tbody: document.querySelector("#queues tbody"),
  queuesView: document.getElementById("queues-view"),
  queuesRegion: document.querySelector("#queues-view .table-scroll"),
  queuesCaption: document.getElementById("queues-caption"),
  search: document.getElementById("queue-search"),
  prefix: document.getElementById("queue-prefix"),
  searchMessage: document.getElementById("queue-search-message"),
  firstPage: document.getElementById("queues-first"),
  previousPage: document.getElementById("queues-previous"),
  nextPage: document.getElementById("queues-next"),
  queueView: document.getElementById("queue-view"),
  jobView: document.getElementById("job-view"),
  batchView: document.getElementById("batch-view"),
  batchesView: document.getElementById("batches-view"),
};

/** What the queue, job and batch views may do to the page around them. */
const ctx = {
  report,
  notice,
  clearError: () => showError(""),
  backState: (queue) => (lastTab.queue === queue ? lastTab.state : "pending"),
};
let lastTab = { queue: "", state: "pending" }; // the queue tab shown last: a job's page links back to it
let noticeViews = 0; // the views shown since the notice was given
const views = {
  queue: { section: el.queueView, view: new QueueView(el.queueView, ctx) },
  job: { section: el.jobView, view: new JobView(el.jobView, ctx) },
  batch: { section: el.batchView, view: new BatchView(el.batchView, ctx) },
  batches: { section: el.batchesView, view: new BatchesView(el.batchesView, ctx) },
};
let route = parseRoute(location.hash);

const table = new QueuesTable(el.tbody, act, () => route.view === "queues");
let timer = 0; // the next refresh
let refreshing = false; // a refresh is running
let again = false; // refresh once more when it ends
let live = false; // the event feed is up
// The queues shown: those whose names start with prefix, the page whose
// cursor is the last of cursors (one per page turned so far, "" the
// first), and the next page's cursor ("" when it is the last). Each change
// makes a new object, so that an answer for an old one is not shown.
let listing = { prefix: "", cursors: [""], next: "" };
let typing = 0; // the search box's read, after a pause in typing

const feed = new EventFeed("/events", {
  onOpen: () => reloadShown(),
  onEvent: (event) => heard(event),
  onStatus: (status) => showLive(status),
});
const refreshSoon = throttle(() => refresh(), eventGapMs);

/** Reads again what the view shown holds: after the feed (re)opens, anything may have changed. */
function reloadShown() {
  if (route.view === "queues") {
    refresh();
  } else {
    views[route.view].view.reload();
  }
}

/** Passes one event to the view shown. */
function heard(event) {
  if (route.view === "queues") {
    refreshSoon();
  } else {
    views[route.view].view.heard(event);
  }
}

/** What the header and the queues view say of each status of the feed. */
const liveText = {
  connecting: ["Connecting…", "Connecting to live updates."],
  live: ["Live", "Counts update live as jobs change."],
  reconnecting: ["Reconnecting…", "Live updates are down, so counts are read every 2 seconds."],
  key: ["Not live: needs a key", "Live updates start once a key is given."],
};

/** Says in the header whether updates are live, and polls the table while they are down. */
function showLive(status) {
  live = status === "live";
  const [header, mode] = liveText[status];
  el.live.textContent = header;
  el.live.dataset.status = status;
  el.liveMode.textContent = mode;
  if (status === "reconnecting" && route.view === "queues" && !refreshing) {
    clearTimeout(timer);
    timer = setTimeout(refresh, pollMs); // poll while the feed is down
  }
}

/**
 * Says what an action did. The line stays on the view it was given on and
 * the next one (Remove goes back to the queue), then goes.
 */
function notice(text) {
  el.notice.textContent = text;
  noticeViews = 0;
}

/** Shows message as the page's error, or clears it when message is "". */
function showError(message) {
  el.error.textContent = message;
  el.error.hidden = message === "";
}

/** Shows the key form, and stops refreshing until a key is given. */
function askForKey() {
  clearTimeout(timer);
  el.keyForm.hidden = false;
  notice("Waiting for an API key.");
  el.keyInput.focus();
}

function showForget() {
  el.forget.hidden = storedKey() === "";
}

/** Tells the person what went wrong with a call. */
function report(err) {
  if (err instanceof KeyNeeded) {
    showError(storedKey() ? "The service refused this API key." : "");
    askForKey();
    return;
  }
  showError(err instanceof Problem ? `${err.message} (${err.status} ${err.code})` : err.message);
}

/**
 * Reads every queue and shows it, then schedules the next refresh. A call
 * while one runs (after an action) asks for one more right after it, so
 * that there is only ever one refresh loop.
 */
async function refresh() {
  if (route.view !== "queues") {
    return; // the loop stops while another view is shown; show() starts it again
  }
  if (refreshing) {
    again = true;
    return;
  }
  refreshing = true;
  clearTimeout(timer);
  const keepGoing = await showQueues();
  refreshing = false;
  if (again) {
    again = false;
    refresh();
  } else if (keepGoing && route.view === "queues") {
    timer = setTimeout(refresh, live ? liveCheckMs : pollMs);
  }
}

/**
 * Asks the service who the key is, says so in the header and rebuilds the
 * queues table, whose action buttons depend on the role.
 */
async function learnRole() {
  await loadRole();
  el.whoami.textContent = describe();
  el.whoami.classList.toggle("warn", isOpen()); // anyone who reaches an open API may do anything
  el.actionsColumn.hidden = !actionsShown();
  table.render([]);
}

/** Shows the current page of queues; false when the service wants a key first. */
async function showQueues() {
  try {
    if (!known()) {
      await learnRole(); // the last ask failed (the service was down, say): ask again
    }
    const asked = listing;
    const page = await queuesPage(asked.prefix, queuesPageSize, asked.cursors.at(-1));
    if (asked !== listing) {
      return true; // the search or the page changed meanwhile: the refresh that follows shows it
    }
    const queues = page.queues || [];
    listing.next = page.next_cursor || "";
    table.render(queues);
    table.throughputSoon();
    showDeadSummary(queues);
    showPager(queues.length);
    el.refreshed.textContent = new Date().toLocaleTimeString();
    if (el.error.dataset.from === "refresh") {
      showError("");
    }
    return true;
  } catch (err) {
    report(err);
    el.error.dataset.from = "refresh";
    return !(err instanceof KeyNeeded); // no refresh until a key is given
  }
}

/** Says which page of queues is shown, or that it has none, and which turns there are. */
function showPager(shown) {
  const page = listing.cursors.length;
  const of = listing.prefix ? `queues whose names start with ${listing.prefix}` : "queues";
  el.queuesCaption.textContent = `Queues, with the number of jobs in each state and those completed in the last hour: ` +
    `${of}, by name, page ${page} (${queuesPageSize} a page)`;
  el.empty.hidden = shown > 0;
  if (page > 1) {
    el.empty.textContent = "No more queues.";
  } else if (listing.prefix) {
    el.empty.textContent = `No queue's name starts with ${listing.prefix}.`;
  } else {
    el.empty.textContent = "No queues yet: a queue appears here once a job is enqueued to it.";
  }
  el.firstPage.disabled = page === 1;
  el.previousPage.disabled = page === 1;
  el.nextPage.disabled = !listing.next;
}

/** Shows page i of the queues (0 the first; the page after the last shown follows its next cursor). */
async function turnPage(i) {
  const cursors = listing.cursors.slice(0, i + 1);
  if (i === listing.cursors.length) {
    if (!listing.next) {
      return;
    }
    cursors.push(listing.next);
  }
  listing = { prefix: listing.prefix, cursors, next: "" };
  await refresh();
  el.queuesRegion.focus(); // the button pressed may now be disabled
}

/** Shows the first page of the queues whose names start with what the search box holds. */
function search() {
  clearTimeout(typing);
  const prefix = el.prefix.value.trim();
  const problem = prefixProblem(prefix);
  el.searchMessage.textContent = problem;
  if (problem || prefix === listing.prefix) {
    return;
  }
  listing = { prefix, cursors: [""], next: "" };
  refresh();
}

/**
 * Puts dead jobs first on the page: one line that counts those of the
 * queues shown and links to each queue that has some, hidden when no job
 * is dead.
 */
function showDeadSummary(queues) {
  const withDead = queues.filter((q) => (q.counts?.dead || 0) > 0)
    .sort((a, b) => b.counts.dead - a.counts.dead || a.name.localeCompare(b.name));
  const total = withDead.reduce((sum, q) => sum + q.counts.dead, 0);
  el.deadSummary.hidden = total === 0;
  if (total === 0) {
    return;
  }
  const jobs = plural(total, "dead job");
  const links = withDead.flatMap((q, i) => {
    const text = `${q.name} (${q.counts.dead.toLocaleString()})`; // the label starts with it, for voice control
    return [i > 0 ? ", " : "", h("a", { href: queueHref(q.name, "dead"), "aria-label": `${text}: ${plural(q.counts.dead, "dead job")}` }, text)];
  });
  el.deadSummary.replaceChildren(h("strong", {}, jobs), " to look at: ", ...links);
}

/** Runs one queue action, confirming the destructive ones by name. */
async function act(action, name) {
  const path = queuePath(name);
  try {
    switch (action) {
      case "pause":
      case "resume":
        await call("POST", `${path}/${action}`);
        notice(`Queue ${name} ${action === "pause" ? "paused" : "resumed"}.`);
        break;
      case "drain": {
        if (!confirm(`Drain queue "${name}"? Its pending and delayed jobs are removed; active jobs finish.`)) {
          return;
        }
        const { removed } = await call("POST", `${path}/drain`);
        notice(`Drained queue ${name}: ${plural(removed, "job")} removed.`);
        break;
      }
      case "obliterate":
        if (!confirm(`Obliterate queue "${name}"? The queue and every job of it are deleted for good.`)) {
          return;
        }
        if (await obliterate(name)) {
          notice(`Queue ${name} obliterated.`);
        }
        break;
    }
    showError("");
    el.error.dataset.from = "";
  } catch (err) {
    report(err);
    el.error.dataset.from = "action";
  }
  refresh();
}

/**
 * Deletes a queue; while jobs are active, asks again before forcing it.
 * Reports whether the queue was deleted.
 */
async function obliterate(name) {
  try {
    await call("DELETE", queuePath(name));
    return true;
  } catch (err) {
    if (!(err instanceof Problem) || err.status !== 409) {
      throw err;
    }
    if (!confirm(`Queue "${name}" has active jobs: ${err.message}\nObliterate it anyway? Their workers' next calls will fail.`)) {
      return false;
    }
    await call("DELETE", `${queuePath(name)}?force=true`);
    return true;
  }
}

/** Shows the view of the current route, leaving the one shown before. */
function show(focus) {
  for (const { view } of Object.values(views)) {
    view.leave();
  }
  route = parseRoute(location.hash);
  if (route.view === "queue") {
    lastTab = { queue: route.queue, state: route.state };
  }
  if (++noticeViews > 1) {
    el.notice.textContent = "";
  }
  showError("");
  el.queuesView.hidden = route.view !== "queues";
  for (const [name, { section, view }] of Object.entries(views)) {
    section.hidden = route.view !== name;
    if (route.view === name) {
      view.show(route);
    }
  }
  if (route.view === "queues") {
    refresh();
    if (focus) {
      el.queuesRegion.focus();
    }
  }
}

window.addEventListener("hashchange", () => show(true));

el.keyForm.addEventListener("submit", async (event) => {
  event.preventDefault();
  storeKey(el.keyInput.value.trim());
  el.keyInput.value = "";
  el.keyForm.hidden = true;
  el.notice.textContent = ""; // "Waiting for an API key." is over
  showError("");
  showForget();
  await learnRole();
  show(false);
  feed.start();
});

el.forget.addEventListener("click", async () => {
  forgetKey();
  showForget();
  await learnRole();
  show(false);
  feed.start();
});

// A tab in the background needs no live updates, and its stream costs the
// service a read of every queue twice a second: it closes while hidden and
// opens again (reading the view anew) when shown.
document.addEventListener("visibilitychange", () => {
  if (document.hidden) {
    feed.stop();
  } else {
    feed.start();
  }
});

el.search.addEventListener("submit", (event) => {
  event.preventDefault();
  search();
});
el.prefix.addEventListener("input", () => {
  clearTimeout(typing);
  typing = setTimeout(search, typingMs);
});
el.firstPage.addEventListener("click", () => turnPage(0));
el.previousPage.addEventListener("click", () => turnPage(listing.cursors.length - 2));
el.nextPage.addEventListener("click", () => turnPage(listing.cursors.length));

tabStopWhenScrolling(el.queuesRegion);
showForget();
await learnRole();
show(false);
feed.start();
