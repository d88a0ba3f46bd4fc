#!/usr/bin/env node
/**
 * The backfill's pacing, in-process (no HTTP, no client in the same event loop): a real store on
 * disk and the migration engine alone. Loads ROWS rows (batches of 5,000 puts: the in-process
 * ingest peer), runs a fixed open-loop load of FG_WPS single-row puts/s for BASE_S seconds, then
 * the same load while a migration renames a column (every row copied into the shadow, dual
 * writes on). Prints, from one run: ingest and backfill rows/s (and the ratio), the foreground
 * put's p50/p90/p99 without and with the backfill (and the ratio), and the store's counters
 * (backfill frames that yielded to a foreground write, reads ahead and the keys they dropped).
 * It isolates the writer's pacing from HTTP and the client; the HTTP bench (bench.js) is the
 * issue's figure. It also prints the writer's phases of every request (the coordinator's
 * `trace` hook): queue, preparation, wait below, write (batch + fsync), apply, per window.
 * DEFER=off opens the store with `deferRedoableSync: false` (each backfill frame fsynced); WB=<MB>
 * sets LevelDB's write buffer (the store's `writeBufferBytes`, apps/api's DB_WRITE_BUFFER_BYTES;
 * default 16). CEIL=<rows/s> sets the throttle's ceiling (default 1,000,000: none); SLICE=<ms> its slice_ms.
 * PIECE=<ms> sets the store's `backgroundPieceMs` (apps/api DB_BACKFILL_PIECE_US / 1000; default 0.5:
 * frames prepared in pieces and cut short for a foreground put; 0: prepared whole); the store line
 * at the end counts the frames cut (`splits`).
 *
 * Attribution (attribution.js): the disk bytes the process wrote in each phase (load, baseline,
 * backfill; per row copied), GC pauses by kind and event-loop stalls during the copy, LevelDB's
 * flushes and compactions (from its LOG) and its write stalls, and for the slowest 5% of the
 * foreground puts during the copy: their mean phases, how much GC and loop stall overlapped them,
 * and how often they overlapped a flush or compaction against the share of time one ran; and how
 * long the event loop was blocked inside calls into LevelDB that take its database lock (get,
 * getMany), against a control syscall (attribution.js `probeLevelCalls`). FILE_MB=<MB> sets
 * LevelDB's table file size (the store's `tableFileBytes`, DB_TABLE_FILE_BYTES; default 2).
 * It samples LevelDB's level-0 file count every 2 ms during the copy (at 8 LevelDB's write path
 * sleeps 1 ms per write, at 12 it stops writes) and which puts' batches were written at 8 or more,
 * and sums the copy's compactions from the LOG (how many, MB written, those a level-0 file's reads
 * started). HOLD=<ms> sets the store's `backgroundHoldMs` (apps/api DB_BACKFILL_HOLD_MS; default
 * 0: off). KEEP=1 keeps the store's directory (its LevelDB LOG) and prints where.
 *
 *   npm run build && ROWS=300000 FG_WPS=100 BASE_S=10 node tools/bench/migrations/inproc.js   # ~1 min
 *   ... DEFER=off node tools/bench/migrations/inproc.js                                       # the same, frames fsynced
 */
'use strict';
const { mkdtempSync, rmSync } = require('fs');
const os = require('os');
const path = require('path');
const { TenantStore } = require('@mmdb/storage');
const { Migrations } = require('@mmdb/migrations');
const A = require('./attribution');

const ROWS = Number(process.env.ROWS ?? 300_000);
const FG_WPS = Number(process.env.FG_WPS ?? 100);
const BASE_S = Number(process.env.BASE_S ?? 10);
const CEIL = Number(process.env.CEIL ?? 1_000_000);
/** SLICE=<ms>: the throttle's slice_ms (default: the migration's default). */
const SLICE = process.env.SLICE ? Number(process.env.SLICE) : undefined;
const TOML = 'namespace = "bench"\ntable = "m"\nprimary_key = ["id"]\n[[columns]]\nname = "id"\nty = "i64"\nrequired = true\n[[columns]]\nname = "v"\nty = "f64"\n[[columns]]\nname = "tag"\nty = "str"\n[[indexes]]\nname = "by_tag"\ncolumns = ["tag"]\n';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] : NaN;
};

