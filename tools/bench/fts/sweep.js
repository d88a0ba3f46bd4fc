#!/usr/bin/env node
// Parameter study on Cranfield (in memory, same analysis and scoring code as the store path):
// a k1 × b grid and analysis variants, to pick general defaults. Not a per-query tuning.
// Usage: node tools/bench/fts/sweep.js
'use strict';
const fts = require('@mmdb/fts');
const { loadDocs, loadQueries, loadQrels, evaluateAsync } = require('./data');
const { words } = require('./peers');

function build(docs, analyzer, textOf) {
  const ix = new fts.FieldIndex();
  const pos = new Map();
  const vectors = new Map();
  let total = 0;
  for (const d of docs) {
    const toks = analyzer.analyze(textOf(d));
    const by = new Map();
    for (const t of toks) (by.get(t.term) || by.set(t.term, []).get(t.term)).push(t.pos);
    for (const [t, ps] of by) pos.set(`${t}|${d.id}`, ps);
    vectors.set(d.id, new Map([...by].map(([t, ps]) => [t, ps.length])));
    ix.putDoc(d.id, toks.length, [...by.keys()], [...by.values()].map((ps) => ps.length));
    total += toks.length;
  }
  ix.setStats(docs.length, total);
  return { ix, pos, vectors };
}

const built = new Map();
async function run(docs, queries, qrels, { analyzer = 'english', stopwords, k1 = 1.2, b = 0.75, textOf = (d) => d.body, rm3 }) {
  const a = fts.analyzerFor({ analyzer, stopwords });
  const key = `${analyzer}|${stopwords}|${textOf}`;
  if (!built.has(key)) built.set(key, build(docs, a, textOf));
  const { ix, pos, vectors } = built.get(key);
  const ctx = { index: ix, params: { k1, b }, positions: async (t, d) => pos.get(`${t}|${d}`), termVector: async (d) => vectors.get(d) };
  return evaluateAsync(queries, qrels, async (q) => {
    const clauses = fts.compileQuery(fts.parseQuery(q.text), a);
    const hits = rm3 ? await fts.searchWithFeedback(clauses, ctx, 1000, rm3) : await fts.searchClauses(clauses, ctx, 1000);
    return hits.map((h) => h.doc_id);
  });
}

async function main() {
  const docs = loadDocs();
  const queries = loadQueries().map((q) => ({ ...q, text: words(q.text).join(' ') }));
  const qrels = loadQrels();
  const show = (label, m) => console.log(`${label.padEnd(40)} MAP ${m.map.toFixed(4)}  nDCG@10 ${m.ndcg10.toFixed(4)}  P@10 ${m.p10.toFixed(4)}`);
  const mode = process.argv[2] || 'grid';
  if (mode === 'grid') {
    for (const k1 of [0.6, 0.9, 1.2, 1.5, 2.0])
      for (const b of [0.3, 0.5, 0.75, 0.9, 1.0]) show(`k1=${k1} b=${b}`, await run(docs, queries, qrels, { k1, b }));
  } else if (mode === 'rm3') {
    for (const k1 of [0.9, 1.2, 1.5, 2.0])
      for (const b of [0.5, 0.75, 0.9]) show(`rm3 k1=${k1} b=${b}`, await run(docs, queries, qrels, { k1, b, rm3: {} }));
    for (const [d, t, w] of [[5, 20, 0.5], [10, 10, 0.5], [10, 40, 0.5], [10, 20, 0.3], [10, 20, 0.7], [20, 20, 0.5]])
      show(`rm3 docs=${d} terms=${t} weight=${w}`, await run(docs, queries, qrels, { rm3: { docs: d, terms: t, weight: w } }));
  } else {
    show('english (default)', await run(docs, queries, qrels, {}));
    show('english, no stop words', await run(docs, queries, qrels, { stopwords: [] }));
    show('standard (no stemming)', await run(docs, queries, qrels, { analyzer: 'standard' }));
    show('english, title twice', await run(docs, queries, qrels, { textOf: (d) => `${d.title} ${d.body}` }));
    show('english, text only', await run(docs, queries, qrels, { textOf: (d) => d.text }));
  }
}
main();
