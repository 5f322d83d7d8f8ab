// modules.test.mjs: unit tests of the dashboard modules' logic that needs
// no page: the event-stream reader and throttle (live.js), the hash routes
// and the search box's check (routes.js), the dead letters' grouping (deadletters.js), the bulk
// actions' loop and words (bulk.js), the job
// page's countdown, actions and dependencies (job.js), its log's reads and
// status (joblog.js), its edit form (edit.js), a batch's counts and
// callback in words (batch.js), the relative times (dom.js), the
// schedules' cadence in words (schedules.js) and the charts' history in
// buckets and in words (stats.js). TestModulesUnderNode (ui_test.go)
// runs it with `node --test`; it lives outside static/ so it is not served.

import assert from "node:assert/strict";
import { mock, test } from "node:test";

import { barText, callbackOwed, callbackText, ended, parts, successText } from "./static/batch.js";
import { cleanQuestion, cleanWhat, runBulk } from "./static/bulk.js";
import { groupByError, intro, retryAllShown } from "./static/deadletters.js";
import { duration, fromNow, plural } from "./static/dom.js";
import { actionsFor, callbackOf, countdown, failedDependency, waitsFor } from "./static/job.js";
import { EventFeed, readEvents, throttle } from "./static/live.js";
import { loadRole } from "./static/role.js";
import { batchHref, batchesHref, jobHref, parseRoute, prefixProblem, queueHref, states } from "./static/routes.js";
import { cadence, interval, noNextRun } from "./static/schedules.js";
import { busyBuckets, columns, describe, latencyText, msText, sparkLabel, tableCaption, totals } from "./static/stats.js";

/** Makes role.js believe the key in use has role (as GET /whoami would say). */
async function actAs(role) {
  globalThis.sessionStorage = { getItem: () => "a-key" };
  globalThis.fetch = async () => ({ status: 200, ok: true, json: async () => ({ role, key: `${role}-1`, open: false }) });
  await loadRole();
}

/** A byte stream that yields each chunk in turn, as a slow network would. */
function streamOf(chunks) {
  const encoder = new TextEncoder();
  return new ReadableStream({
    start(controller) {
      for (const chunk of chunks) {
        controller.enqueue(typeof chunk === "string" ? encoder.encode(chunk) : chunk);
      }
      controller.close();
    },
  });
}

async function eventsOf(chunks) {
  const got = [];
  await readEvents(streamOf(chunks), new AbortController().signal, (event) => got.push(event));
  return got;
}

test("readEvents decodes events split anywhere across chunks", async () => {
  const e = new TextEncoder().encode('data: {"kind":"failed","queue":"q","error":"café"}\n\n');
  const cut = e.indexOf(0xc3) + 1; // in the middle of "é"'s two bytes
  const got = await eventsOf([
    "id: 1-0\nevent: enq",
    'ueued\ndata: {"kind":"enqueued","queue":"q","job_id":"a"}\n',
    "\n: ping\n\n",
    'data: {"kind":"claimed",\r\ndata: "queue":"q"}\r\n\r\n',
    e.slice(0, cut),
    e.slice(cut),
  ]);
  assert.deepEqual(got, [
    { kind: "enqueued", queue: "q", job_id: "a" },
    { kind: "claimed", queue: "q" }, // two data lines are joined with a newline, which JSON allows
    { kind: "failed", queue: "q", error: "café" },
  ]);
});

test("readEvents stops at an error event, as the service ends the stream after one", async () => {
  const got = await eventsOf([
    'data: {"kind":"a"}\n\n',
    'event: error\ndata: {"code":"EMQUNAVAILABLE"}\n\n',
    'data: {"kind":"b"}\n\n',
  ]);
  assert.deepEqual(got, [{ kind: "a" }]);
});

test("readEvents skips data that is not JSON and an event left unfinished", async () => {
  const got = await eventsOf(['data: not json\n\n', 'data: {"kind":"a"}\n\n', 'data: {"kind":"cut off"}']);
  assert.deepEqual(got, [{ kind: "a" }]);
});