function foreground(store) {
  const lat = [];
  let n = 0;
  const timer = setInterval(() => {
    const id = Math.floor(Math.random() * ROWS);
    const t0 = performance.now();
    store
      .commit({ changes: [{ op: 'put', schema: 'bench.m', row: { id, v: ++n, tag: `t${id % 100}` } }] })
      .then(() => lat.push(performance.now() - t0), () => lat.push(NaN));
  }, 1000 / FG_WPS);
  return { lat, stop: () => clearInterval(timer) };
}

/** The writer's phases of each request (the coordinator's trace hook), split by window. */
function tracer(store) {
  const win = { base: [], during: [], frames: [] };
  let cur = null;
  store.coordinator.trace = (t) => {
    if (!cur) return;
    (t.background ? win.frames : win[cur]).push(t);
  };
  const phase = (ts, from, to) => ts.filter((t) => t[from] !== undefined && t[to] !== undefined).map((t) => t[to] - t[from]);
  const print = () => {
    const f = (xs) => `${pct(xs, 50).toFixed(2)} / ${pct(xs, 90).toFixed(2)} / ${pct(xs, 99).toFixed(2)}`;
    console.log('writer phases, ms p50 / p90 / p99: queue (queued → its group prepared from), prep, below (prepared → batch issued), write (batch + fsync), apply');
    for (const [k, ts] of Object.entries(win)) {
      if (!ts.length) continue;
      console.log(`  ${k.padEnd(7)} n ${String(ts.length).padStart(5)}  queue ${f(phase(ts, 'at', 'taken'))}  prep ${f(phase(ts, 'taken', 'prepared'))}  below ${f(phase(ts, 'prepared', 'issued'))}  write ${f(phase(ts, 'issued', 'written'))}  apply ${f(phase(ts, 'written', 'resolved'))}  total ${f(phase(ts, 'at', 'resolved'))}`);
    }
  };
  return { set: (w) => (cur = w), print, win };
}

/** The attribution of the copy's slowest foreground puts (trace times and `proc` windows in performance.now() ms). */
function attribute(ts, proc, dir, lvl) {
  if (!ts.length) return;
  const t0 = ts[0].at;
  const t1 = ts[ts.length - 1].resolved;
  const inWin = (xs) => xs.filter(([a, b]) => b >= t0 && a <= t1);
  const kinds = {};
  for (const [a, b, k] of inWin(proc.gcs)) {
    const e = (kinds[k] ??= { n: 0, ms: 0, max: 0 });
    e.n++;
    e.ms += b - a;
    e.max = Math.max(e.max, b - a);
  }
  const span = t1 - t0;
  const lags = inWin(proc.lags);
  console.log(`GC during the copy (kind 1 scavenge, 2 mark-compact, 4 incremental, 8 weak callbacks): ${Object.entries(kinds).map(([k, e]) => `${k}: ${e.n} pauses ${e.ms.toFixed(0)} ms, longest ${e.max.toFixed(1)}`).join('; ')}; event loop stalled (> 2 ms late) ${((100 * lags.reduce((s, [a, b]) => s + b - a, 0)) / span).toFixed(1)}% of the time`);
  const ldb = A.leveldbActivity(dir);
  const shift = (ws) => ws.map(([a, b, w]) => [a - performance.timeOrigin, b - performance.timeOrigin, w]);
  const busy = shift(ldb.busy);
  const stalls = ldb.stalls.filter(([t]) => t - performance.timeOrigin >= t0 && t - performance.timeOrigin <= t1);
  const cut = A.pct(ts.map((t) => t.resolved - t.at), 95);
  const slow = ts.filter((t) => t.resolved - t.at >= cut);
  const mean = (f) => (slow.reduce((s, t) => s + f(t), 0) / slow.length).toFixed(2);
  console.log(`slowest 5% of the foreground puts during the copy (>= ${cut.toFixed(1)} ms, n ${slow.length}), mean ms: total ${mean((t) => t.resolved - t.at)} = queue ${mean((t) => (t.taken ?? t.at) - t.at)} + prep ${mean((t) => (t.prepared ?? 0) - (t.taken ?? 0))} + below ${mean((t) => (t.issued ?? 0) - (t.prepared ?? 0))} + write ${mean((t) => (t.written ?? 0) - (t.issued ?? 0))} + apply ${mean((t) => t.resolved - (t.written ?? t.resolved))}; GC within them ${mean((t) => A.overlap(t.at, t.resolved, proc.gcs))}, loop stalls within them ${mean((t) => A.overlap(t.at, t.resolved, lags))}`);
  for (const p of [95, 99]) {
    const o = A.tailOverlap(ts.map((t) => [t.at, t.resolved]), busy, p);
    console.log(`LevelDB flushing or compacting ${(100 * o.covered).toFixed(0)}% of the copy; puts above p${p} (${o.cut.toFixed(1)} ms, n ${o.slow}) overlapping one: ${(100 * o.slowHit).toFixed(0)}% (all puts: ${(100 * o.allHit).toFixed(0)}%)`);
  }
  console.log(`LevelDB write stalls (memtable full / too many level-0 files) during the copy: ${stalls.length}${stalls.length ? ` (${stalls[0][1]})` : ''}`);
  if (lvl) levelState(ts, slow, lvl, dir);
}

