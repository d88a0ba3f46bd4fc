/**
 * Diagnostic for the watch benchmark: where the server's time goes with subscribers and without.
 *
 *   WATCH_SERVER_NODE_OPTIONS="-r ./tools/bench/watch/cpu-profile.js" PROFILE_DIR=/tmp/p \
 *     node tools/bench/watch/bench.js --big 0 ...      # the server writes <PROFILE_DIR>/server-<ms>.cpuprofile
 *   node tools/bench/watch/cpu-profile.js /tmp/p/server-<ms>.cpuprofile   # phases 1 and 3, per function
 *
 * Required into the server (NODE_OPTIONS), it profiles the whole run (V8 sampling, 200 µs) and
 * writes the profile when the bench stops the server (SIGTERM: Nest closes, then re-raises the
 * signal, so --cpu-prof would never write). The bench sends the server SIGWINCH (ignored without this file; Nest's shutdown hooks take SIGUSR2) at the start and
 * end of phases 1 and 3 (since session 6: W0, the first without subscribers, and S1, the first with them; when PROFILE_DIR is set); the marks are kept in the profile's file
 * (`marks`, µs on the profile's clock). Run as a script, it prints each phase's main-thread time
 * (ms of CPU per s of wall time) per function, self and inclusive, and the functions whose time
 * grew most from phase 1 to phase 3: what the subscribers cost the thread the commits run on;
 * per phase also its GC pauses (count, ms/s, longest, by kind), its allocations by function
 * (V8's sampling heap profiler; with HEAP_LIVE=1 in the bench's environment, only the objects
 * still alive at the phase's end: what is being kept) and the old space's growth (promotion).
 * Without marks (an older profile), phase 3 is from the first to the last sample under a burst.
 * The times are sampled wall time: on a loaded host a thread waiting for a CPU counts (a control
 * run with --subscribers 0 "grew" 285 → 440 ms/s between the phases on a host at load 9).
 */
'use strict';
const fs = require('fs');
const path = require('path');

function record() {
  const inspector = require('inspector');
  const s = new inspector.Session();
  s.connect();
  s.post('Profiler.enable');
  s.post('Profiler.setSamplingInterval', { interval: 200 });
  s.post('Profiler.start');
  const marks = [];
  // GC pauses (the main thread stops for each): [end µs on the profile's clock, ms, kind]
  const gcs = [];
  const { PerformanceObserver, constants } = require('perf_hooks');
  const kinds = { [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major', [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor', [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental', [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb' };
  const origin = Number(process.hrtime.bigint() / 1000n) - performance.now() * 1000;
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) gcs.push([origin + (e.startTime + e.duration) * 1000, e.duration, kinds[e.detail?.kind] ?? String(e.detail?.kind)]);
  }).observe({ entryTypes: ['gc'] });
  // (the profile's clock is the monotonic one hrtime reads)
  // allocations per phase (V8's sampling heap profiler, objects collected since included): what drives the GC
  const heaps = [];
  // the heap's spaces and external memory at each mark (what grows during a phase drives the major GCs)
  const spaces = [];
  // and sampled every 100 ms: the old space's growth between major GCs
  const oldSpace = [];
  setInterval(() => oldSpace.push([Number(process.hrtime.bigint() / 1000n), require('v8').getHeapSpaceStatistics().find((x) => x.space_name === 'old_space')?.space_used_size ?? 0, process.memoryUsage().external]), 100).unref();
  process.on('SIGWINCH', () => {
    marks.push(Number(process.hrtime.bigint() / 1000n));
    const m = process.memoryUsage();
    spaces.push({ ...Object.fromEntries(require('v8').getHeapSpaceStatistics().map((x) => [x.space_name, x.space_used_size])), external: m.external, arrayBuffers: m.arrayBuffers });
    if (marks.length % 2) s.post('HeapProfiler.startSampling', { samplingInterval: 16384, includeObjectsCollectedByMajorGC: !process.env.HEAP_LIVE, includeObjectsCollectedByMinorGC: !process.env.HEAP_LIVE });
    else s.post('HeapProfiler.stopSampling', (err, r) => !err && heaps.push(r.profile));
  });
  s.post('HeapProfiler.enable');
  const dir = process.env.PROFILE_DIR || require('os').tmpdir();
  process.prependListener('SIGTERM', () => {
    // (an in-thread session answers synchronously: written before Nest's handler re-raises)
    s.post('Profiler.stop', (err, r) => {
      if (!err) fs.writeFileSync(path.join(dir, `server-${Date.now()}.cpuprofile`), JSON.stringify({ ...r.profile, marks, gcs, heaps, spaces, oldSpace }));
    });
  });
}