test("throttle runs at once, then at most once per gap, and never drops the last call", () => {
  mock.timers.enable({ apis: ["setTimeout", "Date"], now: 10_000 });
  try {
    let runs = 0;
    const run = throttle(() => runs++, 500);
    run();
    assert.equal(runs, 1, "the first call runs at once");
    run();
    run();
    assert.equal(runs, 1, "calls within the gap wait");
    mock.timers.tick(499);
    assert.equal(runs, 1);
    mock.timers.tick(1);
    assert.equal(runs, 2, "the waiting calls run once at the end of the gap");
    mock.timers.tick(2000);
    assert.equal(runs, 2, "nothing runs without a call");
    run();
    assert.equal(runs, 3, "after a quiet gap a call runs at once again");
  } finally {
    mock.timers.reset();
  }
});

test("routes round-trip names with slashes, hashes and percents", () => {
  for (const name of ["emails", "a/b", "x#y", "100%", "é q"]) {
    assert.deepEqual(parseRoute(queueHref(name, "dead")), { view: "queue", queue: name, state: "dead" });
    assert.deepEqual(parseRoute(jobHref(name, `${name}:1`)), { view: "job", queue: name, id: `${name}:1` });
    assert.deepEqual(parseRoute(batchHref(name, `import:${name}`)), { view: "batch", queue: name, id: `import:${name}` });
    assert.deepEqual(parseRoute(batchesHref(name)), { view: "batches", queue: name });
  }
  assert.deepEqual(parseRoute("#/queues/q"), { view: "queue", queue: "q", state: "pending" });
  assert.deepEqual(parseRoute("#/queues/q/waiting"), { view: "queue", queue: "q", state: "waiting" });
  for (const hash of ["", "#/", "#/nope", "#/queues/q/flying", "#/queues/%E0%A4%A/dead", "#/queues/q/jobs", "#/queues/q/batches/a/b"]) {
    assert.deepEqual(parseRoute(hash), { view: "queues" }, hash);
  }
});

test("a search prefix is what a queue's name may start with", () => {
  for (const ok of ["", "a", "mail-", "._-", "A9", "q".repeat(100)]) {
    assert.equal(prefixProblem(ok), "", ok);
  }
  for (const bad of ["a b", "a:b", "é", "a/b", "q".repeat(101)]) {
    assert.notEqual(prefixProblem(bad), "", bad);
  }
});

test("the states are the API's seven, waiting after delayed", () => {
  assert.deepEqual(states, ["pending", "active", "delayed", "waiting", "completed", "dead", "cancelled"]);
});

test("groupByError puts the largest group first, then sorts by reason", () => {
  const groups = groupByError([
    { id: "1", last_error: "timeout" },
    { id: "2", last_error: "boom" },
    { id: "3", last_error: "timeout" },
    { id: "4" },
    { id: "5", last_error: "a crash" },
  ]);
  assert.deepEqual(groups.map((g) => [g.reason, g.jobs.map((j) => j.id)]), [
    ["timeout", ["1", "3"]],
    ["(no error recorded)", ["4"]],
    ["a crash", ["5"]],
    ["boom", ["2"]],
  ]);
});

test("countdown says how long a lease has left, or how long ago it ran out", () => {
  const now = Date.parse("2026-11-30T12:00:00Z");
  assert.equal(countdown("2026-11-30T12:00:12Z", now), "expires in 12 s");
  assert.equal(countdown("2026-11-30T12:02:05Z", now), "expires in 2 min 5 s");
  assert.equal(countdown("2026-11-30T14:30:00Z", now), "expires in 2 h 30 min");
  assert.equal(countdown("2026-11-30T11:59:57Z", now), "expired 3 s ago (the reaper sweeps it soon)");
  assert.equal(countdown("not a time", now), "");
});

test("actionsFor offers only what the job's state allows", () => {
  assert.deepEqual(actionsFor("dead"), ["retry", "remove"]);
  assert.deepEqual(actionsFor("cancelled"), ["retry", "remove"]);
  assert.deepEqual(actionsFor("delayed"), ["promote", "cancel", "remove"]);
  assert.deepEqual(actionsFor("active"), ["cancel", "remove"]);
  assert.deepEqual(actionsFor("pending"), ["cancel", "remove"]);
  assert.deepEqual(actionsFor("waiting"), ["cancel", "remove"]);
  assert.deepEqual(actionsFor("completed"), ["remove"]);
});

test("waitsFor names a waiting job's first three dependencies and counts the rest", () => {
  assert.equal(waitsFor(["a"]), "a");
  assert.equal(waitsFor(["a", "b", "c"]), "a, b, c");
  assert.equal(waitsFor(["a", "b", "c", "d", "e"]), "a, b, c and 2 more");
  assert.equal(waitsFor(undefined), "");
});

