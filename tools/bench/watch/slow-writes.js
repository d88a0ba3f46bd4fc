/**
 * What the slow writes of a phase of the watch benchmark waited on (`bench.js --trace 1`): each
 * write's window (from the bench sending it to its acknowledgement) aligned with what the server
 * recorded on the same clock (trace.js): GC pauses, the fan-out's turns, reads behind a buffer,
 * event-loop stalls, and the server's own time for that request (arrival to response finished).
 * The writes at or above the phase's p99 are compared with all of them: a cause is one that the
 * slow writes meet much more often than the others.
 */
'use strict';
const fs = require('fs');

/** The trace's records, by kind, each list sorted by start. */
function readTrace(file) {
  const by = { put: [], gc: [], turn: [], catchup: [], stall: [] };
  let text = '';
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return by;
  }
  for (const line of text.split('\n')) {
    if (!line) continue;
    const r = JSON.parse(line);
    by[r.k]?.push(r);
  }
  for (const k of Object.keys(by)) by[k].sort((a, b) => a.s - b.s);
  return by;
}

/** Sum of the overlaps of the intervals `xs` (sorted by start, {s, d}) with [s, e], and the longest one met. */
function overlap(xs, maxD, s, e, keep = () => true) {
  let lo = 0;
  let hi = xs.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (xs[mid].s < s - maxD) lo = mid + 1;
    else hi = mid;
  }
  let sum = 0;
  let cpu = 0;
  let longest = 0;
  for (let i = lo; i < xs.length && xs[i].s < e; i++) {
    const x = xs[i];
    if (!keep(x)) continue;
    const o = Math.min(e, x.s + (x.d ?? 0)) - Math.max(s, x.s);
    if (o > 0) {
      sum += Math.max(0, o);
      if (x.c !== undefined && x.d > 0) cpu += (x.c * Math.max(0, o)) / x.d;
      longest = Math.max(longest, x.d ?? 0);
    }
  }
  return { sum, cpu, longest, any: longest > 0 || sum > 0 };
}

/** How many of the instants `xs` (sorted, {s}) fall in [s, e). */
function count(xs, s, e) {
  let lo = 0;
  let hi = xs.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (xs[mid].s < s) lo = mid + 1;
    else hi = mid;
  }
  let n = 0;
  for (let i = lo; i < xs.length && xs[i].s < e; i++) n++;
  return n;
}

const median = (xs) => {
  const a = [...xs].sort((x, y) => x - y);
  return a.length ? a[Math.floor(a.length / 2)] : NaN;
};

/**
 * `writes`: [{s, a, p}] (sent, acknowledged, path) of one phase; `trace`: readTrace's records.
 * Answers the figures of the slow writes (≥ the phase's p99) and of all of them.
 */
function attribute(writes, trace) {
  const puts = new Map(trace.put.map((r) => [r.p, r]));
  const maxD = (xs) => xs.reduce((m, x) => Math.max(m, x.d ?? 0), 0);
  const md = { gc: maxD(trace.gc), turn: maxD(trace.turn), stall: maxD(trace.stall) };
  const lat = writes.map((w) => w.a - w.s).sort((x, y) => x - y);
  const p99 = lat[Math.min(lat.length - 1, Math.floor(lat.length * 0.99))];
  const sum = (ws) => {
    const o = { n: ws.length, client: [], server: [], major: 0, minor: 0, gcMs: 0, fanMs: 0, fan1: 0, turnMax: 0, stallMs: 0, stallCpu: 0, stalls: 0, catchups: 0, none: 0 };
    for (const w of ws) {
      const put = puts.get(w.p);
      o.client.push(w.a - w.s);
      if (put) o.server.push(put.e - put.s);
      const major = overlap(trace.gc, md.gc, w.s, w.a, (x) => x.major);
      const gc = overlap(trace.gc, md.gc, w.s, w.a);
      const fan = overlap(trace.turn, md.turn, w.s, w.a);
      const stall = overlap(trace.stall, md.stall, w.s, w.a);
      if (major.any) o.major++;
      else if (gc.any) o.minor++;
      o.gcMs += gc.sum;
      o.fanMs += fan.sum;
      if (fan.sum >= 1) o.fan1++;
      o.turnMax = Math.max(o.turnMax, fan.longest);
      o.stallMs += stall.sum;
      o.stallCpu += stall.cpu;
      if (stall.any) o.stalls++;
      const c = count(trace.catchup, w.s, w.a);
      if (c) o.catchups++;
      if (!gc.any && fan.sum < 0.5 && !stall.any && !c) o.none++;
    }
    return o;
  };
  return { p99, slow: sum(writes.filter((w) => w.a - w.s >= p99)), all: sum(writes) };
}

/**
 * The fan-out's turns over `ms` (default 1) between t0 and t1, and how many of them overlapped a
 * GC pause or an event-loop stall with little CPU in it (the turn then measured the pause or the
 * wait for a CPU, not fan-out work): what a long turn was.
 */
function longTurns(trace, t0, t1, ms = 1) {
  const md = trace.gc.reduce((m, x) => Math.max(m, x.d), 0);
  const ms2 = trace.stall.reduce((m, x) => Math.max(m, x.d), 0);
  let n = 0;
  let gc = 0;
  let waited = 0;
  let longest = 0;
  for (const t of trace.turn) {
    if (t.s < t0 || t.s > t1 || t.d < ms) continue;
    n++;
    longest = Math.max(longest, t.d);
    if (overlap(trace.gc, md, t.s, t.s + t.d).any) gc++;
    else if (overlap(trace.stall, ms2, t.s, t.s + t.d, (x) => x.c < x.d / 2).any) waited++;
  }
  return { n, gc, waited, longest };
}

const f = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');
const pc = (k, n) => `${f((100 * k) / Math.max(1, n), 0)} %`;

/** One table row per phase: the slow writes' figures, then (in brackets) every write's. */
function rows(label, a) {
  const r = (o) =>
    `${f(median(o.client), 2)} / ${f(median(o.server), 2)} | ${pc(o.major, o.n)} / ${pc(o.minor, o.n)} (${f(o.gcMs / Math.max(1, o.n), 2)}) | ${f(o.fanMs / Math.max(1, o.n), 2)} (${pc(o.fan1, o.n)}; ${f(o.turnMax, 2)}) | ${pc(o.stalls, o.n)} (${f(o.stallMs / Math.max(1, o.n), 2)}; CPU ${f(o.stallCpu / Math.max(1, o.n), 2)}) | ${pc(o.catchups, o.n)} | ${pc(o.none, o.n)}`;
  return [`| ${label}: ${a.slow.n} slow (≥ p99 ${f(a.p99, 2)} ms) | ${r(a.slow)} |`, `| ${label}: all ${a.all.n} | ${r(a.all)} |`];
}

const HEADER = [
  '| writes (phase) | median ms: client / server | overlapping a GC: major / minor only (GC ms inside, mean) | fan-out ms inside, mean (share ≥ 1 ms; longest turn met, ms) | overlapping a loop stall > 2 ms (stall ms inside, mean; server CPU ms in it: ≪ stall = waiting for a CPU) | with a catch-up inside | none of these |',
  '|---|---|---|---|---|---|---|',
];

module.exports = { readTrace, attribute, rows, HEADER, longTurns };
