// bulk.js: a queue's bulk actions (POST /queues/{q}/retry, /clean and
// /promote). Each call takes up to a limit of jobs in one atomic step and
// says whether more are left; runBulk calls again while it does, never
// past the count the person confirmed, and reports the running total. The
// "Promote all" control of the delayed tab lives here too; the dead letters
// panel (deadletters.js) holds "Retry all" and the clean-up form.

import { call, queuePath } from "./api.js";
import { button, h, plural } from "./dom.js";
import { may } from "./role.js";

/** The jobs one call takes at most: the service's default. */
export const bulkLimit = 1000;

/** The count each action's answer gives. */
const countOf = { retry: "retried", clean: "removed", promote: "promoted" };

/**
 * Runs bulk action verb ("retry", "clean", "promote") on queue with body,
 * calling again while the answer says more, until upTo jobs were taken or
 * a call took none (jobs that others move meanwhile cannot keep it going).
 * Calls progress(total) after each call and returns the total.
 */
export async function runBulk(queue, verb, body, upTo, progress) {
  let total = 0;
  while (total < upTo) {
    const answer = await call("POST", `${queuePath(queue)}/${verb}`,
      { ...body, limit: Math.min(bulkLimit, upTo - total) });
    const n = answer[countOf[verb]] || 0;
    total += n;
    progress(total);
    if (!answer.more || n === 0) {
      break;
    }
  }
  return total;
}

/** The ages the clean-up form offers: finished more than this long ago (0: any). */
export const ages = [
  { label: "1 hour", ms: 3_600_000 },
  { label: "1 day", ms: 86_400_000 },
  { label: "7 days", ms: 7 * 86_400_000 },
  { label: "30 days", ms: 30 * 86_400_000 },
  { label: "any time", ms: 0 },
];

/** The states the clean-up form offers; "finished" stands for all three. */
export const cleanStates = ["completed", "dead", "cancelled", "finished"];

/** The jobs of a clean of state ("finished": all three), in words. */
function jobsOf(state) {
  return state === "finished" ? "completed, dead and cancelled jobs" : `${state} jobs`;
}

/** "that finished more than 1 day ago": the age of a clean, in words ("" for 0, any age). */
function ageOf(ms) {
  const age = ages.find((a) => a.ms === ms);
  return ms === 0 ? "" : `that finished more than ${age ? age.label : `${ms} ms`} ago`;
}

/** What a clean of state at age ms deletes, in words: "dead jobs that finished more than 1 day ago". */
export function cleanWhat(state, ms) {
  return ms === 0 ? `all ${jobsOf(state)}` : `${jobsOf(state)} ${ageOf(ms)}`;
}

/** The question a clean asks before it runs. */
export function cleanQuestion(queue, state, ms) {
  const what = ms === 0 ? `all ${jobsOf(state)} of queue "${queue}"` : `the ${jobsOf(state)} of queue "${queue}" ${ageOf(ms)}`;
  return `Delete ${what}? They are deleted for good, with their logs.`;
}

/**
 * Deletes what the clean-up form chose of queue, state by state, saying
 * how far it got through say(text); returns how many it deleted. upTo is
 * how many jobs of each state the queue held (counts), the most it takes.
 */
export async function clean(queue, state, ms, counts, say) {
  let total = 0;
  for (const s of state === "finished" ? ["completed", "dead", "cancelled"] : [state]) {
    const before = total;
    total += await runBulk(queue, "clean", { state: s, older_than_ms: ms }, counts[s] || 0,
      (n) => say(`Deleted ${plural(before + n, "job")} so far…`));
  }
  return total;
}

/**
 * The "Promote all" control of a queue's delayed tab: show(queue, n)
 * offers it for n delayed jobs to a key that may promote; after() is
 * called once the promotions are done.
 */
export class PromoteAll {
  constructor(ctx, after) {
    this.ctx = ctx;
    this.after = after;
    this.busy = false;
    this.status = h("span", { class: "status", role: "status" });
    this.button = button("Promote all", "Promote all delayed jobs", () => this.run());
    this.panel = h("p", { class: "bulk", hidden: true }, this.button, " ", this.status);
  }

  show(queue, delayed) {
    if (this.queue !== queue) {
      this.status.textContent = "";
    }
    this.queue = queue;
    this.delayed = delayed;
    this.panel.hidden = !may("promote") || (delayed === 0 && !this.busy);
    this.button.setAttribute("aria-label", `Promote all ${plural(delayed, "delayed job")} of queue ${queue}`);
    this.button.disabled = this.busy;
  }

  /** Asks, then promotes every delayed job, earliest run-at first. */
  async run() {
    const queue = this.queue;
    const n = this.delayed;
    if (this.busy || n === 0 ||
      !confirm(`Promote all ${plural(n, "delayed job")} of queue "${queue}"? They become pending now, earliest first.`)) {
      return;
    }
    this.busy = true;
    this.button.disabled = true;
    const say = (text) => {
      if (this.queue === queue) {
        this.status.textContent = text;
      }
    };
    try {
      const done = await runBulk(queue, "promote", {}, n, (total) => say(`Promoted ${total.toLocaleString()} of ${n.toLocaleString()}…`));
      const summary = `Promoted ${plural(done, "delayed job")} of queue ${queue}.`;
      say(summary);
      this.ctx.notice(summary);
    } catch (err) {
      say("");
      this.ctx.report(err);
    } finally {
      this.busy = false;
      this.button.disabled = false;
      this.after();
    }
  }
}
