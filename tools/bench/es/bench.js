#!/usr/bin/env node
/**
 * Benchmark of the Elasticsearch surface beside its peers, measured in the same run against the
 * built server over HTTPS:
 *   - ingest: `_bulk` of --docs small documents (chunks of --chunk) vs the NDJSON row route
 *     (`rows/{schema}/_batch`, same documents as rows, same chunk) → docs/s and the ratio;
 *   - search: a `match` query through `_search` vs the same words through the native full-text
 *     route (`GET fts/{table}/{field}`, plain BM25) → p50/p99 over --queries sequential requests;
 *   - aggregation: a bool query with a terms aggregation through `_search` (one aggregate plan
 *     over fts_search(limit null), reading the index's typed columns) vs the same grouping
 *     through `/sql` → p50/p99; and a filter-only one (an aggregate plan over the typed columns) vs its SQL.
 *
 *   ES_BENCH_PROFILE=<dir>: a CPU profile of the server (profile.js), see README.md.
 *
 *   npm run build && node tools/bench/es/bench.js [--docs 200000] [--chunk 5000] [--queries 200]
 *   node tools/bench/es/bench.js --docs 2000 --queries 20      # smoke
 *
 * Targets (issue 18): bulk ≥ 60% of NDJSON rows/s; search p99 ≤ 1.3× the native route (the fts
 * route for the match, SQL for the aggregations).
 */
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const https = require('https');
const { startBuiltServer, httpsRequest } = require('../server');
const { WORDS, TOML, MAPPING, rowsNdjson, bulkNdjson } = require('./data');

const args = process.argv.slice(2);
const opt = (name, def) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : def;
};
const DOCS = opt('docs', 200_000);
const CHUNK = opt('chunk', 5000);
const QUERIES = opt('queries', 200);
const TENANT = '01J0ESBENCH000000000000000';
const TOKEN = 'es-bench-token-0123456789';
const T = `/v1/tenants/${TENANT}`;

async function request(agent, url, method, p, body, contentType) {
  const r = await httpsRequest(agent, url, TOKEN, method, p, body, contentType);
  if (r.status >= 300) throw new Error(`${method} ${p}: ${r.status} ${r.text.slice(0, 300)}`);
  return r.json;
}

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

