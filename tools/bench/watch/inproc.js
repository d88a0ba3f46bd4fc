#!/usr/bin/env node
/**
 * Diagnostic: the watch fan-out's own CPU, in one process, without HTTP, TLS or a second process
 * competing for the cores (what the full bench's wall-time figures mix in on a shared host).
 * N `WatchSession`s of the built server (dist/apps/api) on sockets that take everything, over a
 * real store, while rows are written at a fixed rate through `store.put`:
 * the process's CPU per write with the sessions and without, `store.put` latency (durable commits
 * unless --sync 0: the write path without HTTP), the fan-out's main-thread time per stream and
 * burst, and the event loop's delay (p99, max) in both phases.
 *
 *   npm run build && node tools/bench/watch/inproc.js [--subscribers 200] [--tables 10] [--rate 2000] [--duration 5] [--window 50] [--sync 1] [--root .] [--alloc 0]
 *
 * `--alloc 1`: the fan-out's allocations per stream and burst in the phase with sessions, and their
 * largest sites (alloc-profile.js; the profiler costs CPU: the CPU rows of such a run are not
 * comparable with a run without it); `--alloc 2`: only the objects that outlived a scavenge.
 *
 * `--root` runs another build (an A/B against a previous commit built elsewhere: its dist/apps/api).
 */
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { monitorEventLoopDelay } = require('perf_hooks');
const { loadOptions } = require('./options');
const { allocProfile } = require('./alloc-profile');
const { numberOption } = require('../request');

const args = process.argv.slice(2);
const { SUBS, TABLES, RATE, DURATION, WINDOW } = loadOptions(args, { duration: 5 });
/** Durable commits (fsync per group, as the server's), unless `--sync 0`. */
const SYNC = numberOption(args, 'sync', 1) !== 0;
const ALLOC = numberOption(args, 'alloc', 0);
const rootAt = args.indexOf('--root');
const ROOT = path.resolve(rootAt >= 0 ? args[rootAt + 1] : path.join(__dirname, '../../..'));
const api = (p) => require(path.join(ROOT, 'dist/apps/api', p));
const { TenantStore } = require('@mmdb/storage');
const { SqlEngine, WatchQuery } = require('@mmdb/sql');
const { WatchSession } = api('watch/watch-session');
const turnQueue = api('watch/turns');
const { fanoutSpent, fanoutYieldsTo } = turnQueue;
const { Metrics } = api('health/metrics.service');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const f = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');

