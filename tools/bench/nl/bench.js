// POST /ask latency over HTTPS: a cache hit and a miss, beside the same query sent as SQL
// (POST /sql) in the same run. Loads the nlbench library domain (../shared/nlbench) through
// our routes into a fresh built server. Usage (after `npm run build`):
//   node tools/bench/nl/bench.js [--n 2000]
// The miss case runs on a second server with DB_NL_CACHE_SIZE=1 cycling through many question
// shapes, so every ask compiles (and durably stores its template, as a real miss does).
'use strict';
const fs = require('fs');
const https = require('https');
const os = require('os');
const path = require('path');
const { performance } = require('perf_hooks');
const { ROOT, startBuiltServer } = require('../server');
const { adapt, ORDER } = require('./library');

const args = Object.fromEntries(process.argv.slice(2).map((a, i, xs) => (a.startsWith('--') ? [a.slice(2), xs[i + 1]] : null)).filter(Boolean));
const N = Number(args.n ?? 2000);
const TENANT = '01ARZ3NDEKTSV4RRFFQ69G5FAV';
const TOKEN = 'bench-nl-token-0123456789';
const BENCH = path.resolve(ROOT, '../shared/nlbench/library');

function client(url, ca) {
  const agent = new https.Agent({ keepAlive: true, maxSockets: 1, ca });
  return (method, p, body, type = 'application/json') =>
    new Promise((resolve, reject) => {
      const data = typeof body === 'string' ? body : JSON.stringify(body);
      const req = https.request(url + p, { method, agent, headers: { authorization: `Bearer ${TOKEN}`, 'content-type': type } }, (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode, text: Buffer.concat(chunks).toString('utf8') }));
      });
      req.on('error', reject);
      req.end(data);
    });
}

async function start(env) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mmdb-bench-nl-'));
  const { proc, url } = await startBuiltServer(dir, { tenant: TENANT, token: TOKEN, env: { DB_SYNC: 'true', ...env } });
  const ca = fs.readFileSync(path.join(dir, 'tls/cert.pem'), 'utf8');
  return { proc, dir, call: client(url, ca) };
}

async function load(call) {
  const T = `/v1/tenants/${TENANT}`;
  for (const table of ORDER) {
    const r = await call('POST', `${T}/schemas`, adapt(BENCH, table), 'text/plain');
    if (r.status !== 200) throw new Error(`schema ${table}: ${r.status} ${r.text}`);
    const rows = fs.readFileSync(path.join(BENCH, 'data', `${table}.jsonl`), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    for (let i = 0; i < rows.length; i += 1000) {
      const b = await call('POST', `${T}/rows/library.${table}/_batch`, rows.slice(i, i + 1000));
      if (b.status !== 200) throw new Error(`rows ${table}: ${b.status} ${b.text.slice(0, 300)}`);
    }
  }
}

async function timed(call, reqs) {
  const ms = [];
  for (const [p, body] of reqs) {
    const s = performance.now();
    const r = await call('POST', p, body);
    ms.push(performance.now() - s);
    if (r.status !== 200) throw new Error(`${p} ${JSON.stringify(body)}: ${r.status} ${r.text.slice(0, 300)}`);
  }
  return ms;
}

const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];

async function main() {
  const T = `/v1/tenants/${TENANT}`;
  const cities = fs.readFileSync(path.join(BENCH, 'data/members.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l).city);
  const pickCity = (i) => cities[i % cities.length];
  const questions = fs.readFileSync(path.join(BENCH, 'questions.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l)).filter((q) => !q.direction).map((q) => q.nl);

  const hitSrv = await start({ DB_NL_CACHE_SIZE: '1000' });
  const missSrv = await start({ DB_NL_CACHE_SIZE: '1' });
  try {
    await load(hitSrv.call);
    await load(missSrv.call);
    const ask = (i) => [`${T}/ask`, { nl: `How many members live in ${pickCity(i)}?` }];
    const sql = (i) => [`${T}/sql`, { sql: 'SELECT COUNT(*) FROM library.members WHERE city = $1', params: [pickCity(i)] }];
    const warm = Math.min(200, N);
    await timed(hitSrv.call, Array.from({ length: warm }, (_, i) => ask(i)));
    await timed(hitSrv.call, Array.from({ length: warm }, (_, i) => sql(i)));
    // alternate the two so host noise lands on both alike
    const hit = [];
    const peer = [];
    for (let i = 0; i < N; i += 100) {
      hit.push(...(await timed(hitSrv.call, Array.from({ length: Math.min(100, N - i) }, (_, k) => ask(i + k)))));
      peer.push(...(await timed(hitSrv.call, Array.from({ length: Math.min(100, N - i) }, (_, k) => sql(i + k)))));
    }
    // misses: every question of the benchmark that compiles (but the ambiguous ones), cycling, with a cache of one entry
    const ok = [];
    for (const nl of questions) if ((await hitSrv.call('POST', `${T}/ask`, { nl })).status === 200) ok.push(nl);
    questions.length = 0;
    questions.push(...ok);
    await timed(missSrv.call, questions.slice(0, 20).map((nl) => [`${T}/ask`, { nl }]));
    const missN = Math.max(questions.length, Math.floor(N / 4));
    const miss = await timed(missSrv.call, Array.from({ length: missN }, (_, i) => [`${T}/ask`, { nl: questions[i % questions.length] }]));
    const rows = [
      ['SQL peer: SELECT COUNT(*) … WHERE city = $1', peer],
      ['ask, cache hit (same shape, other city)', hit],
      ['ask, cache miss (compile + store template)', miss],
    ];
    console.log(`\nPOST /ask over HTTPS, nlbench library data (11,979 rows), one keep-alive connection, ${os.cpus().length} CPUs`);
    console.log('| case | n | p50 ms | p99 ms | p99 / SQL p99 |');
    console.log('|---|---|---|---|---|');
    const base = pct(peer, 99);
    for (const [name, xs] of rows) console.log(`| ${name} | ${xs.length} | ${pct(xs, 50).toFixed(2)} | ${pct(xs, 99).toFixed(2)} | ${(pct(xs, 99) / base).toFixed(2)}× |`);
    console.log('\ntargets (issue 19): hit p99 ≤ 1.5× the SQL p99; miss p99 ≤ 50 ms');
  } finally {
    hitSrv.proc.kill('SIGTERM');
    missSrv.proc.kill('SIGTERM');
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
