#!/usr/bin/env node
/**
 * HTTP benchmark of apps/api over HTTPS with keep-alive, load generated from this process
 * (autocannon) against the built server in a child process.
 *
 *   npm run build && node tools/bench/http/bench.js [--duration 10] [--connections 64] [--rows 200000]
 *
 * Measures, in one run on the same server: the no-op route (`GET /v1/tenants/{t}/_ping`: TLS,
 * routing, auth, request id, metrics, JSON reply — the ceiling of this stack), GET row, durable
 * PUT row (fsync per commit group), then NDJSON ingest rows/s of 5-column rows with one
 * secondary index. Prints req/s, p50/p99 and the ratio to the no-op route.
 */
const { spawn } = require('child_process');
const fs = require('fs');
const https = require('https');
const os = require('os');
const path = require('path');
const autocannon = require('autocannon');

const args = process.argv.slice(2);
const opt = (name, def) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : def;
};
const DURATION = opt('duration', 10);
const CONNECTIONS = opt('connections', 64);
const INGEST_ROWS = opt('rows', 200_000);
const PRELOAD = 10_000;
const ROOT = path.join(__dirname, '../../..');
const MAIN = path.join(ROOT, 'dist/apps/api/main.js');
const TENANT = '01ARZ3NDEKTSV4RRFFQ69G5FAV';
const TOKEN = 'bench-token-0123456789abcdef';
const T = `/v1/tenants/${TENANT}`;

const TOML = `namespace = "bench"
table = "items"
primary_key = ["id"]
[[columns]]
name = "id"
ty = "i64"
required = true
[[columns]]
name = "name"
ty = "str"
[[columns]]
name = "category"
ty = "str"
[[columns]]
name = "price"
ty = "f64"
[[columns]]
name = "qty"
ty = "i64"
[[indexes]]
name = "by_category"
columns = ["category"]
`;

function row(id) {
  return { id, name: `item-${id}`, category: `cat-${id % 97}`, price: (id % 1000) / 10, qty: id % 13 };
}

async function startServer() {
  if (!fs.existsSync(MAIN)) throw new Error('build first: npm run build (dist/apps/api/main.js is missing)');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mmdb-bench-http-'));
  const proc = spawn(process.execPath, [MAIN], {
    env: { PATH: process.env.PATH, DB_DATA_DIR: dir, DB_PORT: '0', DB_LOG_LEVEL: 'error', DB_BOOTSTRAP_TENANT: TENANT, DB_BOOTSTRAP_TOKEN: TOKEN },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (d) => {
      out += d;
      const m = /listening on (\S+)/.exec(out);
      if (m) resolve(m[1]);
    });
    proc.on('exit', (c) => reject(new Error(`server exited ${c}`)));
  });
  return { proc, url, dir, ca: fs.readFileSync(path.join(dir, 'tls/cert.pem')) };
}

function request(srv, method, p, body, contentType) {
  return new Promise((resolve, reject) => {
    const req = https.request(srv.url + p, { method, ca: srv.ca, headers: { authorization: `Bearer ${TOKEN}`, ...(contentType ? { 'content-type': contentType } : {}) } }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, text: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

function cannon(srv, title, requests) {
  return new Promise((resolve, reject) => {
    autocannon(
      {
        url: srv.url,
        connections: CONNECTIONS,
        duration: DURATION,
        pipelining: 1,
        headers: { authorization: `Bearer ${TOKEN}` },
        requests,
      },
      (err, r) => {
        if (err) return reject(err);
        const bad = r.non2xx + r.errors + r.timeouts;
        resolve({ title, rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, total: r.requests.total, bad });
      },
    );
  });
}

async function main() {
  const srv = await startServer();
  try {
    let r = await request(srv, 'POST', `${T}/schemas`, TOML, 'text/plain');
    if (r.status !== 200) throw new Error(`schema: ${r.status} ${r.text}`);
    const pre = [];
    for (let i = 0; i < PRELOAD; i++) pre.push(JSON.stringify(row(i)));
    r = await request(srv, 'POST', `${T}/rows/bench.items/_batch?chunk=5000`, pre.join('\n'), 'application/x-ndjson');
    if (r.status !== 200) throw new Error(`preload: ${r.status} ${r.text}`);

    const rand = () => Math.floor(Math.random() * PRELOAD);
    // warm-up (JIT, TLS sessions)
    await new Promise((res) => autocannon({ url: srv.url + `${T}/_ping`, connections: CONNECTIONS, duration: 2, headers: { authorization: `Bearer ${TOKEN}` } }, res));
    const results = [];
    results.push(await cannon(srv, 'no-op GET _ping', [{ method: 'GET', path: `${T}/_ping` }]));
    results.push(
      await cannon(srv, 'GET row', [
        {
          method: 'GET',
          setupRequest: (req) => ({ ...req, path: `${T}/rows/bench.items/${rand()}` }),
        },
      ]),
    );
    results.push(
      await cannon(srv, 'PUT row (durable)', [
        {
          method: 'PUT',
          headers: { 'content-type': 'application/json' },
          setupRequest: (req) => {
            const id = rand();
            const { id: _id, ...rest } = row(id);
            rest.qty = Math.floor(Math.random() * 1000);
            return { ...req, path: `${T}/rows/bench.items/${id}`, body: JSON.stringify(rest) };
          },
        },
      ]),
    );

    // NDJSON ingest of fresh rows (durable, chunk 10000), body built before the clock starts.
    const lines = [];
    for (let i = 0; i < INGEST_ROWS; i++) lines.push(JSON.stringify(row(1_000_000 + i)));
    const body = Buffer.from(lines.join('\n'));
    const t0 = process.hrtime.bigint();
    r = await request(srv, 'POST', `${T}/rows/bench.items/_batch?chunk=10000`, body, 'application/x-ndjson');
    const secs = Number(process.hrtime.bigint() - t0) / 1e9;
    if (r.status !== 200) throw new Error(`ingest: ${r.status} ${r.text}`);
    const ingest = INGEST_ROWS / secs;

    const noop = results[0].rps;
    console.log(`\nHTTPS keep-alive, ${CONNECTIONS} connections, ${DURATION}s per route, node ${process.version}, ${os.cpus().length} cores\n`);
    console.log('| route | req/s | p50 ms | p99 ms | vs no-op | target | non-2xx/errors |');
    console.log('|---|---:|---:|---:|---:|---:|---:|');
    const target = { 'GET row': 0.7, 'PUT row (durable)': 0.5 };
    for (const x of results) {
      const ratio = x.rps / noop;
      const t = target[x.title];
      console.log(`| ${x.title} | ${x.rps.toFixed(0)} | ${x.p50} | ${x.p99} | ${(ratio * 100).toFixed(0)}% | ${t ? `≥ ${t * 100}% ${ratio >= t ? 'ok' : 'MISSED'}` : ''} | ${x.bad} |`);
    }
    console.log(`\n| NDJSON ingest (5 columns, 1 secondary index, chunk 10000, durable) | rows | seconds | rows/s | target |`);
    console.log('|---|---:|---:|---:|---:|');
    console.log(`| POST _batch application/x-ndjson | ${INGEST_ROWS} | ${secs.toFixed(2)} | ${ingest.toFixed(0)} | ≥ 50000 ${ingest >= 50000 ? 'ok' : 'MISSED'} |`);
  } finally {
    srv.proc.kill('SIGTERM');
    await new Promise((r) => srv.proc.once('exit', r));
    fs.rmSync(srv.dir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