test("failedDependency reads the dependency out of a dependant's cancel reason", () => {
  assert.deepEqual(failedDependency("dependency extract-1 dead", ["extract-1", "extract-2"]), { id: "extract-1", state: "dead" });
  assert.deepEqual(failedDependency("dependency x:1 removed", ["x:1"]), { id: "x:1", state: "removed" });
  assert.equal(failedDependency("dependency other dead", ["extract-1"]), null, "an id the job does not depend on");
  assert.equal(failedDependency("operator: wrong address", ["extract-1"]), null);
  assert.equal(failedDependency(undefined, undefined), null);
});

test("callbackOf knows a batch's callback job by its id and payload", () => {
  const payload = { batch: { id: "import-7", queue: "imports" }, payload: null };
  assert.deepEqual(callbackOf({ id: "batch:import-7", payload }), { queue: "imports", id: "import-7" });
  assert.deepEqual(callbackOf({ id: "batch:imports:import-7:1796300000000", payload }), { queue: "imports", id: "import-7" },
    "the longer id a callback gets when another batch's callback holds the short one");
  assert.equal(callbackOf({ id: "batch:import-8", payload }), null, "an id that is not its batch's");
  assert.equal(callbackOf({ id: "batch:other:import-7:1", payload }), null, "a longer id of another queue");
  assert.equal(callbackOf({ id: "import-7", payload }), null);
  assert.equal(callbackOf({ id: "batch:x", payload: "a string" }), null);
  assert.equal(callbackOf({ id: "batch:x", payload: null }), null);
});

test("a batch's counts become its bar and its words", () => {
  const counts = { pending: 2, active: 0, delayed: 0, waiting: 1, completed: 3, dead: 1, cancelled: 0 };
  const batch = { state: "running", total: 7, counts, success: false, callback: { queue: "q", when: "complete" } };
  assert.equal(ended(counts), 4);
  assert.deepEqual(parts(counts).map((p) => `${p.state}:${p.n}`), ["pending:2", "waiting:1", "completed:3", "dead:1"]);
  assert.equal(barText(batch), "4 of 7 jobs ended: 2 pending, 1 waiting, 3 completed, 1 dead");
  assert.equal(barText({ total: 0, counts: {} }), "0 of 0 jobs ended");
  assert.equal(successText(batch), "not known yet: the batch is not done");
  assert.equal(successText({ ...batch, state: "done", success: true }), "yes: every job completed");
  assert.equal(callbackText(batch.callback), "on queue q, once every job has ended (complete)");
  assert.equal(callbackText({ queue: "r", when: "success" }), "on queue r, only if every job completed (success)");
  assert.equal(callbackText(undefined), "none: the batch enqueues no job when it is done");
});

test("callbackOwed waits for a done batch's callback only when one will come", () => {
  const done = { state: "done", success: false, callback: { queue: "q", when: "complete" } };
  assert.equal(callbackOwed(done), true);
  assert.equal(callbackOwed({ ...done, callback_job_id: "batch:b" }), false, "enqueued already");
  assert.equal(callbackOwed({ ...done, state: "running" }), false, "not done");
  assert.equal(callbackOwed({ ...done, callback: { queue: "q", when: "success" } }), false, "success asked, not had");
  assert.equal(callbackOwed({ ...done, success: true, callback: { queue: "q", when: "success" } }), true);
  const { callback: _, ...without } = done;
  assert.equal(callbackOwed(without), false, "a batch made without a callback");
});

test("plural counts one and many", () => {
  assert.equal(plural(1, "job"), "1 job");
  assert.equal(plural(0, "job"), "0 jobs");
  assert.equal(plural(1200, "job"), `${(1200).toLocaleString()} jobs`);
});

