// stats.js: a queue's history (GET /queues/{queue}/stats, one entry per
// minute) shaped for the charts: the two ranges the queue page offers, the
// minutes summed into buckets, the sums of each series, and the words of
// the charts' text alternatives. It needs no page (modules.test.mjs tests
// it); charts.js draws what it makes.

import { call, queuePath } from "./api.js";
import { duration } from "./dom.js";

/**
 * The ranges of the queue page's charts: how many minutes are read, and
 * how many minutes each point sums. 24 hours of single minutes (1440
 * points) are too dense to read on a laptop, let alone a phone, so that
 * range is shown in 10-minute buckets (144 points).
 */
export const ranges = {
  hour: { minutes: 60, bucket: 1, button: "Last hour", words: "the last hour", per: "minute", spans: "minutes" },
  day: { minutes: 1440, bucket: 10, button: "Last 24 hours", words: "the last 24 hours", per: "10 minutes", spans: "10-minute spans" },
};

/** The counts of a minute that the charts show, in the order of the table. */
export const counts = ["enqueued", "completed", "failed", "dead", "cancelled"];

/** Reads queue's last minutes: {queue, oldest_pending_age_ms, minutes}. */
export function readStats(queue, minutes) {
  return call("GET", `${queuePath(queue)}/stats?minutes=${minutes}`);
}

/**
 * Sums the API's minutes into buckets of size minutes, aligned on the
 * clock (10:00, 10:10, ...), oldest first; the last bucket holds the
 * current minute, still filling. Returns columns for uPlot: at (each
 * bucket's start, in Unix seconds), each count, wait and run (the
 * bucket's mean in ms, null when nothing started or ended, so that the
 * line breaks there rather than reading 0), and started and ended, the
 * weights of the two means.
 *
 * A bucket's mean wait weighs each minute by the jobs that started in it,
 * as the API's per-minute mean does. Its mean run weighs each minute by
 * the attempts that ended in it (completed, retried and dead), which the
 * API does not count exactly (a timeout ends no run), so over 10 minutes
 * the mean run is a close estimate; per minute it is the API's own.
 */
export function columns(minutes, size = 1) {
  const out = { at: [], wait: [], run: [], started: [], ended: [] };
  for (const key of counts) {
    out[key] = [];
  }
  const bucketMs = size * 60_000;
  let start = null;
  let sums = null;
  const flush = () => {
    out.at.push(start / 1000);
    for (const key of counts) {
      out[key].push(sums[key]);
    }
    out.wait.push(sums.started > 0 ? sums.waitMs / sums.started : null);
    out.run.push(sums.ended > 0 ? sums.runMs / sums.ended : null);
    out.started.push(sums.started);
    out.ended.push(sums.ended);
  };
  for (const m of minutes) {
    const at = new Date(m.at).getTime();
    const bucket = Math.floor(at / bucketMs) * bucketMs;
    if (bucket !== start) {
      if (sums) {
        flush();
      }
      start = bucket;
      sums = { started: 0, waitMs: 0, ended: 0, runMs: 0 };
      for (const key of counts) {
        sums[key] = 0;
      }
    }
    for (const key of counts) {
      sums[key] += m[key] || 0;
    }
    const started = m.started || 0;
    sums.started += started;
    sums.waitMs += (m.wait_ms_mean || 0) * started;
    let ended = (m.completed || 0) + (m.failed || 0) + (m.dead || 0);
    if (ended === 0 && m.run_ms_mean > 0) {
      ended = 1; // a run that ended with no count of it (a fail the API counts elsewhere)
    }
    sums.ended += ended;
    sums.runMs += (m.run_ms_mean || 0) * ended;
  }
  if (sums) {
    flush();
  }
  return out;
}

/** Each count's sum over the columns: {enqueued, completed, ...}. */
export function totals(cols) {
  const out = {};
  for (const key of counts) {
    out[key] = cols[key].reduce((sum, n) => sum + n, 0);
  }
  return out;
}

/**
 * The mean of a latency column over the whole range, weighing each bucket
 * by weights (cols.started for wait, cols.ended for run); null when no
 * bucket has a value.
 */
export function overallMean(values, weights) {
  let sum = 0;
  let n = 0;
  values.forEach((v, i) => {
    if (v !== null) {
      sum += v * weights[i];
      n += weights[i];
    }
  });
  return n > 0 ? sum / n : null;
}

/** "250 ms", "1.3 s", "2 min 5 s": a time in ms, to a tenth of a second under a minute. */
export function msText(ms) {
  if (ms < 1000) {
    return `${Math.round(ms).toLocaleString()} ms`;
  }
  if (ms < 60_000) {
    return `${(Math.round(ms / 100) / 10).toLocaleString()} s`;
  }
  return duration(ms);
}

/** The queue's latency now in words: "Oldest pending job: 1.3 s" (not "waiting", a state of its own). */
export function latencyText(ms) {
  return ms > 0 ? `Oldest pending job: ${msText(ms)}` : "Oldest pending job: none, no job is pending";
}

/** The queues table's text for a queue's sparkline: "142 completed in the last hour". */
export function sparkLabel(completed) {
  return `${completed.toLocaleString()} completed in the last hour`;
}

/** "3 enqueued, 2 completed": counts by their words, or none when all are 0. */
function listed(sums, words) {
  const parts = Object.entries(words).filter(([key]) => sums[key] > 0).map(([key, word]) => `${sums[key].toLocaleString()} ${word}`);
  return parts.join(", ");
}

/**
 * The text alternatives of the three charts, as one sentence each, for
 * range (a key of ranges); timeOf(unixSeconds) says a bucket's time.
 */
export function describe(cols, range, timeOf) {
  const r = ranges[range];
  const sums = totals(cols);
  const busiest = cols.completed.reduce((best, n, i) => (n > cols.completed[best] ? i : best), 0);
  let throughput = listed(sums, { enqueued: "enqueued", completed: "completed" }) || "nothing enqueued or completed";
  if (sums.completed > 0) {
    throughput += `; most completed in one ${r.per}: ${cols.completed[busiest].toLocaleString()}, ${r.bucket > 1 ? "from" : "at"} ${timeOf(cols.at[busiest])}`;
  }
  const failures = listed(sums, { failed: "failed and retried", dead: "dead", cancelled: "cancelled" }) || "no failures";
  const wait = overallMean(cols.wait, cols.started);
  const run = overallMean(cols.run, cols.ended);
  const latency = [wait === null ? "" : `mean wait ${msText(wait)}`, run === null ? "" : `mean run ${msText(run)}`]
    .filter((s) => s !== "").join(", ") || "no job started or ended";
  return {
    throughput: `Jobs enqueued and completed per ${r.per} over ${r.words}: ${throughput}.`,
    failures: `Failures per ${r.per} over ${r.words}: ${failures}.`,
    latency: `Wait and run times per ${r.per} over ${r.words}: ${latency}.`,
  };
}

/** The caption of the charts' table, for range. */
export function tableCaption(queue, range) {
  const r = ranges[range];
  return `Jobs of queue ${queue} per ${r.per} over ${r.words}, newest first (${r.spans} with nothing in them left out)`;
}

/** The indexes of the buckets with anything in them, newest first: the table's rows. */
export function busyBuckets(cols) {
  const out = [];
  for (let i = cols.at.length - 1; i >= 0; i--) {
    if (counts.some((key) => cols[key][i] > 0) || cols.wait[i] !== null || cols.run[i] !== null) {
      out.push(i);
    }
  }
  return out;
}
