// Edge lists for the graph benchmark: ca-GrQc read in place, and a seeded synthetic graph.
'use strict';
const { rng } = require('../rng');
const fs = require('fs');
const path = require('path');

const GRQC = path.resolve(__dirname, '../../../../shared/datasets/graph/CA-GrQc.txt');

/** ca-GrQc: line 1 is a header ("nodes<TAB>edges"), then "from<TAB>to". Weights are seeded 1..10. */
function loadGrQc(file = GRQC) {
  const r = rng(11);
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  const edges = [];
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i].trim();
    if (!line) continue;
    const [a, b] = line.split('\t');
    edges.push([a, b, 1 + Math.floor(r() * 10)]);
  }
  return edges;
}

/** `m` distinct directed edges over `n` nodes, skewed (a few hubs), weights 1..10, seeded. */
function synthetic(n = 100_000, m = 1_000_000, seed = 42) {
  const r = rng(seed);
  const seen = new Set();
  const edges = [];
  while (edges.length < m) {
    const a = Math.floor(r() * n);
    const b = Math.floor(Math.pow(r(), 1.5) * n); // targets lean to low ids: hubs
    if (a === b) continue;
    const k = a * n + b;
    if (seen.has(k)) continue;
    seen.add(k);
    edges.push([`v${a}`, `v${b}`, 1 + Math.floor(r() * 10)]);
  }
  return edges;
}

module.exports = { loadGrQc, synthetic, rng, GRQC };
