#!/usr/bin/env node
/**
 * The ES view after a write (issue 25 §1; README.md "The view after a write"): in-process, the
 * built libs/es-compat. A view of --docs documents (the ES bench's), warmed as searches leave it
 * (BM25 statistics of `body` and `tag`, term → documents lists, positions), then --batches write
 * batches of --batch documents through `EsState.applyOwn`, alternating new documents and
 * replacements of loaded ones, each followed by what the next search derives (statistics, the
 * lists of every word, their positions). Peer, in the same run: the same batches on a second view
 * whose derived state is dropped after each write and rebuilt over every document (what applyOwn
 * did before). Printed: per batch, the write + next-search derivation p50 / max, and the ratio.
 *
 *   npm run build && node tools/bench/stalls/view-writes.js --docs 200000 --batches 40
 *   node tools/bench/stalls/view-writes.js --docs 20000 --batches 10      # smoke
 */
'use strict';
const path = require('path');
const { numArg } = require('../server');
const { WORDS, docAt } = require('../es/data');

const lib = path.join(__dirname, '../../../libs/es-compat/dist');
const { EsState } = require(path.join(lib, 'state.js'));
const { fieldStats } = require(path.join(lib, 'scoring.js'));
const { keywordStats } = require(path.join(lib, 'query.js'));
const { textTermDocs, textTermOrdinals } = require(path.join(lib, 'candidates.js'));

const DOCS = numArg('docs', 200_000);
const BATCHES = numArg('batches', 40);
const BATCH = numArg('batch', 10);
const MAPPINGS = { properties: { body: { type: 'text' }, tag: { type: 'keyword' }, n: { type: 'long' } } };
const now = () => Number(process.hrtime.bigint()) / 1e6;
const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]; };

function row(i, seq) {
  const d = docAt(i);
  return { _id: d.id, _source: { body: d.body, tag: d.tag, n: d.n }, _version: 1, _seq_no: seq, _primary_term: 1, _routing: null };
}

/** What the next search derives from the view (built when missing). */
function derive(ix) {
  fieldStats(ix, 'body', 'standard');
  keywordStats(ix, 'tag');
  for (const w of WORDS) textTermOrdinals(ix, 'body', 'standard', w);
  return textTermDocs(ix, 'body', 'standard', WORDS[0]).length;
}

async function run(rows, batches, rebuild) {
  let lsn = 1;
  const backend = { tables: () => [], tableLsn: async () => lsn, read: async () => rows.map((r) => ({ ...r, _source: JSON.stringify(r._source) })) };
  const ref = { meta: { es_index: 'docs', uuid: 'u', created: 0, settings: {}, mappings: MAPPINGS, aliases: {} }, table: { id: 'es.i_docs', columns: [], primaryKey: ['_id'], description: 'd' } };
  const state = new EsState(backend);
  derive(await state.view(ref));
  const ms = [];
  const split = [];
  for (const puts of batches) {
    const c = await state.cached(ref);
    const t0 = now();
    state.applyOwn(ref, lsn, lsn + 1, puts, []);
    lsn++;
    if (rebuild) { c.view.stats.clear(); c.view.docs = c.view.docs.slice(); }
    const t1 = now();
    derive(c.view);
    ms.push(now() - t0);
    split.push([t1 - t0, now() - t1]);
  }
  return Object.assign(ms, { split });
}

async function main() {
  const rows = Array.from({ length: DOCS }, (_, i) => row(i, i));
  let seq = DOCS;
  let fresh = DOCS;
  const batches = Array.from({ length: BATCHES }, (_, k) => Array.from({ length: BATCH }, (_, j) => (k % 2 === 0 ? row(fresh++, seq++) : row(((k * 7919 + j * 31) % DOCS), seq++))));
  const peer = await run(rows, batches, true);
  const ours = await run(rows, batches, false);
  const f = (x) => x.toFixed(2);
  console.log(`\n### The ES view after a write: ${DOCS.toLocaleString()} documents, ${BATCHES} batches of ${BATCH} (new and replaced alternately)\n`);
  const part = (xs, i) => f(pct(xs.split.map((x) => x[i]), 50));
  console.log('| write + next search\'s derived state | p50 ms | max ms | p50 of the write / of the derivation ms |');
  console.log('|---|---|---|---|');
  console.log(`| rebuilt over every document (before) | ${f(pct(peer, 50))} | ${f(Math.max(...peer))} | ${part(peer, 0)} / ${part(peer, 1)} |`);
  console.log(`| adjusted by the change (applyOwn now) | ${f(pct(ours, 50))} | ${f(Math.max(...ours))} | ${part(ours, 0)} / ${part(ours, 1)} |`);
  console.log(`| ratio (before / now, p50) | ${(pct(peer, 50) / pct(ours, 50)).toFixed(1)}x | |`);
}

main().catch((e) => { console.error(e); process.exit(1); });
