// Cranfield loading and IR metrics shared by the fts benchmarks.
'use strict';
const fs = require('fs');
const path = require('path');

const DIR = process.env.CRANFIELD_DIR || path.resolve(__dirname, '../../../../shared/datasets/cranfield');

/** Docs as {id, title, text, body}; body = title + text (text already repeats the title in this copy, so it is used alone then). */
function loadDocs() {
  return fs
    .readFileSync(path.join(DIR, 'docs.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => {
      const d = JSON.parse(l);
      const title = (d.title || '').trim();
      const text = (d.text || '').trim();
      const body = text.startsWith(title) ? text : `${title} ${text}`;
      return { id: String(d.id), title, text, body };
    });
}

function loadQueries() {
  return fs
    .readFileSync(path.join(DIR, 'queries.tsv'), 'utf8')
    .split('\n')
    .slice(1)
    .filter(Boolean)
    .map((l) => {
      const [qid, , text] = l.split('\t');
      return { qid, text };
    });
}

/** qid → Map(docid → grade 1..4); the -1 rows are not grades and are left out. */
function loadQrels() {
  const out = new Map();
  for (const l of fs.readFileSync(path.join(DIR, 'qrels.trec'), 'utf8').split('\n')) {
    const [qid, , doc, rel] = l.trim().split(/\s+/);
    if (!qid) continue;
    const g = Number(rel);
    if (!out.has(qid)) out.set(qid, new Map());
    if (g >= 1 && g <= 4) out.get(qid).set(doc, g);
  }
  return out;
}

/** Gain of a grade for nDCG: 1 (complete answer) → 4 … 4 (minimum interest) → 1. */
const gain = (g) => (g ? 5 - g : 0);

function metrics(ranked, rel) {
  let hits = 0;
  let sumPrec = 0;
  ranked.forEach((d, i) => {
    if (rel.has(d)) {
      hits++;
      sumPrec += hits / (i + 1);
    }
  });
  const ap = rel.size ? sumPrec / rel.size : 0;
  const p10 = ranked.slice(0, 10).filter((d) => rel.has(d)).length / 10;
  let dcg = 0;
  ranked.slice(0, 10).forEach((d, i) => (dcg += (Math.pow(2, gain(rel.get(d))) - 1) / Math.log2(i + 2)));
  const ideal = [...rel.values()].map(gain).sort((a, b) => b - a).slice(0, 10);
  let idcg = 0;
  ideal.forEach((g, i) => (idcg += (Math.pow(2, g) - 1) / Math.log2(i + 2)));
  return { ap, p10, ndcg: idcg ? dcg / idcg : 0 };
}

/** Mean metrics over the queries with at least one relevant doc. */
function evaluate(queries, qrels, rankFn) {
  let n = 0;
  const sum = { ap: 0, p10: 0, ndcg: 0 };
  for (const q of queries) {
    const rel = qrels.get(q.qid);
    if (!rel || rel.size === 0) continue;
    const m = metrics(rankFn(q), rel);
    n++;
    for (const k of Object.keys(sum)) sum[k] += m[k];
  }
  return { queries: n, map: sum.ap / n, ndcg10: sum.ndcg / n, p10: sum.p10 / n };
}

async function evaluateAsync(queries, qrels, rankFn) {
  const ranked = new Map();
  for (const q of queries) ranked.set(q.qid, await rankFn(q));
  return evaluate(queries, qrels, (q) => ranked.get(q.qid));
}

function percentile(sorted, p) {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

module.exports = { DIR, loadDocs, loadQueries, loadQrels, metrics, evaluate, evaluateAsync, percentile };