/** Writes RATE rows/s for DURATION s (in 10 ms ticks); answers CPU µs per write and the loop's delay. */
async function load(store, from) {
  const h = monitorEventLoopDelay({ resolution: 5 });
  h.enable();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const perTick = RATE / 100;
  let n = 0;
  let due = 0;
  const pending = [];
  const lat = [];
  while (performance.now() - t0 < DURATION * 1000) {
    due += perTick;
    while (n < due) {
      const i = from + n++;
      const s = performance.now();
      pending.push(store.put(`main.t${i % TABLES}`, { id: i, v: i, pad: 'x'.repeat(40) }).then(() => lat.push(performance.now() - s)));
    }
    await sleep(10);
  }
  await Promise.all(pending);
  const cpu = process.cpuUsage(cpu0);
  h.disable();
  lat.sort((a, b) => a - b);
  const pct = (p) => lat[Math.min(lat.length - 1, Math.floor(lat.length * p))];
  return { writes: n, cpuUs: (cpu.user + cpu.system) / n, p99: h.percentile(99) / 1e6, max: h.max / 1e6, put50: pct(0.5), put99: pct(0.99) };
}

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mmdb-watch-inproc-'));
  const store = await TenantStore.open({ dir, sync: SYNC });
  // writes are always in flight here: the fan-out yields to them as the server's does under load (busy slices)
  fanoutYieldsTo(() => true);
  try {
    const sql = new SqlEngine(store);
    for (let t = 0; t < TABLES; t++) await sql.run(`CREATE TABLE t${t} (id INTEGER PRIMARY KEY, v INTEGER, pad TEXT)`);
    await load(store, 1_000_000); // warm-up
    const without = await load(store, 2_000_000);
    let events = 0;
    // (a shared event's bytes are made as the server's socket write makes them: `chunked`, once per event)
    const out = { write: (c) => (typeof c === 'string' || void c.chunked, events++, true), drained: () => Promise.resolve(), pendingBytes: 0, end: () => undefined };
    const metrics = new Metrics(); // (one for the process, as the server's: one per session was 200 registries' allocations and retained memory)
    const sessions = Array.from({ length: SUBS }, (_, i) => {
      const q = WatchQuery.compile(sql, { sql: `SELECT id, v FROM t${i % TABLES} WHERE v % 4 = ${i % 4}` });
      const s = new WatchSession(`s${i}`, store, q, out, { coalesceMs: WINDOW, heartbeatMs: 60_000, retryMs: 1000, bufferFrames: 1024, maxLagFrames: 1_000_000 }, metrics, () => undefined);
      return { s, running: s.run({ initial: false, since: null }) };
    });
    await sleep(500);
    const s0 = { ...fanoutSpent() };
    turnQueue.takeLongestTurn?.();
    const e0 = events;
    const prof = ALLOC ? allocProfile(ALLOC) : null;
    await prof?.start();
    const withSubs = await load(store, 3_000_000);
    const alloc = await prof?.stop();
    await sleep(WINDOW * 3);
    const s1 = fanoutSpent();
    const longest = turnQueue.takeLongestTurn?.();
    for (const x of sessions) x.s.close();
    await Promise.all(sessions.map((x) => x.running));
    const turns = s1.turns - s0.turns;
    console.log(`watch fan-out in process (${ROOT}): ${SUBS} sessions over ${TABLES} tables, ${RATE} rows/s for ${DURATION} s, window ${WINDOW} ms`);
    console.log('| measure | without sessions | with sessions |');
    console.log('|---|---|---|');
    console.log(`| process CPU µs per write | ${f(without.cpuUs)} | ${f(withSubs.cpuUs)} (+${f(withSubs.cpuUs - without.cpuUs)}) |`);
    console.log(`| store.put p50 / p99 ms (${SYNC ? 'durable' : 'not synced'}); p99 ratio | ${f(without.put50, 2)} / ${f(without.put99, 2)} | ${f(withSubs.put50, 2)} / ${f(withSubs.put99, 2)}; ${f(withSubs.put99 / without.put99, 2)}× |`);
    console.log(`| event-loop delay p99 / max ms | ${f(without.p99, 2)} / ${f(without.max, 2)} | ${f(withSubs.p99, 2)} / ${f(withSubs.max, 2)} |`);
    console.log(`| fan-out ms/s; µs per stream and burst; bursts/s | | ${f((s1.ms - s0.ms) / DURATION)}; ${f(((s1.ms - s0.ms) * 1000) / Math.max(1, turns), 2)}; ${f(turns / DURATION, 0)} |`);
    console.log(`| longest fan-out turn ms | | ${longest === undefined ? 'n/a' : f(longest, 2)} |`);
    console.log(`| bursts delivered in a group's turn | | ${s1.grouped === undefined ? 'n/a' : `${f(((s1.grouped - s0.grouped) * 100) / Math.max(1, turns))} %`} |`);
    console.log(`| events written | | ${events - e0} |`);
    if (alloc) {
      const per = (b) => f(b / Math.max(1, turns), 0);
      console.log(`\nthe fan-out's allocations (${ALLOC === 2 ? 'objects that outlived a scavenge' : 'every object'}; sampled every 256 bytes, under dist/apps/api/watch frames): ${f(alloc.bytes / 1e6, 2)} MB, ${per(alloc.bytes)} B per stream and burst; largest sites, B per stream and burst:`);
      for (const [site, b] of alloc.sites.slice(0, 12)) console.log(`  ${per(b).padStart(6)}  ${site}`);
    }
  } finally {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
