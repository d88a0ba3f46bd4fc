#!/usr/bin/env node
// Ranking features on Cranfield, each measured with the others held fixed, on all judged
// queries and on the odd / even halves of the query list (a feature is kept only if it helps on both:
// a guard against fitting the public queries). In memory, same analysis and scoring code
// as the store path. Usage: npx tsc -b libs/fts/tsconfig.lib.json && node tools/bench/fts/ranking.js
'use strict';
const fts = require('@mmdb/fts');
const { Fts5, words } = require('./peers');
const { loadDocs, loadQueries, loadQrels, evaluate, evaluateAsync } = require('./data');

function build(docs, analyzer) {
  const ix = new fts.FieldIndex();
  const pos = new Map();
  let total = 0;
  for (const d of docs) {
    const { length, positions } = analyzer.termPositions(d.body);
    pos.set(d.id, positions);
    ix.putDoc(d.id, length, [...positions.keys()], [...positions.values()].map((ps) => ps.length));
    total += length;
  }
  ix.setStats(docs.length, total);
  return { ix, pos };
}

async function main() {
  const docs = loadDocs();
  const queries = loadQueries().map((q) => ({ ...q, text: words(q.text).join(' ') }));
  const qrels = loadQrels();
  const odd = queries.filter((_, i) => i % 2 === 0); // 1st, 3rd, 5th… query (qids here are all odd numbers)
  const even = queries.filter((_, i) => i % 2 === 1);
  const a = fts.analyzerFor({ analyzer: 'english' });
  const { ix, pos } = build(docs, a);
  const qstop = fts.queryStopTerms(a);
  const ctx = {
    index: ix,
    params: { k1: 1.2, b: 0.75 },
    positions: async (t, d) => pos.get(d)?.get(t),
    termVector: async (d) => new Map([...pos.get(d)].map(([t, ps]) => [t, ps.length])),
  };
  const fts5 = new Fts5();
  fts5.insertBatch(docs);
  const f5 = (qs) => evaluate(qs, qrels, (q) => fts5.search(q.text, 1000));
  const base = { all: f5(queries), odd: f5(odd), even: f5(even) };
  const run = async (label, opts) => {
    const rank = async (q) => (await fts.rankClauses(fts.compileQuery(fts.parseQuery(q.text), a, { queryStopTerms: opts.queryStopwords === 'auto' ? qstop : undefined }), ctx, opts.limit ?? 1000, opts)).map((h) => h.doc_id);
    const cells = [];
    for (const [k, qs] of [['all', queries], ['odd', odd], ['even', even]]) {
      const m = await evaluateAsync(qs, qrels, rank);
      cells.push(`${m.map.toFixed(4)} / ${m.ndcg10.toFixed(4)} (${(m.map / base[k].map).toFixed(3)}× / ${(m.ndcg10 / base[k].ndcg10).toFixed(3)}×)`);
    }
    console.log(`| ${label} | ${cells.join(' | ')} |`);
  };
  console.log(`Cranfield ${docs.length} docs; ${queries.length} queries (odd ${odd.length}, even ${even.length}); MAP / nDCG@10 (ratio to FTS5 porter on the same queries)`);
  console.log('| configuration | all | odd (1st, 3rd…) | even (2nd, 4th…) |');
  console.log('|---|---|---|---|');
  console.log(`| SQLite FTS5 porter | ${['all', 'odd', 'even'].map((k) => `${base[k].map.toFixed(4)} / ${base[k].ndcg10.toFixed(4)}`).join(' | ')} |`);
  // [label, options of rankClauses (+ queryStopwords: 'auto', limit)]; the default is plain BM25,
  // the reranked ranking (opt-in) BM25TP proximity + RM3 reranking the first 100
  const R = { feedback: 'rm3', proximity: 'bm25tp' };
  const configs = (process.argv[2] ? JSON.parse(process.argv[2]) : null) || [
    ['default: plain BM25 (no options)', {}],
    ['BM25 + proximity', { feedback: 'none', proximity: 'bm25tp' }],
    ['BM25 + RM3 (rerank of the first 100)', { feedback: 'rm3', proximity: 'none' }],
    ['reranked: proximity + RM3 rerank (feedback=rm3, proximity=bm25tp)', R],
    ['reranked, top-10 only (limit 10: nDCG@10 of what a limit-10 call returns)', { ...R, limit: 10 }],
    ['reranked, RM3 as a full second retrieval (depth 0)', { ...R, rm3: { depth: 0 } }],
    ['reranked + query stop words (opt-in, Cranfield-written list)', { ...R, queryStopwords: 'auto' }],
  ];
  for (const [label, opts] of configs) await run(label, opts);
}
main();