test("the dead letters intro fits the jobs listed and the key's role", async () => {
  await actAs("admin");
  assert.equal(intro(1, 1, 1),
    "1 job died: it ran out of attempts, failed fatally or stalled too often. " +
    "The button sends it back to pending with a fresh attempt budget.");
  assert.equal(intro(3, 3, 2),
    "3 jobs died: they ran out of attempts, failed fatally or stalled too often. They are grouped by their last error. " +
    "Each group's button sends its jobs back to pending with a fresh attempt budget. " +
    "\"Retry all 3\" does so for every dead job of the queue, listed or not, oldest first.");
  assert.match(intro(250, 100, 1), /The 100 most recent are listed.*"Retry all 250".*Once they are retried, the next 100 are listed\.$/);
  assert.match(intro(130, 100, 1), /the next 30 are listed\.$/);
  assert.equal(intro(0, 0, 0), "No job of this queue is dead.");
  assert.equal(retryAllShown(2, 2, 1), false, "one group, all listed: its own button does the same");
  assert.equal(retryAllShown(250, 100, 1), true);
  await actAs("reader");
  assert.equal(intro(2, 2, 1),
    "2 jobs died: they ran out of attempts, failed fatally or stalled too often. Retrying needs an admin key.");
});

test("runBulk calls again while more, never past the count confirmed", async () => {
  globalThis.sessionStorage = { getItem: () => "" };
  const answers = [{ retried: 1000, more: true }, { retried: 1000, more: true }, { retried: 300, more: false }];
  const sent = [];
  globalThis.fetch = async (path, init) => {
    sent.push([path, JSON.parse(init.body)]);
    return { status: 200, ok: true, json: async () => answers.shift() };
  };
  const progress = [];
  assert.equal(await runBulk("q/1", "retry", { state: "dead" }, 2300, (n) => progress.push(n)), 2300);
  assert.deepEqual(progress, [1000, 2000, 2300]);
  assert.deepEqual(sent.map(([path]) => path), ["/queues/q%2F1/retry", "/queues/q%2F1/retry", "/queues/q%2F1/retry"]);
  assert.deepEqual(sent.map(([, body]) => body.limit), [1000, 1000, 300], "the last call asks for what is left of the count");
  assert.equal(sent[0][1].state, "dead");

  // More jobs than confirmed (others die meanwhile): it stops at the count.
  sent.length = 0;
  globalThis.fetch = async (path, init) => {
    sent.push(JSON.parse(init.body));
    return { status: 200, ok: true, json: async () => ({ promoted: JSON.parse(init.body).limit, more: true }) };
  };
  assert.equal(await runBulk("q", "promote", {}, 1500, () => {}), 1500);
  assert.equal(sent.length, 2);

  // A call that takes none ends the loop, whatever more says.
  globalThis.fetch = async () => ({ status: 200, ok: true, json: async () => ({ removed: 0, more: true }) });
  assert.equal(await runBulk("q", "clean", { state: "dead", older_than_ms: 0 }, 50, () => {}), 0);
});

test("the clean-up says what it deletes", () => {
  assert.equal(cleanWhat("dead", 86_400_000), "dead jobs that finished more than 1 day ago");
  assert.equal(cleanWhat("finished", 0), "all completed, dead and cancelled jobs");
  assert.equal(cleanQuestion("emails", "completed", 7 * 86_400_000),
    "Delete the completed jobs of queue \"emails\" that finished more than 7 days ago? They are deleted for good, with their logs.");
  assert.equal(cleanQuestion("emails", "dead", 0), "Delete all dead jobs of queue \"emails\"? They are deleted for good, with their logs.");
});

