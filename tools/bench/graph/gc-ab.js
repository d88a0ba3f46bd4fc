#!/usr/bin/env node
// What an adjacency costs the garbage collector: builds the same seeded graph (default: the
// synthetic 1,000,000 edges) with two builds of @mmdb/graph, each in its own fresh process
// (--expose-gc), and reports for each: JS heap added (traced by the GC) and typed-array
// bytes (not traced), the pause of a full GC, and a neighbors loop that also makes
// request-like garbage (~20 KB per query, as the HTTPS path does), with its p50/p99 and the
// GC pauses that fell inside it. Both variants run in the same window, alternating.
//
//   node tools/bench/graph/gc-ab.js [--old <dir with adjacency.js/traverse.js>] [--edges 1000000] [--rounds 2]
//
// Without --old only the current build (@mmdb/graph) is measured. To compare with the
// committed version of another revision, transpile its libs/graph/src/{adjacency,traverse}.ts
// to a folder (see README.md).
'use strict';
const { fork } = require('child_process');
const path = require('path');
const os = require('os');

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : dflt;
};

if (process.env.GC_AB_CHILD) {
  child().catch((e) => {
    console.error(e);
    process.exit(1);
  });
} else {
  parent().catch((e) => {
    console.error(e);
    process.exit(1);
  });
}

async function parent() {
  const variants = [['current', '@mmdb/graph']];
  if (opt('old')) variants.unshift(['old', path.resolve(opt('old'), 'adjacency.js')]);
  const edges = Number(opt('edges', 1_000_000));
  const rounds = Number(opt('rounds', 2));
  const rows = [];
  for (let r = 0; r < rounds; r++) {
    for (const [label, mod] of variants) {
      const res = await new Promise((resolve, reject) => {
        const c = fork(__filename, [], { execArgv: ['--expose-gc'], env: { ...process.env, GC_AB_CHILD: '1', GC_AB_MODULE: mod, GC_AB_EDGES: String(edges) } });
        c.on('message', resolve);
        c.on('exit', (code) => code && reject(new Error(`${label} exited ${code}`)));
      });
      rows.push({ label, round: r, load: os.loadavg()[0].toFixed(2), ...res });
      console.log(JSON.stringify(rows[rows.length - 1]));
    }
  }
}

async function child() {
  const { performance, PerformanceObserver } = require('perf_hooks');
  const { synthetic, rng } = require('./data');
  const { Adjacency } = require(process.env.GC_AB_MODULE);
  const m = Number(process.env.GC_AB_EDGES);
  let edges = synthetic(m / 10, m, 42);
  const srcs = [...new Set(edges.slice(0, 50_000).map((e) => e[0]))];
  const r = rng(1);
  const queries = Array.from({ length: 20_000 }, () => srcs[Math.floor(r() * srcs.length)]);
  let adj = new Adjacency();
  const t0 = performance.now();
  for (const [src, dst, weight] of edges) adj.append({ src, dst, owner: null, weight });
  if (typeof adj.compact === 'function') adj.compact();
  const buildMs = performance.now() - t0;
  edges = null;
  global.gc();
  global.gc();
  const after = process.memoryUsage();
  const pauses = [];
  for (let i = 0; i < 5; i++) {
    const s = performance.now();
    global.gc();
    pauses.push(performance.now() - s);
  }
  pauses.sort((a, b) => a - b);
  const gcs = [];
  new PerformanceObserver((l) => {
    for (const e of l.getEntries()) gcs.push({ at: e.startTime, ms: e.duration });
  }).observe({ entryTypes: ['gc'] });
  // neighbors with request-like garbage around each query
  let sink = 0;
  const ms = new Float64Array(queries.length);
  const at = new Float64Array(queries.length);
  for (let i = 0; i < queries.length + 2000; i++) {
    const q = queries[i % queries.length];
    const s = performance.now();
    const junk = [];
    for (let k = 0; k < 150; k++) junk.push({ k, s: `h${k}`, v: [k, k + 1] });
    const body = JSON.stringify(adj.neighbors(q));
    sink += body.length + junk.length;
    const e = performance.now();
    if (i >= 2000) {
      ms[i - 2000] = e - s;
      at[i - 2000] = s;
    }
  }
  await new Promise((res) => setTimeout(res, 200)); // gc entries are delivered asynchronously
  const sorted = Float64Array.from(ms).sort();
  const p = (x) => sorted[Math.floor(x * (sorted.length - 1))];
  const loopStart = at[0];
  // the adjacency's share of the heap: the same heap with and without it
  adj = null;
  global.gc();
  global.gc();
  const before = process.memoryUsage();
  const inLoop = gcs.filter((g) => g.at >= loopStart);
  process.send({
    edges: m,
    buildMs: Math.round(buildMs),
    jsHeapAddedMB: +((after.heapUsed - before.heapUsed) / 1048576).toFixed(1),
    arrayBuffersMB: +((after.arrayBuffers - before.arrayBuffers) / 1048576).toFixed(1),
    fullGcMs: +pauses[2].toFixed(1),
    loop: { n: ms.length, p50: +p(0.5).toFixed(4), p99: +p(0.99).toFixed(4), max: +sorted[sorted.length - 1].toFixed(3) },
    loopGc: { n: inLoop.length, totalMs: +inLoop.reduce((a, g) => a + g.ms, 0).toFixed(1), maxMs: +Math.max(0, ...inLoop.map((g) => g.ms)).toFixed(2) },
    sink: sink > 0,
  });
  process.exit(0);
}
