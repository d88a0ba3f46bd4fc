// Preloaded into the built server by tools/bench/stalls/http.js (NODE_OPTIONS=--require …): watches
// the server's event loop and garbage collector; when the file $STALLS_PROBE_OUT.ask appears, it
// writes what it saw since the last ask to $STALLS_PROBE_OUT (JSON), removes the ask and starts
// again (a file, not a signal: Nest's shutdown hooks take SIGUSR2 for a shutdown). See README.md
// ("Steady-state stalls").
//
// - the event-loop delay (perf_hooks.monitorEventLoopDelay, 1 ms resolution): max, p99;
// - every stall over STALL_MS (a 2 ms timer that fired late), with where the main thread's time went
//   during it (Linux /proc/self/task/<pid>/schedstat): on a CPU (a GC pause or a long synchronous
//   task), waiting in the run queue (the host gave the CPU to another process: noise), or neither
//   (blocked: waiting on a lock, e.g. for the GC's helper threads);
// - every GC (perf_hooks 'gc' entries): kind (minor = scavenge, major = mark-compact, incremental
//   marking steps, weak callbacks) and pause;
// - with STALLS_NATIVE=1, every call into classic-level's native binding that ran on the main
//   thread for over NATIVE_MS (its name, time split by schedstat, and the JS frames that made it): the calls that can take LevelDB's
//   mutex synchronously (snapshot_init/close, iterator_init/close/seek, the db_get / db_get_many /
//   db_has workers' constructors, which create an implicit snapshot there) and the others, so a
//   blocked stall is attributed to the call that waited (README.md, "The blocked stalls").
'use strict';
const fs = require('fs');
const { PerformanceObserver, performance, monitorEventLoopDelay, constants } = require('perf_hooks');

const OUT = process.env.STALLS_PROBE_OUT;
const STALL_MS = 50;
const now = () => Number(process.hrtime.bigint()) / 1e6;
const offset = now() - performance.now();
const schedFile = `/proc/self/task/${process.pid}/schedstat`;
function sched() {
  try {
    const f = fs.readFileSync(schedFile, 'utf8').split(' ');
    return { cpu: Number(f[0]) / 1e6, wait: Number(f[1]) / 1e6 };
  } catch {
    return { cpu: NaN, wait: NaN };
  }
}

// STALLS_NATIVE=1 (http.js --natives): classic-level's binding wrapped, each call timed on the main
// thread; the calls that can take LevelDB's mutex there also read schedstat before and after, so a
// slow one splits into on CPU / run-queue wait / blocked (~15 µs per such call added). The binding
// object is the one classic-level's own modules call through.
const NATIVE_MS = Number(process.env.STALLS_NATIVE_MS ?? 2);
const MUTEX_CALLS = new Set(['snapshot_init', 'snapshot_close', 'iterator_init', 'iterator_close', 'iterator_seek', 'db_get', 'db_get_sync',
  'db_get_many', 'db_has', 'db_has_many', 'db_get_property', 'db_put', 'db_del', 'batch_do', 'batch_write']);
const WHERE = !!process.env.STALLS_NATIVE_WHERE;
const IMPLICIT_CALLS = new Set(['db_get', 'db_get_many', 'db_has', 'db_has_many', 'iterator_init']);
let natives = [];
let nativeCalls = {};
if (process.env.STALLS_NATIVE) {
  const binding = require('classic-level/binding.js');
  for (const name of Object.keys(binding)) {
    const fn = binding[name];
    if (typeof fn !== 'function' || name === 'db_init') continue;
    const split = MUTEX_CALLS.has(name);
    // a read or iterator given no snapshot (its 4th argument) makes an implicit one under the mutex
    const implicit = IMPLICIT_CALLS.has(name) ? `${name} (implicit snapshot)` : null;
    binding[name] = function (...args) {
      const s0 = split ? sched() : null;
      const t0 = now();
      const label = implicit && args[3] == null ? implicit : name;
      try {
        return fn.apply(this, args);
      } finally {
        const ms = now() - t0;
        const c = (nativeCalls[label] ??= { n: 0, ms: 0, max: 0 });
        c.n++;
        c.ms += ms;
        if (ms > c.max) c.max = ms;
        if (WHERE && split) {
          // STALLS_NATIVE_WHERE=1: every call's caller counted (a stack per call: diagnosis only)
          const w = (new Error().stack ?? '').split('\n').slice(2).map((l) => l.trim().replace(/^at /, ''))
            .filter((l) => !l.includes('node_modules') && !l.startsWith('node:')).slice(0, 3).map((l) => l.replace(/ \(.*\)$/, '')).join(' ← ');
          (c.by ??= {})[w] = (c.by[w] ?? 0) + 1;
        }
        if (ms >= NATIVE_MS) {
          const s1 = split ? sched() : null;
          const cpu = s1 ? s1.cpu - s0.cpu : NaN;
          const runq = s1 ? s1.wait - s0.wait : NaN;
          const where = (new Error().stack ?? '').split('\n').slice(2).map((l) => l.trim().replace(/^at /, ''))
            .filter((l) => !l.includes('node_modules') && !l.startsWith('node:')).slice(0, 6);
          natives.push({ at: t0, ms, name: label, cpu, runq, blocked: Math.max(0, ms - cpu - runq), where });
        }
      }
    };
  }
}