/**
 * Level-0 files while each foreground put's own batch was written (issued → written): at 8
 * LevelDB's MakeRoomForWrite sleeps 1 ms in the write, at 12 it waits for a compaction. And the
 * copy's compactions (from the LOG).
 */
function levelState(ts, slow, samples, dir) {
  const l0 = samples.map((s) => s[1]);
  const at = (t, n) => samples.some(([x, k]) => k >= n && x >= (t.issued ?? t.at) - 2 && x <= (t.written ?? t.resolved));
  const share = (xs, n) => `${((100 * xs.filter((t) => at(t, n)).length) / Math.max(1, xs.length)).toFixed(0)}%`;
  console.log(`LevelDB level-0 files during the copy (${samples.length} samples, every 2 ms): p50 ${A.pct(l0, 50)} / p99 ${A.pct(l0, 99)} / max ${Math.max(...l0)}; puts whose batch was written at >= 8: slowest 5% ${share(slow, 8)}, all ${share(ts, 8)}`);
  const off = performance.timeOrigin;
  console.log(`LevelDB compactions during the copy: ${A.compactionSummary(A.leveldbActivity(dir).compactions, off + ts[0].at, off + ts[ts.length - 1].resolved).text()}`);
}

async function main() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-mig-inproc-'));
  // DEFER=off: every backfill frame written with its own fsync (the store's behaviour before deferred sync).
  const store = await TenantStore.open({ dir, deferRedoableSync: process.env.DEFER !== 'off', ...(process.env.PIECE ? { backgroundPieceMs: Number(process.env.PIECE) } : {}), ...(process.env.HOLD ? { backgroundHoldMs: Number(process.env.HOLD) } : {}), ...(process.env.WB ? { writeBufferBytes: Number(process.env.WB) * 1024 * 1024 } : {}), ...(process.env.FILE_MB ? { tableFileBytes: Number(process.env.FILE_MB) * 1024 * 1024 } : {}) });
  try {
    await store.registerSchema(TOML);
    let loadMs = 0;
    const io = [A.diskWrites()];
    for (let i = 0; i < ROWS; i += 5000) {
      const changes = [];
      for (let id = i; id < Math.min(ROWS, i + 5000); id++) changes.push({ op: 'put', schema: 'bench.m', row: { id, v: id * 0.5, tag: `t${id % 100}` } });
      const t0 = performance.now();
      await store.commit({ changes });
      loadMs += performance.now() - t0;
    }
    const ingest = ROWS / (loadMs / 1000);
    await sleep(1000);
    io.push(A.diskWrites());
    const tr = tracer(store);
    tr.set('base');
    const ctlFd = require('fs').openSync(path.join(dir, 'CURRENT'), 'r');
    const baseProbe = A.probeLevelCalls(store.db, ctlFd);
    const base = foreground(store);
    await sleep(BASE_S * 1000);
    base.stop();
    baseProbe.stop();
    await sleep(200);
    io.push(A.diskWrites());
    const m = new Migrations(store, { autostart: true });
    await m.attach();
    tr.set('during');
    const proc = A.watchProcess();
    const probe = A.probeLevelCalls(store.db, ctlFd);
    const lvl = A.sampleLevel0(store.db, 2);
    const during = foreground(store);
    const t0 = performance.now();
    const r = await m.submit({ schema: 'bench.m', operations: [{ op: 'rename_column', from: 'v', to: 'w' }], throttle: { max_rows_per_s: CEIL, ...(SLICE ? { slice_ms: SLICE } : {}) } }, 'bench');
    while (!['ReadyToCutover', 'Failed', 'Aborted'].includes(m.get(r.id).state)) await sleep(10);
    const backfillS = (performance.now() - t0) / 1000;
    io.push(A.diskWrites());
    during.stop();
    lvl.stop();
    proc.stop();
    probe.stop();
    tr.set(null);
    await sleep(200);
    const c = store.coordinator;
    const row = (label, xs) => `${label.padEnd(40)} n ${String(xs.length).padStart(5)}  p50 ${pct(xs, 50).toFixed(2).padStart(6)}  p90 ${pct(xs, 90).toFixed(2).padStart(6)}  p99 ${pct(xs, 99).toFixed(2).padStart(6)} ms`;
    console.log(`rows ${ROWS}, foreground ${FG_WPS} puts/s, state ${m.get(r.id).state}`);
    console.log(`ingest rows/s (in-process peer)          ${Math.round(ingest)}`);
    console.log(`backfill rows/s                          ${Math.round(ROWS / backfillS)}  ${((100 * ROWS) / backfillS / ingest).toFixed(0)}% of ingest`);
    console.log(row('foreground put, no migration', base.lat));
    console.log(row('foreground put, during backfill', during.lat));
    console.log(`p99 ratio                                ${(pct(during.lat, 99) / pct(base.lat, 99)).toFixed(2)}x   p50 ratio ${(pct(during.lat, 50) / pct(base.lat, 50)).toFixed(2)}x`);
    tr.print();
    if (io.every((x) => x !== null)) {
      const mb = (i) => (io[i + 1] - io[i]) / 1e6;
      console.log(`disk writes of the process: load ${mb(0).toFixed(0)} MB (${((1e6 * mb(0)) / ROWS).toFixed(0)} B/row, + 1 s after), baseline ${mb(1).toFixed(1)} MB (${(mb(1) / (BASE_S + 0.2)).toFixed(1)} MB/s), copy ${mb(2).toFixed(0)} MB (${(mb(2) / backfillS).toFixed(1)} MB/s, ${((1e6 * mb(2)) / ROWS).toFixed(0)} B per row copied)`);
    }
    attribute(tr.win.during, proc, dir, lvl.samples);
    console.log('event-loop time blocked inside calls into LevelDB that take its lock (get, getMany: their implicit snapshot), against a control syscall every 3 ms; baseline, then during the copy:');
    baseProbe.print();
    probe.print();
    if (c?.stats) console.log(`store: ${JSON.stringify(c.stats)}${c.ahead ? ` read-ahead ${JSON.stringify(c.ahead.stats)}` : ''}`);
    await m.close();
  } finally {
    await store.close();
    if (process.env.KEEP) console.log(`kept ${dir}`);
    else rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
