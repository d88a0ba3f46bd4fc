/**
 * The ES benchmark's documents and peer table (shared by tools/bench/es/bench.js and
 * tools/bench/stalls/http.js): `{body: 8 words from a 34-word vocabulary, tag: one of 20, n: 0..999}`.
 */
'use strict';

const WORDS = ('alpha beta gamma delta epsilon zeta theta iota kappa lambda omicron sigma tau upsilon phi chi psi omega ' +
  'river stone cloud forest ember harbor meadow signal vector matrix lattice orbit quartz saddle timber violet').split(' ');
let seed = 42;
const rnd = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
const pick = () => WORDS[Math.floor(rnd() * WORDS.length)];
const docAt = (i) => ({ id: `d${i}`, body: Array.from({ length: 8 }, pick).join(' '), tag: `t${i % 20}`, n: i % 1000 });

/** The peer table: the same documents as rows, `body` in the fts postings. */
const COLUMNS = [['id', 'str', true], ['body', 'str'], ['tag', 'str'], ['n', 'i64']];
const TOML = ['namespace = "bench"', 'table = "docs"', 'primary_key = ["id"]',
  ...COLUMNS.map(([name, ty, req]) => `[[columns]]\nname = "${name}"\nty = "${ty}"${req ? '\nrequired = true' : ''}`),
  '[[fulltext]]\nfield = "body"\nanalyzer = "standard"'].join('\n');
/** The ES index's mapping. */
const MAPPING = { mappings: { properties: { body: { type: 'text' }, tag: { type: 'keyword' }, n: { type: 'long' } } } };

/** NDJSON of documents [from, to) as rows (`rows/bench.docs/_batch`) and as `_bulk` index actions. */
function rowsNdjson(from, to) {
  const lines = [];
  for (let j = from; j < to; j++) lines.push(JSON.stringify(docAt(j)));
  return lines.join('\n') + '\n';
}
function bulkNdjson(from, to) {
  const lines = [];
  for (let j = from; j < to; j++) {
    const d = docAt(j);
    lines.push(JSON.stringify({ index: { _index: 'docs', _id: d.id } }), JSON.stringify({ body: d.body, tag: d.tag, n: d.n }));
  }
  return lines.join('\n') + '\n';
}

module.exports = { WORDS, docAt, TOML, MAPPING, rowsNdjson, bulkNdjson };