async function timed(n, fn) {
  for (let i = 0; i < Math.min(20, n); i++) await fn(i); // warm-up
  const out = [];
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    await fn(i);
    out.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return { p50: pct(out, 50), p99: pct(out, 99) };
}

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mmdb-bench-es-'));
  // ES_BENCH_PROFILE=<dir>: a CPU profile of the server (profile.js) written there when the run ends
  const env = process.env.ES_BENCH_PROFILE ? { NODE_OPTIONS: `--require ${path.join(__dirname, 'profile.js')}`, ES_BENCH_PROFILE: process.env.ES_BENCH_PROFILE } : {};
  const { proc, url } = await startBuiltServer(dir, { tenant: TENANT, token: TOKEN, env });
  const agent = new https.Agent({ keepAlive: true, rejectUnauthorized: false, maxSockets: 4 });
  const req = (m, p, b, ct) => request(agent, url, m, p, b, ct);
  try {
    await req('POST', `${T}/schemas`, TOML, 'text/plain');
    await req('PUT', `${T}/es/docs`, MAPPING);

    // ingest: rows (NDJSON) then _bulk, same documents and chunk size
    let t0 = Date.now();
    for (let i = 0; i < DOCS; i += CHUNK) {
      await req('POST', `${T}/rows/bench.docs/_batch?chunk=${Math.min(CHUNK, 10000)}`, rowsNdjson(i, Math.min(DOCS, i + CHUNK)), 'application/x-ndjson');
    }
    const rowsPerS = DOCS / ((Date.now() - t0) / 1000);
    t0 = Date.now();
    for (let i = 0; i < DOCS; i += CHUNK) {
      const r = await req('POST', `${T}/es/_bulk`, bulkNdjson(i, Math.min(DOCS, i + CHUNK)), 'application/x-ndjson');
      if (r.errors) throw new Error('bulk reported errors');
    }
    const bulkPerS = DOCS / ((Date.now() - t0) / 1000);

    const q = (i) => `${WORDS[i % WORDS.length]} ${WORDS[(i * 7 + 3) % WORDS.length]}`;
    const esMatch = await timed(QUERIES, (i) => req('POST', `${T}/es/docs/_search`, { size: 10, query: { match: { body: q(i) } } }));
    const native = await timed(QUERIES, (i) => req('GET', `${T}/fts/bench.docs/body?q=${encodeURIComponent(q(i))}&limit=10&feedback=none&proximity=none`));
    // the same two words as a bool of two match clauses (scored top-k plans, one fts_search per match: libs/es-compat topk-scored.ts)
    const esBool = await timed(QUERIES, (i) => req('POST', `${T}/es/docs/_search`, { size: 10, query: { bool: { should: [{ match: { body: WORDS[i % WORDS.length] } }, { match: { body: WORDS[(i * 7 + 3) % WORDS.length] } }] } } }));
    const esAgg = await timed(QUERIES, (i) => req('POST', `${T}/es/docs/_search`, {
      size: 0, query: { bool: { filter: [{ range: { n: { lt: 500 + (i % 100) } } }], must: [{ match: { body: WORDS[i % WORDS.length] } }] } },
      aggs: { tags: { terms: { field: 'tag', size: 20 } } },
    }));
    const sqlAgg = await timed(QUERIES, (i) => req('POST', `${T}/sql`, { sql: `SELECT tag, count(*) AS c FROM bench.docs WHERE n < ${500 + (i % 100)} AND body LIKE '%${WORDS[i % WORDS.length]}%' GROUP BY tag ORDER BY c DESC LIMIT 20` }));

    // a filter-only terms aggregation: an aggregate plan over the index's rows (libs/es-compat plan-aggs.ts)
    const esPlanAgg = await timed(QUERIES, (i) => req('POST', `${T}/es/docs/_search`, {
      size: 0, query: { bool: { filter: [{ range: { n: { lt: 500 + (i % 100) } } }] } }, aggs: { tags: { terms: { field: 'tag', size: 20 } } },
    }));
    const sqlPlanAgg = await timed(QUERIES, (i) => req('POST', `${T}/sql`, { sql: `SELECT tag, count(*) AS c FROM bench.docs WHERE n < ${500 + (i % 100)} GROUP BY tag ORDER BY c DESC, tag LIMIT 20` }));

    const f = (x) => x.toFixed(2);
    console.log(`\nES surface benchmark: ${DOCS} docs, chunk ${CHUNK}, ${QUERIES} queries each (sequential, one connection)\n`);
    console.log('| measure | ES surface | peer | peer value | ratio | target |');
    console.log('|---|---|---|---|---|---|');
    console.log(`| ingest docs/s | ${Math.round(bulkPerS)} | NDJSON rows/s | ${Math.round(rowsPerS)} | ${(bulkPerS / rowsPerS).toFixed(2)} | ≥ 0.60 |`);
    console.log(`| match p50 / p99 ms | ${f(esMatch.p50)} / ${f(esMatch.p99)} | fts route | ${f(native.p50)} / ${f(native.p99)} | ${(esMatch.p99 / native.p99).toFixed(2)} (p99) | ≤ 1.30 |`);
    console.log(`| bool of two matches p50 / p99 ms | ${f(esBool.p50)} / ${f(esBool.p99)} | fts route | ${f(native.p50)} / ${f(native.p99)} | ${(esBool.p99 / native.p99).toFixed(2)} (p99) | (none) |`);
    console.log(`| bool + terms agg p50 / p99 ms | ${f(esAgg.p50)} / ${f(esAgg.p99)} | SQL GROUP BY | ${f(sqlAgg.p50)} / ${f(sqlAgg.p99)} | ${(esAgg.p99 / sqlAgg.p99).toFixed(2)} (p99) | ≤ 1.30 |`);
    console.log(`| filter + terms agg (aggregate plan) p50 / p99 ms | ${f(esPlanAgg.p50)} / ${f(esPlanAgg.p99)} | SQL GROUP BY | ${f(sqlPlanAgg.p50)} / ${f(sqlPlanAgg.p99)} | ${(esPlanAgg.p99 / sqlPlanAgg.p99).toFixed(2)} (p99) | ≤ 1.30 |`);
  } finally {
    proc.kill();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
