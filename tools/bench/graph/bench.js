#!/usr/bin/env node
// Graph benchmark: neighbors, BFS depth 3 and Dijkstra from seeded random nodes on
// ca-GrQc and a synthetic 1,000,000-edge graph, in-process and (with --https) over
// HTTPS, beside SQLite recursive CTEs on the same edges. See README.md here.
'use strict';
const os = require('os');
const fs = require('fs');
const path = require('path');
const { loadGrQc, synthetic, rng } = require('./data');
const { SqlitePeer } = require('./sqlite-peer');
const { measure, printTable } = require('./stats');

const HTTPS_WARMUP = 3000;

const args = process.argv.slice(2);
const flag = (name) => args.includes(`--${name}`);
const opt = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : dflt;
};

const graph = require('@mmdb/graph');

function pickQueries(edges, count, seed) {
  const r = rng(seed);
  const srcs = [...new Set(edges.map((e) => e[0]))];
  const nodes = [...new Set(edges.flatMap((e) => [e[0], e[1]]))];
  const q = [];
  for (let i = 0; i < count; i++) q.push({ src: srcs[Math.floor(r() * srcs.length)], dst: nodes[Math.floor(r() * nodes.length)] });
  return q;
}

function buildAdjacency(edges) {
  const a = new graph.Adjacency();
  for (const [src, dst, weight] of edges) a.append({ src, dst, owner: null, weight });
  return a;
}

/** Checks that our answers equal SQLite's on a sample, so the table compares equal work. */
function crossCheck(adj, peer, queries) {
  const weight = (u, k) => adj.out[u].w[k];
  for (const { src, dst } of queries) {
    const a = new Set(graph.bfs(adj, src, 3).map((v) => `${v.node}@${v.depth}`));
    const b = new Set(peer.bfs(src, 3).map((v) => `${v.node}@${v.depth}`));
    if (a.size !== b.size || [...a].some((x) => !b.has(x))) throw new Error(`bfs mismatch from ${src}`);
    const d1 = graph.dijkstra(adj, src, dst, weight).total_weight;
    const d2 = peer.dijkstra(src, dst);
    if (d1 !== d2) throw new Error(`dijkstra mismatch ${src}->${dst}: ${d1} vs ${d2}`);
    const n1 = new Set(graph.bfs(adj, src, 1).map((v) => v.node));
    if (n1.size - 1 !== new Set(peer.neighbors(src)).size) throw new Error(`neighbors mismatch at ${src}`);
  }
}

async function runDataset(name, edges, opts) {
  const rows = [];
  const t0 = Date.now();
  const peer = new SqlitePeer(edges);
  const tSql = Date.now() - t0;
  const t1 = Date.now();
  const adj = buildAdjacency(edges);
  const tAdj = Date.now() - t1;
  console.log(`${name}: ${edges.length} edges, ${adj.nodeCount} nodes; sqlite load ${tSql} ms, adjacency build ${tAdj} ms`);
  const qN = pickQueries(edges, opts.nNeighbors, 1);
  const qB = pickQueries(edges, opts.nBfs, 2);
  const qD = pickQueries(edges, opts.nDijkstra, 3);
  crossCheck(adj, peer, qD.slice(0, 10));
  console.log(`${name}: answers agree with SQLite on 10 sampled bfs/dijkstra/neighbors queries`);

  const weight = (u, k) => adj.out[u].w[k];
  const sN = await measure(qN, (q) => peer.neighbors(q.src));
  const sB = await measure(qB, (q) => peer.bfs(q.src, 3));
  const sD = await measure(qD, (q) => peer.dijkstra(q.src, q.dst));
  rows.push({ dataset: name, op: 'neighbors', target: 'in-process adjacency', m: await measure(qN, (q) => adj.neighbors(q.src)), peer: sN });
  rows.push({ dataset: name, op: 'bfs depth 3', target: 'in-process adjacency', m: await measure(qB, (q) => graph.bfs(adj, q.src, 3)), peer: sB });
  rows.push({ dataset: name, op: 'dijkstra', target: 'in-process adjacency', m: await measure(qD, (q) => graph.dijkstra(adj, q.src, q.dst, weight)), peer: sD });

  for (const t of opts.targets) {
    const target = await t.prepare(name, edges);
    if (!target) continue;
    // Over HTTPS, steady state: 3,000 warm-up requests first (the first few thousand requests
    // of a fresh client and server pay for JIT tier-up, with p99 around 4–6 ms).
    const warm = target.label.startsWith('HTTPS') ? HTTPS_WARMUP : undefined;
    rows.push({ dataset: name, op: 'neighbors', target: target.label, m: await measure(qN, (q) => target.neighbors(q.src), warm), peer: sN });
    rows.push({ dataset: name, op: 'bfs depth 3', target: target.label, m: await measure(qB, (q) => target.bfs(q.src, 3), warm), peer: sB });
    rows.push({ dataset: name, op: 'dijkstra', target: target.label, m: await measure(qD, (q) => target.dijkstra(q.src, q.dst), warm && 300), peer: sD });
    await target.close?.();
  }
  peer.close();
  return rows;
}

async function main() {
  const targets = [];
  if (!flag('no-store')) targets.push(require('./store-target').storeTarget({ syntheticThroughStore: !flag('skip-synthetic-store') }));
  if (flag('https')) targets.push(require('./https-target').httpsTarget());
  const small = flag('quick');
  const all = [];
  all.push(...(await runDataset('ca-GrQc', loadGrQc(), { nNeighbors: 2000, nBfs: 1000, nDijkstra: 300, targets })));
  if (!flag('skip-synthetic')) {
    const edges = synthetic(small ? 10_000 : 100_000, small ? 100_000 : 1_000_000, 42);
    all.push(...(await runDataset(small ? 'synthetic-100k' : 'synthetic-1M', edges, { nNeighbors: 2000, nBfs: 200, nDijkstra: 100, targets })));
  }
  console.log(`\nnode ${process.version}, ${os.cpus().length} cpu(s) ${os.cpus()[0]?.model ?? ''}`);
  printTable('graph benchmark (latency per query; speed-up = sqlite / ours)', all);
  const out = opt('json');
  if (out) fs.writeFileSync(path.resolve(out), JSON.stringify(all, null, 2));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
