#!/usr/bin/env node
/**
 * What the server was doing during each stall (README.md "What the stalls under writes were"):
 * reads the CPU profile and the stalls `http.js --cpu-prof FILE` wrote (FILE, FILE.stalls.json;
 * both on the same monotonic clock) and prints, per stall over 50 ms, the profile's time inside
 * it by function (inclusive, heaviest first, the runtime's own frames left out) and its heaviest
 * stack.
 *
 *   node tools/bench/stalls/http.js --docs 200000 --seconds 60 --writes-per-s 5 --cpu-prof /tmp/s.cpuprofile
 *   node tools/bench/stalls/prof-stalls.js /tmp/s.cpuprofile [--top 12]
 */
'use strict';
const fs = require('fs');
const path = require('path');
const { numArg } = require('../server');

const file = process.argv[2];
const TOP = numArg('top', 12);
/** `--on-cpu`: only the stalls mostly on CPU (on CPU ≥ run-queue wait + blocked). */
const ON_CPU = process.argv.includes('--on-cpu');
const prof = JSON.parse(fs.readFileSync(file, 'utf8'));
const stalls = JSON.parse(fs.readFileSync(`${file}.stalls.json`, 'utf8'));

const byId = new Map(prof.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const label = (n) => {
  const f = n.callFrame;
  const u = f.url ? `${path.basename(f.url)}:${f.lineNumber + 1}` : '';
  return `${f.functionName || '(anonymous)'}${u ? ` ${u}` : ''}`;
};
const stackOf = (id) => {
  const s = [];
  for (let x = id; x !== undefined; x = parent.get(x)) s.push(byId.get(x));
  return s.reverse().slice(1); // without (root)
};
// sample times (µs), each sample's duration = the delta to the next one
const times = [];
let t = prof.startTime;
for (const d of prof.timeDeltas) times.push((t += d));

const f1 = (x) => x.toFixed(1);
for (const s of [...stalls].sort((a, b) => a.at - b.at).filter((x) => !ON_CPU || x.cpu >= x.runq + x.blocked)) {
  const from = s.at * 1000;
  const to = (s.at + s.ms) * 1000;
  const incl = new Map();
  const stacks = new Map();
  let total = 0;
  for (let i = 0; i < times.length - 1; i++) {
    if (times[i] < from || times[i] >= to) continue;
    const dt = (times[i + 1] - times[i]) / 1000;
    total += dt;
    const st = stackOf(prof.samples[i]);
    const seen = new Set();
    for (const n of st) {
      const l = label(n);
      if (seen.has(l)) continue;
      seen.add(l);
      incl.set(l, (incl.get(l) ?? 0) + dt);
    }
    const key = st.filter((n) => n.callFrame.url.includes('/dist/') || !n.callFrame.url).map(label).slice(-12).join(' > ');
    stacks.set(key, (stacks.get(key) ?? 0) + dt);
  }
  const gcs = s.gcs.filter((g) => g.ms >= 2).map((g) => `${g.kind} ${f1(g.ms)}`).join(', ');
  console.log(`\n## stall ${f1(s.ms)} ms (on CPU ${f1(s.cpu)}, run queue ${f1(s.runq)}, blocked ${f1(s.blocked)})${gcs ? ` GCs: ${gcs}` : ''}; profiled ${f1(total)} ms`);
  const skip = /^\((root|program|idle)\)/;
  for (const [l, ms] of [...incl].filter(([l]) => !skip.test(l)).sort((a, b) => b[1] - a[1]).slice(0, TOP)) console.log(`  ${f1(ms).padStart(6)} ms  ${l}`);
  const heavy = [...stacks].sort((a, b) => b[1] - a[1])[0];
  if (heavy) console.log(`  heaviest stack (${f1(heavy[1])} ms, leaf last): ${heavy[0]}`);
}
