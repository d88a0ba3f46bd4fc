'use strict';

/** Runs `fn(q)` over every query (after `warm` warm-up calls cycling over the queries) and returns latency percentiles in ms. */
async function measure(queries, fn, warm = Math.min(20, queries.length)) {
  for (let i = 0; i < warm; i++) await fn(queries[i % queries.length]);
  const t = new Float64Array(queries.length);
  for (let i = 0; i < queries.length; i++) {
    const s = process.hrtime.bigint();
    await fn(queries[i]);
    t[i] = Number(process.hrtime.bigint() - s) / 1e6;
  }
  return summarize(t);
}

function fmt(x) {
  return x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(3);
}

function printTable(title, rows) {
  console.log(`\n## ${title}`);
  const head = ['dataset', 'op', 'target', 'n', 'p50 ms', 'p99 ms', 'sqlite p50', 'sqlite p99', 'speed-up p50', 'speed-up p99', 'load 1m'];
  const lines = rows.map((r) => [
    r.dataset,
    r.op,
    r.target,
    String(r.m.n),
    fmt(r.m.p50),
    fmt(r.m.p99),
    r.peer ? fmt(r.peer.p50) : '-',
    r.peer ? fmt(r.peer.p99) : '-',
    r.peer ? `${(r.peer.p50 / r.m.p50).toFixed(1)}x` : '-',
    r.peer ? `${(r.peer.p99 / r.m.p99).toFixed(1)}x` : '-',
    r.load ?? '-',
  ]);
  const w = head.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i].length)));
  const row = (cells) => `| ${cells.map((c, i) => c.padEnd(w[i])).join(' | ')} |`;
  console.log(row(head));
  console.log(`|${w.map((x) => '-'.repeat(x + 2)).join('|')}|`);
  for (const l of lines) console.log(row(l));
}

module.exports = { measure, printTable };

/** CPU seconds (user + system, all threads) used so far by process `pid` (Linux /proc). */
function cpuSeconds(pid) {
  try {
    const f = require('fs').readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = f.slice(f.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ = 100)
  } catch {
    return NaN;
  }
}

/**
 * Waits until process `pid` (default: this one) has gone quiet: under `idle` of one core over
 * a `windowMs` window, so a timed loop never overlaps a load's tail (LevelDB compaction threads,
 * a lazy adjacency build, a GC of the load's garbage). Gives up after `maxMs`; returns the wait in ms.
 */
async function quiesce(pid = process.pid, { idle = 0.05, windowMs = 500, maxMs = 120_000 } = {}) {
  const t0 = Date.now();
  for (;;) {
    const a = cpuSeconds(pid);
    await new Promise((r) => setTimeout(r, windowMs));
    const b = cpuSeconds(pid);
    if (!(b - a >= idle * (windowMs / 1000)) || Date.now() - t0 > maxMs) return Date.now() - t0;
  }
}

/** Percentiles (ms) of an array of latencies. */
function summarize(ms) {
  const t = Float64Array.from(ms).sort();
  const at = (p) => t[Math.min(t.length - 1, Math.floor(p * (t.length - 1)))];
  return { n: t.length, p50: at(0.5), p99: at(0.99), max: t[t.length - 1] };
}

function loadavg() {
  return require('os').loadavg().map((x) => x.toFixed(2)).join(' ');
}

module.exports.quiesce = quiesce;
module.exports.summarize = summarize;
module.exports.loadavg = loadavg;
