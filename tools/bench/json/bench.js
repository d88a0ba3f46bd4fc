#!/usr/bin/env node
/**
 * The exact JSON codec (libs/core json.ts) beside its peer, JSON.parse / JSON.stringify, in the
 * same run: the cost of keeping big integers exact on the request and storage paths.
 *
 *   npm run build && node tools/bench/json/bench.js [--scale 1]
 *
 * Bodies: a small row; a 784-float vector of 17-digit doubles (float32 values printed as doubles:
 * every literal gets the closer look); the same vector of short literals (MNIST-like pixels);
 * a row with big integers (the lossless path).
 */
const path = require('path');
const { parseJsonExact, stringifyJson } = require(path.join(__dirname, '../../../libs/core/dist'));

const args = process.argv.slice(2);
const i = args.indexOf('--scale');
const SCALE = i >= 0 ? Number(args[i + 1]) : 1;

let seed = 42;
const rnd = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
const bodies = {
  'row (6 columns)': JSON.stringify({ id: 'abc', name: 'apple', price: 1.5, qty: 12, tags: ['a', 'b'], ts: 1732500000000 }),
  'vector 784 × 17-digit doubles': JSON.stringify({ id: 'v1', embedding: Array.from({ length: 784 }, () => Math.fround(rnd())) }),
  'vector 784 × short literals': JSON.stringify({ id: 'v1', embedding: Array.from({ length: 784 }, () => Math.floor(rnd() * 256)) }),
  'row with big integers': '{"id":"big","n":9223372036854775807,"tags":{"order_ref":12345678901234567891}}',
};

function time(f, arg, n) {
  for (let k = 0; k < Math.min(n, 1000); k++) f(arg);
  const t0 = process.hrtime.bigint();
  for (let k = 0; k < n; k++) f(arg);
  return Number(process.hrtime.bigint() - t0) / n / 1000;
}

const rows = [];
for (const [name, text] of Object.entries(bodies)) {
  const n = Math.max(200, Math.round((text.length > 1000 ? 3000 : 100000) * SCALE));
  const value = parseJsonExact(text);
  const peerParse = time(JSON.parse, text, n);
  const oursParse = time(parseJsonExact, text, n);
  let peerStr;
  try {
    peerStr = time(JSON.stringify, value, n);
  } catch {
    peerStr = NaN; // JSON.stringify cannot write a bigint
  }
  const oursStr = time(stringifyJson, value, n);
  rows.push([name, peerParse, oursParse, peerStr, oursStr]);
}
const f = (x) => (Number.isNaN(x) ? 'throws' : x.toFixed(2));
const r = (a, b) => (Number.isNaN(b) ? '' : `${(a / b).toFixed(2)}×`);
console.log(`node ${process.version}\n`);
console.log('| body | JSON.parse µs | parseJsonExact µs | ratio | JSON.stringify µs | stringifyJson µs | ratio |');
console.log('|---|---:|---:|---:|---:|---:|---:|');
for (const [name, pp, op, ps, os] of rows) console.log(`| ${name} | ${f(pp)} | ${f(op)} | ${r(op, pp)} | ${f(ps)} | ${f(os)} | ${r(os, ps)} |`);