const KIND = {
  [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
  [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb',
};

const v8 = require('v8');
const oldSpaceMb = () => (v8.getHeapSpaceStatistics().find((x) => x.space_name === 'old_space')?.space_used_size ?? NaN) / 1e6;
let oldAtStart = oldSpaceMb();
let h = monitorEventLoopDelay({ resolution: 1 });
h.enable();
let stalls = [];
let gcs = [];
let since = now();
let last = now();
let lastSched = sched();
// old-space growth summed over the 2 ms ticks (only increases: promotion out of the young
// generation and objects allocated old; a mark-compact's sweeping shows as decreases)
let lastOld = oldSpaceMb();
let oldIn = 0;
setInterval(() => {
  const t = now();
  const s = sched();
  const o = oldSpaceMb();
  if (o > lastOld) oldIn += o - lastOld;
  lastOld = o;
  if (t - last > STALL_MS) stalls.push({ at: last, ms: t - last, cpu: s.cpu - lastSched.cpu, runq: s.wait - lastSched.wait });
  last = t;
  lastSched = s;
}, 2).unref();
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    const kind = e.detail ? e.detail.kind : e.kind;
    gcs.push({ at: e.startTime + offset, ms: e.duration, kind: KIND[kind] ?? String(kind) });
  }
}).observe({ entryTypes: ['gc'] });

/**
 * The SQL table caches of the process, summed (the server's own libs/sql module, loaded by then):
 * whole-table loads, patched versions, unstable-snapshot reads since the start. Null when absent.
 */
function tableCaches() {
  try {
    const { tableCachePool } = require('../../../libs/sql/dist/index.js');
    const sum = { misses: 0, patches: 0, patchedRows: 0, unstableReads: 0, hits: 0 };
    // the pool's members are every store's cache holding an entry (a private field, read here only)
    for (const c of tableCachePool.members ?? []) for (const k of Object.keys(sum)) sum[k] += c.stats()[k] ?? 0;
    return sum;
  } catch {
    return null;
  }
}

// STALLS_CPU_PROF=<file>: a V8 CPU profile of the main thread over each window (started at an
// ask, written at the next one), its timestamps on the same monotonic clock as the stalls' `at`
// (µs), so prof-stalls.js can attribute each stall to the samples inside it.
const PROF = process.env.STALLS_CPU_PROF;
let session = null;
function profileWindow() {
  if (!PROF) return;
  const inspector = require('inspector');
  const start = () => {
    session.post('Profiler.setSamplingInterval', { interval: Number(process.env.STALLS_CPU_PROF_US ?? 500) }, () =>
      session.post('Profiler.start'));
  };
  if (!session) {
    session = new inspector.Session();
    session.connect();
    session.post('Profiler.enable', start);
    return;
  }
  session.post('Profiler.stop', (err, res) => {
    if (!err) fs.writeFileSync(PROF, JSON.stringify(res.profile));
    start();
  });
}

function report() {
  const t = now();
  const r = {
    ms: t - since,
    loopMaxMs: h.max / 1e6,
    loopP99Ms: h.percentile(99) / 1e6,
    stalls: stalls.map((s) => ({
      ...s,
      blocked: Math.max(0, s.ms - s.cpu - s.runq),
      gcs: gcs.filter((g) => g.at + g.ms >= s.at && g.at <= s.at + s.ms).map((g) => ({ kind: g.kind, ms: g.ms })),
      natives: natives.filter((n) => n.at + n.ms >= s.at && n.at <= s.at + s.ms),
    })),
    natives: natives.map((n) => ({ ...n, gc: gcs.filter((g) => g.at + g.ms >= n.at && g.at <= n.at + n.ms).reduce((a, g) => a + g.ms, 0) })),
    nativeCalls,
    gcs,
    heapUsedMb: process.memoryUsage().heapUsed / 1e6,
    oldSpaceMb: [oldAtStart, oldSpaceMb()],
    oldInMb: oldIn,
    tableCache: tableCaches(),
    semiSpaceMb: (v8.getHeapSpaceStatistics().find((x) => x.space_name === 'new_space')?.space_size ?? NaN) / 1e6,
  };
  oldAtStart = r.oldSpaceMb[1];
  oldIn = 0;
  fs.writeFileSync(`${OUT}.tmp`, JSON.stringify(r));
  fs.renameSync(`${OUT}.tmp`, OUT);
  h.disable();
  h = monitorEventLoopDelay({ resolution: 1 });
  h.enable();
  stalls = [];
  gcs = [];
  natives = [];
  nativeCalls = {};
  since = t;
  profileWindow(); // after the window's figures: stopping the profiler takes a while (the next window's first stall)
}
if (OUT) {
  setInterval(() => {
    if (!fs.existsSync(`${OUT}.ask`)) return;
    fs.rmSync(`${OUT}.ask`, { force: true });
    report();
  }, 50).unref();
}