/** Lets every promise that can settle now settle. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

test("EventFeed retries after 1 s, 2 s, 4 s while refused, stops on a 401, and runs one stream at a time", async () => {
  globalThis.sessionStorage = { getItem: () => "" };
  mock.timers.enable({ apis: ["setTimeout"] });
  try {
    let answer = { status: 503, ok: false };
    const signals = []; // one per request
    globalThis.fetch = async (path, init) => {
      assert.equal(path, "/events");
      signals.push(init.signal);
      return answer;
    };
    const statuses = [];
    const events = [];
    let opened = 0;
    const feed = new EventFeed("/events", {
      onOpen: () => opened++,
      onEvent: (event) => events.push(event),
      onStatus: (status) => statuses.push(status),
    });
    feed.start();
    await settle();
    assert.equal(signals.length, 1);
    assert.deepEqual(statuses, ["connecting", "reconnecting"]);
    for (const [wait, calls] of [[999, 1], [1, 2], [1999, 2], [1, 3], [3999, 3], [1, 4]]) {
      mock.timers.tick(wait);
      await settle();
      assert.equal(signals.length, calls, `requests after ${wait} ms more`);
    }

    answer = { status: 401, ok: false };
    mock.timers.tick(8000);
    await settle();
    assert.equal(signals.length, 5);
    assert.equal(statuses.at(-1), "key");
    mock.timers.tick(120_000);
    await settle();
    assert.equal(signals.length, 5, "no retry after a 401 until start() is called again");

    const line = 'data: {"kind":"enqueued","queue":"q"}\n\n';
    answer = { status: 200, ok: true, body: new ReadableStream({ start: (c) => c.enqueue(new TextEncoder().encode(line)) }) };
    feed.start();
    await settle();
    assert.equal(statuses.at(-1), "live");
    assert.equal(opened, 1);
    assert.deepEqual(events, [{ kind: "enqueued", queue: "q" }]);
    answer = { status: 200, ok: true, body: new ReadableStream() };
    feed.start();
    await settle();
    assert.equal(signals.at(-2).aborted, true, "the stream before is aborted when the feed starts again");
    assert.equal(signals.at(-1).aborted, false);
    feed.stop();
    assert.equal(signals.at(-1).aborted, true, "stop() aborts the stream");
  } finally {
    mock.timers.reset();
  }
});

test("the flow control panel says the settings in words and reads its form", async () => {
  const { describeSettings, settingsOfForm } = await import("./static/flow.js");
  assert.match(describeSettings({}), /^No limits/);
  const all = describeSettings({ concurrency: 20, rate_limit: { limit: 100, window_ms: 1000 }, group_concurrency: 2, group_order: "fifo" });
  assert.match(all, /Queue: at most 20 jobs active at once; at most 100 claims starting per 1,000 ms\./);
  assert.match(all, /Each group: at most 2 active; one job at a time/);
  assert.deepEqual(settingsOfForm({ concurrency: "", rate_limit: "5", rate_window_ms: "1000", group_concurrency: "3", group_order: "on" }),
    { rate_limit: { limit: 5, window_ms: 1000 }, group_concurrency: 3, group_order: "fifo" });
  assert.deepEqual(settingsOfForm({ concurrency: "", rate_limit: "", rate_window_ms: "" }), {});
});

test("the settings form reads job defaults and retention, and says them in words", async () => {
  const { describeSettings, settingsOfForm } = await import("./static/flow.js");
  assert.deepEqual(settingsOfForm({ default_max_attempts: "5", default_priority: "0", default_backoff_type: "fixed",
    default_backoff_delay_ms: "2000", default_backoff_max_delay_ms: "", default_timeout_ms: "", default_expires_in_ms: "",
    keep_completed_count: "0", keep_completed_age_ms: "", keep_dead_count: "", keep_dead_age_ms: "86400000",
    keep_cancelled_count: "", keep_cancelled_age_ms: "" }),
  { job_defaults: { max_attempts: 5, priority: 0, backoff: { type: "fixed", delay_ms: 2000 } },
    retention: { completed: { count: 0 }, dead: { age_ms: 86400000 } } });
  assert.deepEqual(settingsOfForm({ default_backoff_type: "", default_backoff_delay_ms: "5", keep_dead_count: "" }), {});
  const words = describeSettings({ job_defaults: { max_attempts: 5, priority: 3 }, retention: { completed: {}, dead: { count: 10, age_ms: 1000 } } });
  assert.match(words, /^No limits/);
  assert.match(words, /A job that names none gets 5 attempts, priority 3\./);
  assert.match(words, /Keeps completed jobs: all; dead jobs: the newest 10, for 1,000 ms;/);
});

test("duration and fromNow say how far a time is, in its two largest units", () => {
  const now = Date.parse("2026-12-02T05:00:00Z");
  assert.equal(duration(12_400), "12 s");
  assert.equal(duration(-125_000), "2 min 5 s");
  assert.equal(duration(9_000_000), "2 h 30 min");
  assert.equal(duration(3 * 86_400_000 + 4 * 3_600_000 + 59_000), "3 d 4 h");
  assert.equal(fromNow("2026-12-02T05:00:42Z", now), "in 42 s");
  assert.equal(fromNow("2026-12-02T04:57:00.000Z", now), "3 min 0 s ago");
  assert.equal(fromNow("2026-12-03T03:00:00Z", now), "in 22 h 0 min");
  assert.equal(fromNow("2026-12-02T05:00:00.200Z", now), "now");
  assert.equal(fromNow(null, now), "");
  assert.equal(fromNow("not a time", now), "");
});

test("a schedule's cadence in words: the interval in its largest whole unit, or the cron with its zone", () => {
  assert.equal(interval(60_000), "1 min");
  assert.equal(interval(90_000), "90 s");
  assert.equal(interval(7_200_000), "2 h");
  assert.equal(interval(5_400_000), "90 min");
  assert.equal(interval(1_500), `${(1500).toLocaleString()} ms`);
  assert.equal(interval(100), "100 ms");
  assert.equal(cadence({ every_ms: 60_000 }), "every 1 min");
  assert.equal(cadence({ every_ms: 1000 }), "every 1 s");
  assert.equal(cadence({ cron: "0 3 * * *", tz: "Europe/Berlin" }), 'cron "0 3 * * *" in Europe/Berlin');
  assert.equal(cadence({ cron: "@hourly" }), 'cron "@hourly" in UTC');
  assert.equal(noNextRun({ paused: true, next_run_at: null }), "none while paused");
  assert.equal(noNextRun({ paused: false, next_run_at: null, end_at: "2026-01-01T00:00:00.000Z" }), "none: past its end");
});

test("the push panel says a target's limits in words", async () => {
  const { describeTarget } = await import("./static/push.js");
  assert.equal(describeTarget({ concurrency: 4, timeout_ms: 30_000, lease_ms: 60_000, secret_set: true }),
    "4 at once, 30 s timeout, 1 min 0 s lease, signed");
  assert.equal(describeTarget({ concurrency: 1000, timeout_ms: 100, lease_ms: 90_000, secret_set: false }),
    `${(1000).toLocaleString()} at once, 100 ms timeout, 1 min 30 s lease, not signed`);
  assert.equal(describeTarget({ concurrency: 4, timeout_ms: 30_000, lease_ms: 60_000, secret_set: true,
    header_names: ["Authorization", "X-Tenant"] }),
  "4 at once, 30 s timeout, 1 min 0 s lease, signed, with headers Authorization, X-Tenant");
});

test("the push form reads its headers one a line and leaves empty fields to the defaults", async () => {
  const { headersOfText, targetOfForm } = await import("./static/push.js");
  assert.deepEqual(headersOfText("Authorization: Bearer a:b\r\n\n  X-Tenant:42  \n"),
    { headers: { Authorization: "Bearer a:b", "X-Tenant": "42" } });
  assert.deepEqual(headersOfText(""), { headers: {} });
  assert.match(headersOfText("X-A: 1\nno colon").problem, /Line 2/);
  assert.match(headersOfText(": value").problem, /Line 1/);
  assert.deepEqual(targetOfForm({ url: " http://w/jobs ", timeout_ms: "", concurrency: "4", lease_ms: "", secret: "", headers: "" }),
    { body: { url: "http://w/jobs", concurrency: 4 } });
  assert.deepEqual(targetOfForm({ url: "http://w", secret: "whsec_x", headers: "Authorization: t" }),
    { body: { url: "http://w", secret: "whsec_x", headers: { Authorization: "t" } } });
  assert.ok(targetOfForm({ url: "http://w", headers: "bad" }).problem);
});

test("a progress event is drawn from its value, or tells the job page to read the job", async () => {
  const { progressOf } = await import("./static/job.js");
  assert.deepEqual(progressOf({ kind: "progress", job_id: "a", progress: { pct: 50 } }, "a"), { value: { pct: 50 } });
  assert.deepEqual(progressOf({ kind: "progress", job_id: "a", progress: null }, "a"), { value: null });
  assert.equal(progressOf({ kind: "progress", job_id: "a", progress_truncated: true }, "a"), "read");
  assert.equal(progressOf({ kind: "progress", job_id: "b", progress: 1 }, "a"), null, "another job's");
  assert.equal(progressOf({ kind: "completed", job_id: "a" }, "a"), null);
});

test("a listed batch says how many of its jobs ended", async () => {
  const { endedText } = await import("./static/batch.js");
  assert.equal(endedText({ total: 5, counts: { completed: 2, dead: 1, pending: 2 } }), "3 of 5 jobs ended");
  assert.equal(endedText({ total: 1, counts: {} }), "0 of 1 job ended");
});

/** A minute of GET /queues/{queue}/stats, zeros but for fields. */
function minute(at, fields = {}) {
  return { at, enqueued: 0, started: 0, completed: 0, failed: 0, dead: 0, cancelled: 0, wait_ms_mean: 0, run_ms_mean: 0, ...fields };
}