function summarize(file) {
  const p = JSON.parse(fs.readFileSync(file, 'utf8'));
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const name = (n) => `${n.callFrame.functionName || '(anon)'} ${n.callFrame.url.split('/').slice(-2).join('/')}:${n.callFrame.lineNumber}`;
  const stacks = new Map();
  const names = (id) => {
    let out = stacks.get(id);
    if (out) return out;
    out = [];
    for (let c = id; c !== undefined; c = parent.get(c)) out.push(name(byId.get(c)));
    stacks.set(id, out);
    return out;
  };
  let t = p.startTime;
  const times = p.timeDeltas.map((d) => (t += d));
  const phases = [];
  if (p.marks?.length >= 4) {
    phases.push(['phase 1 (no subscribers)', p.marks[0], p.marks[1]], ['phase 3 (subscribers)', p.marks[2], p.marks[3]]);
  } else {
    let lo = Infinity;
    let hi = 0;
    p.samples.forEach((id, i) => {
      if (names(id).some((s) => s.startsWith('burst '))) [lo, hi] = [Math.min(lo, times[i]), Math.max(hi, times[i])];
    });
    phases.push(['phase 3', lo, hi]);
  }
  const idle = (k) => k.startsWith('(idle)') || k.startsWith('(program)');
  const per = phases.map(([label, lo, hi]) => {
    const self = new Map();
    const incl = new Map();
    let busy = 0;
    p.samples.forEach((id, i) => {
      if (times[i] < lo || times[i] > hi) return;
      const d = p.timeDeltas[i];
      const st = names(id);
      if (!idle(st[0])) busy += d;
      self.set(st[0], (self.get(st[0]) ?? 0) + d);
      for (const k of new Set(st)) incl.set(k, (incl.get(k) ?? 0) + d);
    });
    const secs = (hi - lo) / 1e6;
    const rate = (m) => new Map([...m].map(([k, v]) => [k, v / 1000 / secs]));
    const gc = {};
    for (const [at, ms, kind] of p.gcs ?? []) {
      if (at < lo || at > hi) continue;
      const g = (gc[kind] ??= { n: 0, ms: 0, max: 0 });
      g.n++;
      g.ms += ms;
      g.max = Math.max(g.max, ms);
    }
    return { label, secs, busy: busy / 1000 / secs, self: rate(self), incl: rate(incl), gc };
  });
  const top = (m, n = 30) => [...m].sort((a, b) => b[1] - a[1]).slice(0, n).map(([k, v]) => `${v.toFixed(1).padStart(7)} ms/s  ${k}`);
  for (const ph of per) {
    const gc = Object.entries(ph.gc).map(([k, g]) => `${k} ${(g.n / ph.secs).toFixed(1)}/s, ${(g.ms / ph.secs).toFixed(1)} ms/s, max ${g.max.toFixed(1)} ms`).join('; ');
    console.log(`=== ${ph.label}: ${ph.secs.toFixed(1)} s, main thread busy ${ph.busy.toFixed(0)} ms/s (sampled wall time: a thread waiting for a CPU counts)\nGC pauses: ${gc || 'n/a'}\n--- self\n${top(ph.self).join('\n')}\n--- inclusive\n${top(ph.incl).join('\n')}`);
  }
  // allocations by function (self), MB/s per phase
  const allocs = (p.heaps ?? []).map((h, k) => {
    const secs = ((p.marks[2 * k + 1] ?? 0) - (p.marks[2 * k] ?? 0)) / 1e6;
    const by = new Map();
    const walk = (n) => {
      const k2 = `${n.callFrame.functionName || '(anon)'} ${n.callFrame.url.split('/').slice(-2).join('/')}:${n.callFrame.lineNumber}`;
      by.set(k2, (by.get(k2) ?? 0) + n.selfSize);
      for (const c of n.children ?? []) walk(c);
    };
    walk(h.head);
    return new Map([...by].map(([k2, v]) => [k2, v / 1048576 / secs]));
  });
  const mb = (m, n = 25) => [...m].sort((a, b) => b[1] - a[1]).slice(0, n).map(([k, v]) => `${v.toFixed(2).padStart(7)} MB/s  ${k}`);
  allocs.forEach((m, k) => console.log(`=== allocations, ${per[k]?.label ?? `phase ${k}`}: ${[...m.values()].reduce((a, b) => a + b, 0).toFixed(1)} MB/s\n${mb(m).join('\n')}`));
  // old space growth (MB/s) within each phase, over the samples where it grew (between major GCs), and external memory
  if (p.oldSpace?.length && p.marks?.length >= 4) {
    for (const [k, label] of [[0, 'phase 1'], [2, 'phase 3']]) {
      const xs = p.oldSpace.filter(([t]) => t >= p.marks[k] && t <= p.marks[k + 1]);
      let grew = 0;
      let ext = 0;
      for (let i = 1; i < xs.length; i++) {
        grew += Math.max(0, xs[i][1] - xs[i - 1][1]);
        ext += Math.max(0, xs[i][2] - xs[i - 1][2]);
      }
      const secs = (p.marks[k + 1] - p.marks[k]) / 1e6;
      console.log(`=== ${label}: old space grew ${(grew / 1048576 / secs).toFixed(2)} MB/s (promotion), external memory grew ${(ext / 1048576 / secs).toFixed(2)} MB/s (100 ms samples, growth only)`);
    }
  }
  if (per.length === 2) {
    const [a, b] = per;
    const grew = (ma, mb) => {
      const d = new Map();
      for (const [k, v] of mb) d.set(k, v - (ma.get(k) ?? 0));
      for (const [k, v] of ma) if (!mb.has(k)) d.set(k, -v);
      return d;
    };
    console.log(`=== grew from phase 1 to phase 3 (busy ${a.busy.toFixed(0)} → ${b.busy.toFixed(0)} ms/s)\n--- self\n${top(grew(a.self, b.self)).join('\n')}\n--- inclusive\n${top(grew(a.incl, b.incl), 40).join('\n')}`);
  }
}

if (require.main === module) summarize(process.argv[2]);
else record();
