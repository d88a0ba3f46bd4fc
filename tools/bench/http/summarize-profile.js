#!/usr/bin/env node
/**
 * Summarises a V8 .cpuprofile: self and inclusive time per function and per component
 * (our apps/api code, libs/*, fastify, Nest, prom-client, classic-level, node internals, GC).
 *
 *   node tools/bench/http/summarize-profile.js <file.cpuprofile> [--top 30] [--match regex]
 *
 * `--match` also prints the inclusive share of every function whose "name file" matches;
 * `--callers regex` prints, for functions matching it, their callers (4 frames up) by self+children time.
 * Time is attributed from the sample timeDeltas. A native frame (no script url) is charged to
 * the component of its nearest ancestor with one, so e.g. a JSON.stringify inside prom-client
 * counts as metrics. Percentages are of busy (non-idle) time.
 */
const fs = require('fs');
const path = require('path');

function component(url) {
  if (!url) return null;
  const u = url.replace(/^file:\/\//, '');
  let m = /node_modules\/(@[^/]+\/[^/]+|[^/]+)/.exec(u);
  if (m) {
    const p = m[1];
    if (/^(fastify|find-my-way|avvio|light-my-request|@fastify\/|fast-json-stringify|secure-json-parse|fast-querystring|abstract-logging|pino|thread-stream|process-warning|toad-cache|rfdc)/.test(p)) return 'fastify';
    if (p.startsWith('@nestjs/')) return 'nest (' + p.slice(8) + ')';
    if (/^(classic-level|abstract-level|level-|maybe-combine-errors|module-error|napi-macros|node-gyp-build)/.test(p)) return 'classic-level';
    return p;
  }
  m = /dist\/(apps\/[^/]+|libs\/[^/]+)/.exec(u);
  if (m) return m[1];
  if (u.startsWith('node:')) {
    const n = u.slice(5).replace(/^internal\//, '');
    if (/^(tls|_tls|crypto)/.test(n)) return 'node tls/crypto';
    if (/^(http|_http|url|querystring)/.test(n)) return 'node http';
    if (/^(streams|stream|net|_stream)/.test(n)) return 'node net/streams';
    return 'node other';
  }
  if (u.includes('tools/bench')) return 'bench wrapper';
  return 'other: ' + path.basename(u);
}

function main() {
  const args = process.argv.slice(2);
  const file = args[0];
  const top = Number(args[args.indexOf('--top') + 1]) || 30;
  const callers = args.includes('--callers') ? new RegExp(args[args.indexOf('--callers') + 1]) : null;
  const match = args.includes('--match') ? new RegExp(args[args.indexOf('--match') + 1]) : null;
  const p = JSON.parse(fs.readFileSync(file, 'utf8'));
  const byId = new Map();
  for (const n of p.nodes) byId.set(n.id, n);
  const parent = new Map();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  // A native frame's name can be wrong (napi functions of addons show unrelated names, e.g.
  // classic-level's db_get as "HierarchicalNSW"), so it is labelled with its JS caller.
  const label = (n) => {
    const cf = n.callFrame;
    if (!cf.url) {
      const p = parent.has(n.id) ? byId.get(parent.get(n.id)).callFrame : null;
      const via = p && p.url ? ` via ${p.functionName || '(anonymous)'} ${p.url.replace(/^.*\/(node_modules|dist)\//, '$1/').replace(/^file:\/\//, '')}` : '';
      return `${cf.functionName || '(anonymous)'} (native${via})`;
    }
    return `${cf.functionName || '(anonymous)'} ${cf.url.replace(/^.*\/(node_modules|dist)\//, '$1/').replace(/^file:\/\//, '')}:${cf.lineNumber + 1}`;
  };
  const special = new Set(['(idle)', '(program)', '(garbage collector)', '(root)']);
  // component of a node: its own, else nearest ancestor's
  const compOf = new Map();
  const comp = (id) => {
    if (compOf.has(id)) return compOf.get(id);
    const n = byId.get(id);
    let c = component(n.callFrame.url);
    if (!c) {
      if (special.has(n.callFrame.functionName)) c = n.callFrame.functionName;
      else c = parent.has(id) ? comp(parent.get(id)) : '(native)';
      if (c === '(root)') c = '(native, no js caller)';
    }
    compOf.set(id, c);
    return c;
  };
  const self = new Map();
  const stacks = new Map();
  const incl = new Map();
  const compSelf = new Map();
  const compIncl = new Map();
  let total = 0;
  let idle = 0;
  const add = (m, k, v) => m.set(k, (m.get(k) ?? 0) + v);
  for (let i = 0; i < p.samples.length; i++) {
    const dt = (p.timeDeltas[i] ?? 0) / 1000; // ms
    const id = p.samples[i];
    const n = byId.get(id);
    total += dt;
    if (n.callFrame.functionName === '(idle)') {
      idle += dt;
      continue;
    }
    add(self, label(n), dt);
    if (callers) {
      const chain = [];
      let hit = false;
      for (let cur = id; cur !== undefined && chain.length < 5; cur = parent.get(cur)) {
        const l = label(byId.get(cur));
        if (!hit && callers.test(l)) hit = true;
        if (hit) chain.push(l);
      }
      if (hit) add(stacks, chain.join('\n      <- '), dt);
    }
    add(compSelf, comp(id), dt);
    const seenF = new Set();
    const seenC = new Set();
    for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
      const cn = byId.get(cur);
      if (cn.callFrame.functionName === '(root)') break;
      const l = label(cn);
      if (!seenF.has(l)) {
        seenF.add(l);
        add(incl, l, dt);
      }
      const c = comp(cur);
      if (!seenC.has(c)) {
        seenC.add(c);
        add(compIncl, c, dt);
      }
    }
  }
  const busy = total - idle;
  const pct = (v) => ((100 * v) / busy).toFixed(1).padStart(5) + '%';
  console.log(`${path.basename(file)}: ${(total / 1000).toFixed(2)} s wall, busy ${(busy / 1000).toFixed(2)} s (${((100 * busy) / total).toFixed(0)}%), idle ${(idle / 1000).toFixed(2)} s; % of busy`);
  console.log('\nby component   self   inclusive');
  for (const [k, v] of [...compSelf].sort((a, b) => b[1] - a[1])) console.log(`  ${pct(v)} ${pct(compIncl.get(k) ?? 0)}  ${k}`);
  console.log(`\ntop ${top} self`);
  for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${pct(v)}  ${k}`);
  console.log(`\ntop ${top} inclusive`);
  for (const [k, v] of [...incl].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${pct(v)}  ${k}`);
  if (callers) {
    console.log(`\ncallers of ${callers}`);
    for (const [k, v] of [...stacks].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${pct(v)}  ${k}`);
  }
  if (match) {
    console.log(`\ninclusive, matching ${match}`);
    for (const [k, v] of [...incl].filter(([k]) => match.test(k)).sort((a, b) => b[1] - a[1])) console.log(`  ${pct(v)}  ${k}`);
  }
}

if (require.main === module) main();

module.exports = { component };
