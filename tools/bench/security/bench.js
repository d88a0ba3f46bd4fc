#!/usr/bin/env node
/**
 * Row-level security and masking cost, measured in the same run against the built server over
 * HTTPS: a selective query (pk range, 1% of the rows) and a full-table aggregate through /sql, as
 * the owner (no policy) and as a user under a region policy and two column masks (partial on ssn,
 * which both queries read; hash on email, which neither names: it costs nothing).
 * Prints p50/p99 per query and user and the ratio restricted/owner.
 *
 *   npm run build && node tools/bench/security/bench.js [--rows 100000] [--queries 200]
 *   node tools/bench/security/bench.js --rows 2000 --queries 20      # smoke
 *
 * Target (issue 23): the restricted user ≤ 1.2× the owner's time.
 */
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const https = require('https');
const { startBuiltServer } = require('../server');
const { request, numberOption } = require('../request');

const args = process.argv.slice(2);
const ROWS = numberOption(args, 'rows', 100_000);
const QUERIES = numberOption(args, 'queries', 200);
const TENANT = '01J0SECBENCH00000000000000';
const TOKEN = 'sec-bench-token-0123456789';
const T = `/v1/tenants/${TENANT}`;
const TOML = `namespace = "bench"
table = "people"
primary_key = ["id"]
[[columns]]
name = "id"
ty = "i64"
required = true
[[columns]]
name = "region"
ty = "str"
required = true
[[columns]]
name = "ssn"
ty = "str"
[[columns]]
name = "amount"
ty = "f64"
[[columns]]
name = "email"
ty = "str"
`;

const pct = (xs, p) => xs.slice().sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];

async function time(fn, n) {
  const out = [];
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    await fn(i);
    out.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return out;
}

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mmdb-secbench-'));
  const { proc, url } = await startBuiltServer(dir, { tenant: TENANT, token: TOKEN });
  const agent = new https.Agent({ keepAlive: true, rejectUnauthorized: false });
  const owner = (m, p, b, ct) => request(agent, url, TOKEN, m, `${T}${p}`, b, ct);
  try {
    await owner('POST', '/schemas', TOML, 'text/plain');
    const lines = [];
    for (let i = 0; i < ROWS; i++) lines.push(JSON.stringify({ id: i, region: i % 4 === 0 ? 'eu' : 'us', ssn: String(100000000 + i), amount: i % 997, email: `user${i}@example.com` }));
    for (let i = 0; i < lines.length; i += 5000) await owner('POST', '/rows/bench.people/_batch', lines.slice(i, i + 5000).join('\n') + '\n', 'application/x-ndjson');
    await owner('PUT', '/users/analyst', { grants: { 'bench.people': ['read'] }, attributes: { region: 'eu' } });
    await owner('PUT', '/policies/region', { schema: 'bench.people', users: ['analyst'], using: "region = user_attr('region')" });
    await owner('PUT', '/policies/ssn', { schema: 'bench.people', users: ['analyst'], mask: { column: 'ssn', kind: 'partial', n: 2 } });
    // a hash mask on a column neither query names: masks cost only for the columns a query uses
    await owner('PUT', '/policies/email', { schema: 'bench.people', users: ['analyst'], mask: { column: 'email', kind: 'hash' } });
    const tok = (await owner('POST', '/users/analyst/tokens', {})).token;
    const span = Math.max(1, Math.floor(ROWS / 100));
    const queries = {
      selective: (i) => ({ sql: 'SELECT id, ssn, amount FROM bench.people WHERE id >= $1 AND id < $2', params: [(i * 37) % (ROWS - span), ((i * 37) % (ROWS - span)) + span] }),
      full: () => ({ sql: 'SELECT region, count(*) AS n, sum(amount) AS s, max(ssn) AS m FROM bench.people GROUP BY region' }),
    };
    const rows = [];
    for (const [name, q] of Object.entries(queries)) {
      const as = (token) => (i) => request(agent, url, token, 'POST', `${T}/sql`, q(i));
      for (let w = 0; w < 3; w++) { await as(TOKEN)(w); await as(tok)(w); }
      // interleaved rounds so both users see the same machine load
      const o = [], r = [];
      for (let round = 0; round < 4; round++) {
        o.push(...(await time(as(TOKEN), Math.ceil(QUERIES / 4))));
        r.push(...(await time(as(tok), Math.ceil(QUERIES / 4))));
      }
      rows.push({ query: name, owner_p50: pct(o, 50), owner_p99: pct(o, 99), restricted_p50: pct(r, 50), restricted_p99: pct(r, 99), ratio_p50: pct(r, 50) / pct(o, 50) });
    }
    console.log(`rows=${ROWS} queries=${QUERIES} (ms; restricted = region policy + partial mask on ssn + hash mask on email)`);
    console.log('query      owner p50  owner p99  restr p50  restr p99  ratio p50');
    for (const x of rows) {
      console.log(`${x.query.padEnd(10)} ${x.owner_p50.toFixed(2).padStart(9)}  ${x.owner_p99.toFixed(2).padStart(9)}  ${x.restricted_p50.toFixed(2).padStart(9)}  ${x.restricted_p99.toFixed(2).padStart(9)}  ${x.ratio_p50.toFixed(2).padStart(8)}x`);
    }
  } finally {
    agent.destroy();
    proc.kill();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
