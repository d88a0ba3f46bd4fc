/**
 * Diagnostic for the watch benchmark: where the server's time goes during phase 3.
 *
 *   WATCH_SERVER_NODE_OPTIONS="-r ./tools/bench/watch/cpu-profile.js" PROFILE_DIR=/tmp/p \
 *     node tools/bench/watch/bench.js --big 0 ...      # the server writes <PROFILE_DIR>/server-<ms>.cpuprofile
 *   node tools/bench/watch/cpu-profile.js /tmp/p/server-<ms>.cpuprofile   # phase 3's time by function
 *
 * Required into the server (NODE_OPTIONS), it profiles the whole run (V8 sampling, 200 µs) and
 * writes the profile when the bench stops the server (SIGTERM: Nest closes, then re-raises the
 * signal, so --cpu-prof would never write). Run as a script, it prints phase 3's self and
 * inclusive time per function (phase 3: from the first to the last sample under a watch burst).
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
  const dir = process.env.PROFILE_DIR || require('os').tmpdir();
  process.prependListener('SIGTERM', () => {
    // (an in-thread session answers synchronously: written before Nest's handler re-raises)
    s.post('Profiler.stop', (err, r) => {
      if (!err) fs.writeFileSync(path.join(dir, `server-${Date.now()}.cpuprofile`), JSON.stringify(r.profile));
    });
  });
}

function summarize(file) {
  const p = JSON.parse(fs.readFileSync(file, 'utf8'));
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const name = (n) => `${n.callFrame.functionName || '(anon)'} ${n.callFrame.url.split('/').slice(-2).join('/')}:${n.callFrame.lineNumber}`;
  const names = (id) => {
    const out = [];
    for (let c = id; c !== undefined; c = parent.get(c)) out.push(name(byId.get(c)));
    return out;
  };
  let t = p.startTime;
  const times = p.timeDeltas.map((d) => (t += d));
  let lo = Infinity;
  let hi = 0;
  p.samples.forEach((id, i) => {
    if (names(id).some((s) => s.startsWith('burst '))) [lo, hi] = [Math.min(lo, times[i]), Math.max(hi, times[i])];
  });
  const self = new Map();
  const incl = new Map();
  let total = 0;
  p.samples.forEach((id, i) => {
    if (times[i] < lo || times[i] > hi) return;
    const d = p.timeDeltas[i];
    total += d;
    const st = names(id);
    self.set(st[0], (self.get(st[0]) ?? 0) + d);
    for (const k of new Set(st)) incl.set(k, (incl.get(k) ?? 0) + d);
  });
  const secs = (hi - lo) / 1e6;
  const top = (m) => [...m].sort((a, b) => b[1] - a[1]).slice(0, 40).map(([k, v]) => `${((100 * v) / total).toFixed(1).padStart(5)}% ${(v / 1000 / secs).toFixed(0).padStart(5)} ms/s  ${k}`);
  console.log(`phase 3: ${secs.toFixed(1)} s\n--- self\n${top(self).join('\n')}\n--- inclusive\n${top(incl).join('\n')}`);
}

if (require.main === module) summarize(process.argv[2]);
else record();
