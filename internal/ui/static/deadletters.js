// deadletters.js: the "Dead letters" panel of a queue's page. It reads the
// first page of dead jobs (at most maxRetry), groups them by last_error and
// offers to retry each group: one retry request per job, with progress, so
// that a group's click never retries more than the jobs it lists.
// "Retry all" retries every dead job of the queue, listed or not,
// and the clean-up form deletes finished jobs older than an age: both
// through the bulk actions (bulk.js), after a confirm. The retry buttons
// are rendered only for a key whose role may retry, the clean-up form for
// one that may remove (role.js).

import { call, jobPath, jobsPage } from "./api.js";
import { ages, clean, cleanQuestion, cleanStates, cleanWhat, runBulk } from "./bulk.js";
import { button, h, keepFocus, plural } from "./dom.js";
import { may } from "./role.js";
import { jobHref } from "./routes.js";

/** The most dead jobs the panel reads, and so the most one click retries. */
export const maxRetry = 100;

/**
 * The panel's opening words: how many jobs died and why jobs die, which of
 * them are listed, and what the retry buttons do (or that retrying needs
 * an admin key).
 */
export function intro(deadCount, listed, groups) {
  if (deadCount === 0) {
    return "No job of this queue is dead.";
  }
  const died = deadCount === 1
    ? "1 job died: it ran out of attempts, failed fatally or stalled too often."
    : `${plural(deadCount, "job")} died: they ran out of attempts, failed fatally or stalled too often.`;
  const which = listed < deadCount ? ` The ${listed} most recent are listed, grouped by their last error.`
    : groups > 1 ? " They are grouped by their last error." : "";
  if (!may("retry")) {
    return `${died}${which} Retrying needs an admin key.`;
  }
  const buttons = groups > 1
    ? " Each group's button sends its jobs back to pending with a fresh attempt budget."
    : ` The button sends ${listed === 1 ? "it" : "them"} back to pending with a fresh attempt budget.`;
  const all = retryAllShown(deadCount, listed, groups)
    ? ` "Retry all ${deadCount.toLocaleString()}" does so for every dead job of the queue, listed or not, oldest first.` : "";
  const next = listed < deadCount ? ` Once they are retried, the next ${Math.min(maxRetry, deadCount - listed)} are listed.` : "";
  return died + which + buttons + all + next;
}

/** Whether "Retry all" is offered: when it does more than the one group's button would. */
export function retryAllShown(deadCount, listed, groups) {
  return groups > 1 || listed < deadCount;
}

/** Groups jobs by last_error, the largest group first. */
export function groupByError(jobs) {
  const groups = new Map();
  for (const job of jobs) {
    const reason = job.last_error || "(no error recorded)";
    if (!groups.has(reason)) {
      groups.set(reason, []);
    }
    groups.get(reason).push(job);
  }
  return [...groups].map(([reason, list]) => ({ reason, jobs: list }))
    .sort((a, b) => b.jobs.length - a.jobs.length || a.reason.localeCompare(b.reason));
}

/**
 * The panel: load(queue, deadCount, current, counts) fills it (hidden when
 * no job is dead and the key has nothing to clean up); afterRetry() is
 * called once a group's retries, a retry of all or a clean-up are done.
 */
export class DeadLetters {
  constructor(ctx, afterRetry) {
    this.ctx = ctx;
    this.afterRetry = afterRetry;
    this.busy = false; // a group's retries, a retry of all or a clean-up are running
    this.heading = h("h3", { id: "dead-heading", tabIndex: -1 }, "Dead letters");
    this.intro = h("p");
    this.progress = h("p", { class: "status", role: "status" });
    this.list = h("ul", { class: "groups" });
    this.all = h("p"); // "Retry all N", when the role may retry
    this.cleanup = this.cleanForm();
    this.panel = h("section", { class: "dead-letters", "aria-labelledby": "dead-heading", hidden: true },
      this.heading, this.intro, this.all, this.list, this.progress, this.cleanup);
  }

