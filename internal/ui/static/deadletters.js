// deadletters.js: the "Dead letters" panel of a queue's page. It reads the
// first page of dead jobs (at most maxRetry), groups them by last_error and
// offers to retry each group, or every job listed: one retry request per
// job, with progress, so that a click never retries more than the jobs it
// lists. The retry buttons are rendered only for a key whose role may
// retry (role.js).

import { call, jobPath, jobsPage } from "./api.js";
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
  const died = deadCount === 1
    ? "1 job died: it ran out of attempts, failed fatally or stalled too often."
    : `${plural(deadCount, "job")} died: they ran out of attempts, failed fatally or stalled too often.`;
  const which = listed < deadCount ? ` The ${listed} most recent are listed, grouped by their last error.`
    : groups > 1 ? " They are grouped by their last error." : "";
  if (!may("retry")) {
    return `${died}${which} Retrying needs an admin key.`;
  }
  const buttons = groups > 1
    ? ` Each group's button sends its jobs back to pending with a fresh attempt budget; "Retry all ${listed} listed" sends every job listed.`
    : ` The button sends ${listed === 1 ? "it" : "them"} back to pending with a fresh attempt budget.`;
  const next = listed < deadCount ? ` Once they are retried, the next ${Math.min(maxRetry, deadCount - listed)} are listed.` : "";
  return died + which + buttons + next;
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
 * The panel: load(queue, deadCount) fills it (hidden when there are no
 * dead jobs); afterRetry() is called once a group's retries are done.
 */
export class DeadLetters {
  constructor(ctx, afterRetry) {
    this.ctx = ctx;
    this.afterRetry = afterRetry;
    this.busy = false; // a group's retries are running
    this.heading = h("h3", { id: "dead-heading", tabIndex: -1 }, "Dead letters");
    this.intro = h("p");
    this.progress = h("p", { class: "status", role: "status" });
    this.list = h("ul", { class: "groups" });
    this.all = h("p"); // "Retry all N listed", when the role may retry
    this.panel = h("section", { class: "dead-letters", "aria-labelledby": "dead-heading", hidden: true },
      this.heading, this.intro, this.all, this.list, this.progress);
  }

  /**
   * Fills the panel with queue's dead jobs; current() says whether the page
   * that asked is still shown, so that a late answer draws nothing.
   */
  async load(queue, deadCount, current) {
    if (this.busy && this.queue === queue) {
      return; // the panel keeps showing the group being retried until it is done
    }
    this.queue = queue;
    this.panel.hidden = deadCount === 0;
    if (deadCount === 0) {
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
    keepFocus(this.all, () => this.all.replaceChildren(...this.retryAll(jobs, groups.length)));
  }

  /** "Retry all N listed", when there are several groups (with one, its own button is the same click). */
  retryAll(jobs, groups) {
    if (!may("retry") || groups < 2) {
      return [];
    }
    const text = `Retry all ${jobs.length} listed`;
    const b = button(text, `${text} dead jobs of queue ${this.queue}, whatever their error`, () => this.retry(jobs));
    b.dataset.focusKey = "retry-all"; // the label holds the count, which changes
    return [b];
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