test("columns keeps the API's minutes one to a point, with no mean where nothing started or ended", () => {
  const cols = columns([
    minute("2026-12-01T10:00:00.000Z", { enqueued: 3, started: 2, completed: 1, failed: 1, wait_ms_mean: 12.5, run_ms_mean: 200 }),
    minute("2026-12-01T10:01:00.000Z"),
    minute("2026-12-01T10:02:00.000Z", { dead: 1, cancelled: 2, run_ms_mean: 40 }),
  ]);
  const t0 = Date.parse("2026-12-01T10:00:00Z") / 1000;
  assert.deepEqual(cols.at, [t0, t0 + 60, t0 + 120], "unix seconds, as uPlot takes them");
  assert.deepEqual(cols.enqueued, [3, 0, 0]);
  assert.deepEqual(cols.completed, [1, 0, 0]);
  assert.deepEqual(cols.failed, [1, 0, 0]);
  assert.deepEqual(cols.dead, [0, 0, 1]);
  assert.deepEqual(cols.cancelled, [0, 0, 2]);
  assert.deepEqual(cols.wait, [12.5, null, null], "a minute where nothing started has no wait, not a wait of 0");
  assert.deepEqual(cols.run, [200, null, 40]);
  assert.deepEqual(totals(cols), { enqueued: 3, completed: 1, failed: 1, dead: 1, cancelled: 2 });
  assert.deepEqual(busyBuckets(cols), [2, 0], "the table's rows: busy minutes, newest first");
});