  /** The clean-up form: which finished jobs, finished how long ago, and Delete. */
  cleanForm() {
    this.cleanState = h("select", { id: "clean-state", name: "state" }, cleanStates.map((s) =>
      h("option", { value: s }, s === "finished" ? "completed, dead and cancelled" : s)));
    this.cleanAge = h("select", { id: "clean-age", name: "age" }, ages.map((a) =>
      h("option", { value: String(a.ms) }, a.ms === 0 ? "at any time (all of them)" : `more than ${a.label} ago`)));
    this.cleanState.value = "dead";
    this.cleanAge.value = String(ages[2].ms);
    const form = h("form", { class: "cleanup", hidden: true },
      h("fieldset", {},
        h("legend", {}, "Delete all finished jobs older than…"),
        h("label", { htmlFor: "clean-state" }, "Jobs"), " ", this.cleanState, " ",
        h("label", { htmlFor: "clean-age" }, "that finished"), " ", this.cleanAge, " ",
        h("button", { type: "submit", "aria-label": "Delete the chosen finished jobs" }, "Delete…")));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.cleanUp();
    });
    return form;
  }

  /**
   * Fills the panel with queue's dead jobs; current() says whether the page
   * that asked is still shown, so that a late answer draws nothing. counts
   * (the queue's, by state) say whether the clean-up form has anything to
   * delete: the panel shows for it alone when no job is dead.
   */
  async load(queue, deadCount, current, counts = {}) {
    if (this.busy && this.queue === queue) {
      return; // the panel keeps showing the group being retried until it is done
    }
    this.queue = queue;
    this.deadCount = deadCount;
    this.counts = counts;
    const finished = (counts.completed || 0) + (counts.dead || 0) + (counts.cancelled || 0);
    this.cleanup.hidden = !may("remove") || finished === 0;
    this.panel.hidden = deadCount === 0 && this.cleanup.hidden;
    if (deadCount === 0) {
      this.intro.textContent = intro(0, 0, 0);
      this.list.replaceChildren();
      this.all.replaceChildren();
      return;
    }
    const page = await jobsPage(queue, "dead", maxRetry);
    if (!current() || this.queue !== queue) {
      return;
    }
    const jobs = page.jobs || [];
    const groups = groupByError(jobs);
    this.intro.textContent = intro(deadCount, jobs.length, groups.length);
    keepFocus(this.list, () => this.list.replaceChildren(...groups.map((group) => this.group(group))));
    keepFocus(this.all, () => this.all.replaceChildren(...this.retryAll(jobs.length, groups.length)));
  }

  /** "Retry all N": every dead job of the queue, listed or not (retryAllShown says when). */
  retryAll(listed, groups) {
    if (!may("retry") || !retryAllShown(this.deadCount, listed, groups)) {
      return [];
    }
    const n = this.deadCount;
    const b = button(`Retry all ${n.toLocaleString()}`, `Retry all ${plural(n, "dead job")} of queue ${this.queue}, whatever their error`,
      () => this.retryEvery());
    b.dataset.focusKey = "retry-all"; // the label holds the count, which changes
    return [b];
  }

  /** Asks, then retries every dead job of the queue, oldest first, a thousand a call. */
  async retryEvery() {
    const queue = this.queue;
    const n = this.deadCount;
    if (this.busy || !confirm(`Retry all ${plural(n, "dead job")} of queue "${queue}"? They go back to pending with a fresh attempt budget, oldest first.`)) {
      return;
    }
    await this.bulk(queue,
      (say) => runBulk(queue, "retry", { state: "dead" }, n, (total) => say(`Retried ${total.toLocaleString()} of ${n.toLocaleString()}…`)),
      (done) => `Retried ${plural(done, "dead job")} of queue ${queue}.`);
  }

  /** Asks, then deletes the finished jobs the clean-up form chose. */
  async cleanUp() {
    const queue = this.queue;
    const state = this.cleanState.value;
    const ms = Number(this.cleanAge.value);
    if (this.busy || !confirm(cleanQuestion(queue, state, ms))) {
      return;
    }
    const counts = this.counts;
    await this.bulk(queue, (say) => clean(queue, state, ms, counts, say),
      (done) => `Deleted ${plural(done, "job")} of queue ${queue}: ${cleanWhat(state, ms)}.`);
  }

  /**
   * Runs work(say), a bulk action on queue that reports its progress
   * through say, as the panel's one action at a time; then says
   * summary(its count) and reloads the page.
   */
  async bulk(queue, work, summary) {
    this.busy = true;
    const say = (text) => {
      if (this.queue === queue) { // the panel may show another queue by now
        this.progress.textContent = text;
      }
    };
    try {
      const text = summary(await work(say));
      say(text);
      this.ctx.notice(text);
    } catch (err) {
      say("");
      this.ctx.report(err);
    } finally {
      this.busy = false;
      this.afterRetry();
    }
  }

  group({ reason, jobs }) {
    const count = plural(jobs.length, "job");
    const ids = h("ul", { class: "ids" }, jobs.slice(0, 10).map((job) =>
      h("li", {}, h("a", { href: jobHref(this.queue, job.id) }, job.id))));
    const more = jobs.length > 10 ? h("p", { class: "status" }, `and ${jobs.length - 10} more`) : null;
    const short = reason.length > 80 ? `${reason.slice(0, 80)}…` : reason; // a label, not a stack trace
    const text = jobs.length === 1 ? "Retry this job" : `Retry these ${jobs.length}`;
    const retry = may("retry") ? button(text, `${text}, failed with: ${short}`, () => this.retry(jobs)) : null;
    if (retry) {
      retry.dataset.focusKey = `retry:${reason}`; // the label holds the count, which changes
    }
    return h("li", { class: "group" },
      h("p", {}, h("strong", {}, count), " — ", h("code", { class: "wrap" }, reason)),
      ids, more, retry);
  }

  /** Retries jobs one request at a time, showing progress, then reloads. */
  async retry(jobs) {
    if (this.busy) {
      return;
    }
    this.busy = true;
    const queue = this.queue; // the queue these jobs belong to, even if another page is opened meanwhile
    let done = 0;
    const failed = [];
    const say = (text) => {
      if (this.queue === queue) { // the panel may show another queue by now
        this.progress.textContent = text;
      }
    };
    for (const job of jobs.slice(0, maxRetry)) {
      say(`Retrying ${done + failed.length + 1} of ${jobs.length}…`);
      try {
        await call("POST", `${jobPath(queue, job.id)}/retry`);
        done++;
      } catch (err) {
        failed.push(`${job.id}: ${err.message}`);
      }
    }
    this.busy = false;
    const summary = `Retried ${done} of ${plural(jobs.length, "job")}.` +
      (failed.length ? ` ${failed.length} failed: ${failed.slice(0, 3).join("; ")}` : "");
    say(summary);
    this.ctx.notice(summary);
    this.afterRetry();
  }
}
