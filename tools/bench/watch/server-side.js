/**
 * What the server itself saw during a phase of the watch benchmark, from two scrapes of its
 * /metrics: the PUT latency histogram's delta (request arrival to response, as the server's
 * onResponse hook times it; p50/p99 interpolated inside the histogram's buckets, so a figure
 * is only as fine as the bucket it falls in: 0.5, 1, 2, 5, 10, 25, 50, 100 ms…) and the event
 * loop's delay (prom-client's monitorEventLoopDelay, reset at every scrape: p99 and max over the
 * phase). Beside the client's write latency it separates the server's own work from the time a
 * request spends in the client, the kernel and the scheduler.
 */
'use strict';

/** {buckets: Map<le, count>} of the PUT 200 series, and the event-loop gauges, from a /metrics text. */
function parse(text) {
  const buckets = new Map();
  for (const m of text.matchAll(/^db_http_request_duration_ms_bucket\{([^}]*)\} (\S+)$/gm)) {
    const labels = m[1];
    if (!labels.includes('method="PUT"') || !labels.includes('status="200"')) continue;
    const le = /le="([^"]+)"/.exec(labels)[1];
    const k = le === '+Inf' ? Infinity : Number(le);
    buckets.set(k, (buckets.get(k) ?? 0) + Number(m[2]));
  }
  const gauge = (name) => {
    const g = new RegExp(`^db_process_nodejs_eventloop_lag_${name}_seconds(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text);
    return g ? Number(g[1]) * 1000 : NaN;
  };
  // GC pauses by kind (prom-client's histogram: count and total seconds), cumulative
  const gc = {};
  for (const m of text.matchAll(/^db_process_nodejs_gc_duration_seconds_(sum|count)\{kind="(\w+)"\} (\S+)$/gm)) {
    gc[m[2]] ??= { count: 0, ms: 0 };
    if (m[1] === 'sum') gc[m[2]].ms = Number(m[3]) * 1000;
    else gc[m[2]].count = Number(m[3]);
  }
  const one = (name) => {
    const g = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
    return g ? Number(g[1]) : NaN;
  };
  // the fan-out's longest turn since the previous scrape (ms), and streams' reads behind their buffer (cumulative)
  return { buckets, loopP99: gauge('p99'), loopMax: gauge('max'), gc, longestTurn: one('db_watch_fanout_longest_turn_seconds') * 1000, catchUps: one('db_watch_catchups_total') };
}

/** GC pauses between two scrapes: {major, minor}: {count, ms}. */
function gcDelta(before, after) {
  const d = {};
  for (const kind of ['major', 'minor', 'incremental']) {
    const a = after.gc[kind] ?? { count: 0, ms: 0 };
    const b = before.gc[kind] ?? { count: 0, ms: 0 };
    d[kind] = { count: a.count - b.count, ms: a.ms - b.ms };
  }
  return d;
}

/** The cumulative histogram's counts between two scrapes, per bucket bound. */
function delta(before, after) {
  return new Map([...after.buckets.keys()].map((le) => [le, (after.buckets.get(le) ?? 0) - (before.buckets.get(le) ?? 0)]));
}

/** The p-quantile of cumulative bucket counts (le → count), interpolated linearly inside its bucket. */
function quantileOf(counts, p) {
  const les = [...counts.keys()].sort((a, b) => a - b);
  const cum = les.map((le) => counts.get(le) ?? 0);
  const total = cum[cum.length - 1] ?? 0;
  if (!total) return NaN;
  const want = total * p;
  let lo = 0;
  let below = 0;
  for (let i = 0; i < les.length; i++) {
    if (cum[i] >= want) {
      if (les[i] === Infinity) return lo;
      const inBucket = cum[i] - below;
      return lo + ((les[i] - lo) * (want - below)) / Math.max(1, inBucket);
    }
    lo = les[i];
    below = cum[i];
  }
  return NaN;
}

/**
 * Scrapes before a phase; `.end()` scrapes after it and answers {p50, p99, loopP99, loopMax} in ms,
 * the phase's bucket counts, its GC pauses by kind ({count, ms}), the fan-out's longest turn (ms)
 * and the streams' reads behind their buffer (catch-ups): what tells a run with a bad tail apart.
 */
async function serverSide(scrape) {
  const before = parse(await scrape());
  return {
    async end() {
      const after = parse(await scrape());
      const counts = delta(before, after);
      return {
        p50: quantileOf(counts, 0.5),
        p99: quantileOf(counts, 0.99),
        loopP99: after.loopP99,
        loopMax: after.loopMax,
        counts,
        gc: gcDelta(before, after),
        longestTurn: after.longestTurn,
        catchUps: (after.catchUps || 0) - (before.catchUps || 0),
      };
    },
  };
}

/** p50 / p99 of several phases' requests together (their bucket counts summed). */
function pooled(...phases) {
  const counts = new Map();
  for (const p of phases) for (const [le, n] of p.counts) counts.set(le, (counts.get(le) ?? 0) + n);
  return { p50: quantileOf(counts, 0.5), p99: quantileOf(counts, 0.99) };
}

module.exports = { serverSide, pooled };
