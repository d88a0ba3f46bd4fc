#!/usr/bin/env node
/**
 * Compares two CPU profiles written by profile.js per request served (each profile's
 * <name>.json says how many): busy µs per request, then the components and the functions whose
 * self time per request differs most (B − A), and the same for inclusive time.
 *
 *   node tools/bench/http/profile-diff.js <a.cpuprofile> <b.cpuprofile> [--top 40]
 *
 * E.g. A = the no-op route and B = PUT (what a PUT pays beyond the no-op), or A and B the same
 * scenario on two builds (`profile.js put --main <copy>/apps/api/main.js --out /tmp/a`). The
 * profiler samples wall time on the main thread, so on a loaded host the time the thread was
 * preempted is charged to whatever it was running (notably native calls that wake a thread).
 */
const fs = require('fs');
const { component } = require('./summarize-profile');

const args = process.argv.slice(2);
const top = args.includes('--top') ? Number(args[args.indexOf('--top') + 1]) : 40;

function load(file) {
  const served = JSON.parse(fs.readFileSync(file.replace(/\.cpuprofile$/, '.json'), 'utf8')).served;
  const p = JSON.parse(fs.readFileSync(file, 'utf8'));
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const short = (u) => u.replace(/^.*\/(node_modules|dist)\//, '$1/').replace(/^file:\/\//, '');
  const label = (id) => {
    const cf = byId.get(id).callFrame;
    if (cf.url) return `${cf.functionName || '(anonymous)'} ${short(cf.url)}:${cf.lineNumber + 1}`;
    const pf = parent.has(id) ? byId.get(parent.get(id)).callFrame : null;
    return `${cf.functionName || '(anonymous)'} (native${pf && pf.url ? ` via ${pf.functionName || '(anonymous)'} ${short(pf.url)}` : ''})`;
  };
  const comp = (id) => {
    for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
      const c = component(byId.get(cur).callFrame.url);
      if (c) return c;
    }
    return byId.get(id).callFrame.functionName;
  };
  const out = { self: new Map(), incl: new Map(), comp: new Map(), busy: 0, served };
  const add = (m, k, v) => m.set(k, (m.get(k) ?? 0) + v);
  for (let i = 0; i < p.samples.length; i++) {
    const id = p.samples[i];
    if (byId.get(id).callFrame.functionName === '(idle)') continue;
    const dt = (p.timeDeltas[i] ?? 0) / served; // µs per request
    out.busy += dt;
    add(out.self, label(id), dt);
    add(out.comp, comp(id), dt);
    const seen = new Set();
    for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
      const l = label(cur);
      if (!seen.has(l)) add(out.incl, l, dt), seen.add(l);
    }
  }
  return out;
}

const [a, b] = [load(args[0]), load(args[1])];
const f = (x) => x.toFixed(2).padStart(7);
console.log(`busy µs per request: A ${a.busy.toFixed(1)} (${a.served} served), B ${b.busy.toFixed(1)} (${b.served} served)`);
for (const [title, key, n] of [
  ['components, self', 'comp', 1000],
  ['functions, self', 'self', top],
  ['functions, inclusive', 'incl', top],
]) {
  console.log(`\n${title}: B − A, A, B (µs per request)`);
  const keys = new Set([...a[key].keys(), ...b[key].keys()]);
  const rows = [...keys].map((k) => [k, a[key].get(k) ?? 0, b[key].get(k) ?? 0]);
  rows.sort((x, y) => Math.abs(y[2] - y[1]) - Math.abs(x[2] - x[1]));
  for (const [k, va, vb] of rows.slice(0, n)) if (Math.abs(vb - va) >= 0.05) console.log(`${f(vb - va)} ${f(va)} ${f(vb)}  ${k}`);
}
