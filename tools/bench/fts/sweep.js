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
  let total = 0;
  for (const d of docs) {
    const toks = analyzer.analyze(textOf(d));
    const by = new Map();
    for (const t of toks) (by.get(t.term) || by.set(t.term, []).get(t.term)).push(t.pos);
    for (const [t, ps] of by) pos.set(`${t}|${d.id}`, ps);
    ix.putDoc(d.id, toks.length, [...by.keys()], [...by.values()].map((ps) => ps.length));
    total += toks.length;
  }
  ix.setStats(docs.length, total);
  return { ix, pos };
}

async function run(docs, queries, qrels, { analyzer = 'english', stopwords, k1 = 1.2, b = 0.75, textOf = (d) => d.body }) {
  const a = fts.analyzerFor({ analyzer, stopwords });
  const { ix, pos } = build(docs, a, textOf);
  const ctx = { index: ix, params: { k1, b }, positions: async (t, d) => pos.get(`${t}|${d}`) };
  return evaluateAsync(queries, qrels, async (q) =>
    (await fts.searchClauses(fts.compileQuery(fts.parseQuery(q.text), a), ctx, 1000)).map((h) => h.doc_id),
  );
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
  } else {
    show('english (default)', await run(docs, queries, qrels, {}));
    show('english, no stop words', await run(docs, queries, qrels, { stopwords: [] }));
    show('standard (no stemming)', await run(docs, queries, qrels, { analyzer: 'standard' }));
    show('english, title twice', await run(docs, queries, qrels, { textOf: (d) => `${d.title} ${d.body}` }));
    show('english, text only', await run(docs, queries, qrels, { textOf: (d) => d.text }));
  }
}
main();