test("columns sums 24 hours into 10-minute buckets on the clock, weighing the means", () => {
  const minutes = [];
  const start = Date.parse("2026-12-01T10:05:00Z");
  for (let i = 0; i < 1440; i++) {
    minutes.push(minute(new Date(start + i * 60_000).toISOString(), { completed: 1 }));
  }
  minutes[0] = minute(minutes[0].at, { completed: 1, started: 1, wait_ms_mean: 100, run_ms_mean: 10 });
  minutes[1] = minute(minutes[1].at, { completed: 3, started: 3, wait_ms_mean: 20, run_ms_mean: 50 });
  const cols = columns(minutes, 10);
  assert.equal(cols.at.length, 145, "10:05 to 10:04 the next day: a partial bucket at each end and 143 whole ones");
  assert.equal(new Date(cols.at[0] * 1000).toISOString(), "2026-12-01T10:00:00.000Z", "buckets start on the clock's ten minutes");
  assert.equal(new Date(cols.at[1] * 1000).toISOString(), "2026-12-01T10:10:00.000Z");
  assert.equal(cols.completed[0], 1 + 3 + 3, "10:05 to 10:09");
  assert.equal(cols.completed[1], 10);
  assert.equal(cols.completed.at(-1), 5, "10:00 to 10:04 the next day, the last minute still filling");
  assert.equal(totals(cols).completed, 1440 + 2);
  assert.equal(cols.wait[0], (100 * 1 + 20 * 3) / 4, "the mean wait weighs each minute by the jobs that started in it");
  assert.equal(cols.run[0], (10 * 1 + 50 * 3 + 0 * 3) / 7, "the mean run weighs each minute by the attempts that ended in it");
  assert.equal(cols.wait[1], null);
});

