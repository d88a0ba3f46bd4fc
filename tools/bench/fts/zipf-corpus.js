// The seeded synthetic corpus of the 1M-doc benchmarks: Zipf(s = 1) over a 50,000-word
// vocabulary ("w<rank>", not stemmed), 10–49 words per doc, and 1–4-word queries that mix
// popular words (sampled by Zipf) and rarer ones (uniform over ranks). `corpus(n, v)` and
// `queries(q, v)` take another vocabulary size (the cost curve's large-vocabulary runs: with
// v = 2,000,000, 1M docs hold ~1.7M distinct words (100,000 docs ~550,000), most of them in one or two docs).
'use strict';
const { rng } = require('../rng');
const V = 50_000;
const SEED = 42;

/** Zipf(s = 1) over v words (default V): inverse CDF by binary search. */
function zipfSampler(r, v = V) {
  const cdf = new Float64Array(v);
  let acc = 0;
  for (let i = 0; i < v; i++) cdf[i] = acc += 1 / (i + 1);
  for (let i = 0; i < v; i++) cdf[i] /= acc;
  return () => {
    const u = r();
    let lo = 0;
    let hi = v - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (cdf[mid] < u) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}

function* corpus(n, v = V) {
  const r = rng(SEED);
  const z = zipfSampler(r, v);
  for (let i = 0; i < n; i++) {
    const len = 10 + Math.floor(r() * 40);
    const w = new Array(len);
    for (let j = 0; j < len; j++) w[j] = `w${z()}`;
    yield { id: `d${i}`, body: w.join(' ') };
  }
}

function queries(q, v = V) {
  const r = rng(SEED + 1);
  const z = zipfSampler(r, v);
  const out = [];
  for (let i = 0; i < q; i++) {
    const k = 1 + Math.floor(r() * 4);
    out.push(Array.from({ length: k }, () => `w${r() < 0.5 ? z() : Math.floor(r() * v)}`).join(' '));
  }
  return out;
}

module.exports = { V, SEED, rng, zipfSampler, corpus, queries };
