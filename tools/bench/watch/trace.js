/**
 * Diagnostic for the watch benchmark: what a slow write waited on. Required into the server
 * (`bench.js --trace 1` sets NODE_OPTIONS="-r ./tools/bench/watch/trace.js" and TRACE_FILE), it
 * records, on one clock (the host's monotonic clock, ms, which the bench's own write
 * timestamps share):
 *   - every PUT the server served: arrival (`http.server.request.start`) and response finished
 *     (`http.server.response.finish`), with its path;
 *   - every GC pause (perf_hooks 'gc': start, duration, major/minor);
 *   - every turn of the watch fan-out (diagnostics channel `mmdb:watch:turn`, apps/api
 *     watch/turns.ts: start, duration) and every read of a stream's feed behind its buffer
 *     (`mmdb:watch:catchup`);
 *   - event-loop stalls: a 1 ms interval timer's lateness over 2 ms (start, length, and the CPU the
 *     process used meanwhile): a stretch the loop was held, by anything (GC, fan-out, a commit's
 *     own work), or waited for a CPU (the CPU used then is far below the stretch's length).
 * The 1 ms timer costs the server a little CPU (both sides alike): compare traced runs with traced runs.
 * Every 200 ms it appends what it recorded to TRACE_FILE as JSON lines ({k: 'put'|'gc'|'turn'|
 * 'catchup'|'stall', ...}); bench.js reads it after each phase (slow-writes.js aligns them). The
 * channels publish only while subscribed: a server without this file pays nothing for them.
 */
'use strict';
const fs = require('fs');
const dc = require('diagnostics_channel');
const { PerformanceObserver, constants } = require('perf_hooks');

const file = process.env.TRACE_FILE;
if (file) {
  // performance.now() on the host's monotonic clock (process.hrtime), which bench.js stamps with
  const origin = Number(process.hrtime.bigint()) / 1e6 - performance.now();
  let out = [];
  const push = (o) => out.push(JSON.stringify(o));
  const started = new WeakMap();
  dc.subscribe('http.server.request.start', ({ request }) => {
    if (request.method === 'PUT') started.set(request, performance.now());
  });
  dc.subscribe('http.server.response.finish', ({ request }) => {
    const s = started.get(request);
    if (s !== undefined) push({ k: 'put', s: origin + s, e: origin + performance.now(), p: request.url });
  });
  dc.subscribe('mmdb:watch:turn', ({ start, ms }) => push({ k: 'turn', s: origin + start, d: ms }));
  dc.subscribe('mmdb:watch:catchup', ({ at }) => push({ k: 'catchup', s: origin + at }));
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = e.detail?.kind;
      push({ k: 'gc', s: origin + e.startTime, d: e.duration, major: kind === constants.NODE_PERFORMANCE_GC_MAJOR, minor: kind === constants.NODE_PERFORMANCE_GC_MINOR });
    }
  }).observe({ entryTypes: ['gc'] });
  // (c: the process's CPU ms in the stretch, every thread: near its length, the main thread was
  // working; far below it, it waited for a CPU, or for a synchronous system call)
  let last = performance.now();
  let cpu = process.cpuUsage();
  setInterval(() => {
    const t = performance.now();
    const c = process.cpuUsage();
    if (t - last > 3) push({ k: 'stall', s: origin + last + 1, d: t - last - 1, c: (c.user + c.system - cpu.user - cpu.system) / 1000 });
    last = t;
    cpu = c;
  }, 1).unref();
  setInterval(() => {
    if (!out.length) return;
    fs.appendFileSync(file, out.join('\n') + '\n');
    out = [];
  }, 200).unref();
}