test("the charts' words: latency, sparkline, sentences and the table's caption", () => {
  assert.equal(latencyText(1250), "Oldest pending job: 1.3 s");
  assert.equal(latencyText(250), "Oldest pending job: 250 ms");
  assert.equal(latencyText(125_000), "Oldest pending job: 2 min 5 s");
  assert.equal(latencyText(0), "Oldest pending job: none, no job is pending");
  assert.equal(msText(999.6), `${(1000).toLocaleString()} ms`);
  assert.equal(msText(2000), "2 s");
  assert.equal(sparkLabel(142), "142 completed in the last hour");
  assert.equal(sparkLabel(0), "0 completed in the last hour");

  const cols = columns([
    minute("2026-12-01T10:00:00.000Z", { enqueued: 5, started: 4, completed: 3, failed: 1, wait_ms_mean: 10, run_ms_mean: 30 }),
    minute("2026-12-01T10:01:00.000Z", { enqueued: 1, started: 1, completed: 4, dead: 1, wait_ms_mean: 60, run_ms_mean: 80 }),
  ]);
  const words = describe(cols, "hour", (t) => new Date(t * 1000).toISOString().slice(11, 16));
  assert.equal(words.throughput, "Jobs enqueued and completed per minute over the last hour: 6 enqueued, 7 completed; most completed in one minute: 4, at 10:01.");
  assert.equal(words.failures, "Failures per minute over the last hour: 1 failed and retried, 1 dead.");
  assert.equal(words.latency, "Wait and run times per minute over the last hour: mean wait 20 ms, mean run 58 ms.");
  const quiet = describe(columns([minute("2026-12-01T10:00:00.000Z")], 10), "day", () => "10:00");
  assert.equal(quiet.throughput, "Jobs enqueued and completed per 10 minutes over the last 24 hours: nothing enqueued or completed.");
  assert.equal(quiet.failures, "Failures per 10 minutes over the last 24 hours: no failures.");
  assert.equal(quiet.latency, "Wait and run times per 10 minutes over the last 24 hours: no job started or ended.");
  assert.equal(tableCaption("emails", "day"),
    "Jobs of queue emails per 10 minutes over the last 24 hours, newest first (10-minute spans with nothing in them left out)");
});

test("a job's log: its reads, its lines' times and its status line (joblog.js)", async () => {
  const { clock, followMs, logPath, logStatus, pageLines } = await import("./static/joblog.js");
  assert.equal(logPath("q 1", "a/b"), `/queues/q%201/jobs/a%2Fb/logs?limit=${pageLines}`, "the whole log, from the oldest line kept");
  assert.equal(logPath("q", "j", "bGluZTox"), `/queues/q/jobs/j/logs?limit=${pageLines}&cursor=bGluZTox`, "on from a cursor");
  const at = new Date(2026, 10, 29, 9, 7, 5, 42); // local time, as the page shows it
  assert.equal(clock(at.toISOString()), "09:07:05.042");
  assert.equal(clock("not a time"), "not a time");
  assert.equal(logStatus(0, false), "No lines yet.");
  assert.equal(logStatus(1, false), "1 line, oldest first.");
  assert.equal(logStatus(1200, true), `${(1200).toLocaleString()} lines, oldest first. Following the job: new lines show every ${followMs / 1000} s.`);
});

test("a job's edit form sends only what changed (edit.js)", async () => {
  const { changeOfForm, editable, localInput, payloadText } = await import("./static/edit.js");
  assert.deepEqual(["pending", "delayed", "waiting", "active", "completed", "dead", "cancelled"].filter(editable),
    ["pending", "delayed", "waiting"]);
  const at = new Date(2026, 11, 1, 9, 5, 7, 250); // local time, as the input shows it
  assert.equal(localInput(at.toISOString()), "2026-12-01T09:05:07");
  assert.equal(localInput(undefined), "");
  const job = { id: "a", state: "delayed", payload: { n: 1 }, priority: 2, run_at: at.toISOString() };
  const unchanged = { payload: payloadText(job.payload), priority: "2", run_at: "2026-12-01T09:05:07" };
  assert.deepEqual(changeOfForm(job, unchanged), { error: "Nothing was changed." });
  assert.deepEqual(changeOfForm(job, { ...unchanged, run_at: "2026-12-01T09:05" }).body, { run_at: new Date(2026, 11, 1, 9, 5).toISOString() });
  assert.deepEqual(changeOfForm(job, { ...unchanged, payload: '{"n": 2}', priority: "0" }).body, { payload: { n: 2 }, priority: 0 });
  assert.deepEqual(changeOfForm(job, { ...unchanged, now: "on" }).body, { delay_ms: 0 });
  assert.deepEqual(changeOfForm(job, { ...unchanged, run_at: "" }), { error: "Nothing was changed." }, "an emptied time keeps the job's");
  assert.deepEqual(changeOfForm({ id: "b", state: "pending" }, { payload: "null", priority: "0", run_at: "" }), { error: "Nothing was changed." });
  assert.match(changeOfForm(job, { ...unchanged, payload: "{" }).error, /not JSON/);
  assert.match(changeOfForm(job, { ...unchanged, priority: "10" }).error, /0 to 9/);
  assert.match(changeOfForm(job, { ...unchanged, priority: "" }).error, /0 to 9/);
});
