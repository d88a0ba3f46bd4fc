#!/usr/bin/env node
// Self time by function (and by file) of a .cpuprofile written by server-probe.js
// (GRAPH_PROBE_PROFILE=1): node tools/bench/graph/profile-summary.js <file.cpuprofile> [top]
'use strict';
const fs = require('fs');
const prof = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const top = Number(process.argv[3] ?? 25);
const byId = new Map(prof.nodes.map((n) => [n.id, n]));
const dt = new Map();
for (let i = 0; i < prof.samples.length; i++) dt.set(prof.samples[i], (dt.get(prof.samples[i]) ?? 0) + (prof.timeDeltas[i] ?? 0));
const total = [...dt.values()].reduce((a, b) => a + b, 0);
const fn = new Map();
const file = new Map();
for (const [id, us] of dt) {
  const cf = byId.get(id).callFrame;
  const f = `${cf.functionName || '(anon)'} ${cf.url.replace(/^.*node_modules\//, 'nm/').replace(/^.*\/work\/main\//, '')}:${cf.lineNumber + 1}`;
  fn.set(f, (fn.get(f) ?? 0) + us);
  const u = cf.url ? cf.url.replace(/^.*node_modules\/((@[^/]+\/)?[^/]+).*$/, 'nm/$1').replace(/^.*\/work\/main\/([^/]+\/[^/]+).*$/, '$1') : `(${cf.functionName})`;
  file.set(u, (file.get(u) ?? 0) + us);
}
const show = (title, m) => {
  console.log(`\n${title} (total ${(total / 1000).toFixed(0)} ms sampled)`);
  for (const [k, us] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${((100 * us) / total).toFixed(1).padStart(5)}%  ${k}`);
};
show('self time by package / project', file);
show('self time by function', fn);
