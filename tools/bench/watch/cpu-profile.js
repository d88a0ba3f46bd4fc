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
 * end of phases 1 and 3 (when PROFILE_DIR is set); the marks are kept in the profile's file
 * (`marks`, µs on the profile's clock). Run as a script, it prints each phase's main-thread time
 * (ms of CPU per s of wall time) per function, self and inclusive, and the functions whose time
 * grew most from phase 1 to phase 3: what the subscribers cost the thread the commits run on.
 * Without marks (an older profile), phase 3 is from the first to the last sample under a burst.
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
  // (the profile's clock is the monotonic one hrtime reads)
  process.on('SIGWINCH', () => marks.push(Number(process.hrtime.bigint() / 1000n)));
  const dir = process.env.PROFILE_DIR || require('os').tmpdir();
  process.prependListener('SIGTERM', () => {
    // (an in-thread session answers synchronously: written before Nest's handler re-raises)
    s.post('Profiler.stop', (err, r) => {
      if (!err) fs.writeFileSync(path.join(dir, `server-${Date.now()}.cpuprofile`), JSON.stringify({ ...r.profile, marks }));
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
    return { label, secs, busy: busy / 1000 / secs, self: rate(self), incl: rate(incl) };
  });
  const top = (m, n = 30) => [...m].sort((a, b) => b[1] - a[1]).slice(0, n).map(([k, v]) => `${v.toFixed(1).padStart(7)} ms/s  ${k}`);
  for (const ph of per) {
    console.log(`=== ${ph.label}: ${ph.secs.toFixed(1)} s, main thread busy ${ph.busy.toFixed(0)} ms/s\n--- self\n${top(ph.self).join('\n')}\n--- inclusive\n${top(ph.incl).join('\n')}`);
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
