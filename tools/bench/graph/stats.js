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

const { quiesce } = require('../quiet');

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
