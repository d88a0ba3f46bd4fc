// Preloaded into the benchmarked server (NODE_OPTIONS=--require this file, with
// GRAPH_PROBE_OUT=<path prefix>) to see where an HTTPS latency tail comes from, from inside
// the server and without touching its code:
//   - per request: the time from the `request` event (headers parsed) to the response's
//     `finish` (last byte handed to TLS), the process CPU time over the same span, its
//     wall-clock start, and its path;
//   - every GC (PerformanceObserver 'gc' entries: kind, start, duration);
//   - event-loop delay (perf_hooks.monitorEventLoopDelay, 1 ms resolution);
//   - heap statistics at dump time.
// SIGWINCH (ignored by default; Nest's shutdown hooks take SIGUSR2) writes everything recorded since the previous SIGWINCH to `<prefix>.<n>.json` and
// starts afresh: the benchmark signals once before a timed loop and once after it.
'use strict';
const fs = require('fs');
const https = require('https');
const v8 = require('v8');
const { performance, PerformanceObserver, monitorEventLoopDelay, constants } = require('perf_hooks');

const out = process.env.GRAPH_PROBE_OUT;
if (out) {
  const KINDS = {
    [constants.NODE_PERFORMANCE_GC_MINOR]: 'scavenge',
    [constants.NODE_PERFORMANCE_GC_MAJOR]: 'mark-compact',
    [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
    [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weak-cb',
  };
  const origin = performance.timeOrigin;
  let reqs = [];
  let gcs = [];
  let n = 0;
  let cpu0 = process.cpuUsage();
  const eld = monitorEventLoopDelay({ resolution: 1 });
  eld.enable();

  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = e.detail?.kind ?? e.kind;
      gcs.push({ at: origin + e.startTime, ms: e.duration, kind: KINDS[kind] ?? String(kind) });
    }
  }).observe({ entryTypes: ['gc'] });

  const emit = https.Server.prototype.emit;
  https.Server.prototype.emit = function (event, req, res) {
    if (event === 'request') {
      const t0 = performance.now();
      const c0 = process.cpuUsage();
      res.once('finish', () => {
        const t1 = performance.now();
        const c = process.cpuUsage(c0);
        // cpu: the process's CPU time over the request (all threads); wall ≫ cpu means the
        // request waited for a core (another process ran), not that it worked or collected
        reqs.push({ at: origin + t0, ms: t1 - t0, cpu: (c.user + c.system) / 1000, url: req.url.slice(0, 48) });
      });
    }
    return emit.apply(this, arguments);
  };

  // GRAPH_PROBE_PROFILE=1: a V8 CPU profile of each window, written beside the dump as .cpuprofile
  let session = null;
  if (process.env.GRAPH_PROBE_PROFILE === '1') {
    const inspector = require('inspector');
    session = new inspector.Session();
    session.connect();
    session.post('Profiler.enable');
    session.post('Profiler.setSamplingInterval', { interval: 100 });
    session.post('Profiler.start');
  }

  process.on('SIGWINCH', () => {
    if (session) {
      const k = n;
      session.post('Profiler.stop', (err, res) => {
        if (!err) fs.writeFileSync(`${out}.${k}.cpuprofile`, JSON.stringify(res.profile));
        session.post('Profiler.start');
      });
    }
    const h = v8.getHeapStatistics();
    const spaces = Object.fromEntries(v8.getHeapSpaceStatistics().map((s) => [s.space_name, Math.round(s.space_used_size / 1048576)]));
    const cpu = process.cpuUsage(cpu0);
    const dump = {
      reqs,
      gcs,
      cpuMs: (cpu.user + cpu.system) / 1000,
      eventLoopDelay: { p50: eld.percentile(50) / 1e6, p99: eld.percentile(99) / 1e6, max: eld.max / 1e6 },
      heapUsedMB: Math.round(h.used_heap_size / 1048576),
      heapTotalMB: Math.round(h.total_heap_size / 1048576),
      externalMB: Math.round(h.external_memory / 1048576),
      spacesMB: spaces,
    };
    fs.writeFileSync(`${out}.${n++}.json`, JSON.stringify(dump));
    reqs = [];
    gcs = [];
    cpu0 = process.cpuUsage();
    eld.reset();
  });
}
