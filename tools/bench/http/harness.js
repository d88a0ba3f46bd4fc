/**
 * Shared parts of the HTTP benchmark and profiler: start the built server in a child process
 * (own temp data dir, bootstrap tenant), plain https requests, the bench schema and rows, and
 * one autocannon round per call.
 */
const { spawn } = require('child_process');
const fs = require('fs');
const https = require('https');
const os = require('os');
const path = require('path');
const autocannon = require('autocannon');
const { cpuSeconds } = require('../quiet');

const ROOT = path.join(__dirname, '../../..');
const MAIN = path.join(ROOT, 'dist/apps/api/main.js');
const TENANT = '01ARZ3NDEKTSV4RRFFQ69G5FAV';
const TOKEN = 'bench-token-0123456789abcdef';
const T = `/v1/tenants/${TENANT}`;
const PRELOAD = 10_000;

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

/**
 * Starts `node [nodeArgs] <script>` (default: the built main.js) and waits for "listening on".
 * The server runs as `npm start` runs it (64 MB semi-space) and without the per-token rate limit
 * (DB_RATE_LIMIT_RPS=0): at 64 connections the no-op route passes the default 20,000 req/s, and
 * its 429s would count as throughput. A scenario may set either back through `nodeArgs` / `env`.
 */
async function startServer({ nodeArgs = ['--max-semi-space-size=64'], script = MAIN, env = {}, ipc = false } = {}) {
  if (!fs.existsSync(MAIN)) throw new Error('build first: npm run build (dist/apps/api/main.js is missing)');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mmdb-bench-http-'));
  const proc = spawn(process.execPath, [...nodeArgs, script], {
    env: { PATH: process.env.PATH, DB_DATA_DIR: dir, DB_PORT: '0', DB_LOG_LEVEL: 'error', DB_BOOTSTRAP_TENANT: TENANT, DB_BOOTSTRAP_TOKEN: TOKEN, DB_RATE_LIMIT_RPS: '0', ...env },
    stdio: ['ignore', 'pipe', 'inherit', ...(ipc ? ['ipc'] : [])],
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
  const agent = new https.Agent({ keepAlive: true, ca: fs.readFileSync(path.join(dir, 'tls/cert.pem')) });
  const stop = async () => {
    agent.destroy();
    if (proc.exitCode === null) {
      proc.kill('SIGTERM');
      await new Promise((r) => proc.once('exit', r));
    }
    fs.rmSync(dir, { recursive: true, force: true });
  };
  return { proc, url, dir, agent, stop };
}

function request(srv, method, p, body, contentType) {
  return new Promise((resolve, reject) => {
    const headers = { authorization: `Bearer ${TOKEN}`, ...(contentType ? { 'content-type': contentType } : {}) };
    const req = https.request(srv.url + p, { method, agent: srv.agent, headers }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, text: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Registers the bench schema and loads PRELOAD rows (ids 0..PRELOAD-1). */
async function prepare(srv) {
  let r = await request(srv, 'POST', `${T}/schemas`, TOML, 'text/plain');
  if (r.status !== 200) throw new Error(`schema: ${r.status} ${r.text}`);
  const pre = [];
  for (let i = 0; i < PRELOAD; i++) pre.push(JSON.stringify(row(i)));
  r = await request(srv, 'POST', `${T}/rows/bench.items/_batch?chunk=5000`, pre.join('\n'), 'application/x-ndjson');
  if (r.status !== 200) throw new Error(`preload: ${r.status} ${r.text}`);
}

const rand = () => Math.floor(Math.random() * PRELOAD);

/** The request-load scenarios, by name. */
const SCENARIOS = {
  noop: { title: 'no-op GET _ping', requests: () => [{ method: 'GET', path: `${T}/_ping` }] },
  get: {
    title: 'GET row',
    target: 0.7,
    requests: () => [{ method: 'GET', setupRequest: (req) => ({ ...req, path: `${T}/rows/bench.items/${rand()}` }) }],
  },
  put: {
    title: 'PUT row (durable)',
    target: 0.5,
    requests: () => [
      {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        setupRequest: (req) => {
          const id = rand();
          const rest = row(id);
          delete rest.id; // the key is in the path
          rest.qty = Math.floor(Math.random() * 1000);
          return { ...req, path: `${T}/rows/bench.items/${id}`, body: JSON.stringify(rest) };
        },
      },
    ],
  },
};

/** One autocannon round of a scenario: {rps, p50, p99, total, bad}. */
function cannon(srv, scenario, { connections, duration }) {
  return new Promise((resolve, reject) => {
    autocannon(
      { url: srv.url, connections, duration, pipelining: 1, headers: { authorization: `Bearer ${TOKEN}` }, requests: SCENARIOS[scenario].requests() },
      (err, r) => {
        if (err) return reject(err);
        resolve({ rps: r.requests.total / duration, p50: r.latency.p50, p99: r.latency.p99, total: r.requests.total, bad: r.non2xx + r.errors + r.timeouts });
      },
    );
  });
}

/** The NDJSON ingest body: `rows` fresh 5-column rows starting at id `first`. */
function ndjsonBody(first, rows) {
  const lines = [];
  for (let i = 0; i < rows; i++) lines.push(JSON.stringify(row(first + i)));
  return Buffer.from(lines.join('\n'));
}

/** POSTs an NDJSON body; returns seconds taken. */
async function ingest(srv, body, chunk = 10000) {
  const t0 = process.hrtime.bigint();
  const r = await request(srv, 'POST', `${T}/rows/bench.items/_batch?chunk=${chunk}`, body, 'application/x-ndjson');
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  if (r.status !== 200) throw new Error(`ingest: ${r.status} ${r.text}`);
  return secs;
}

module.exports = {
  cpuSeconds, ROOT, MAIN, TENANT, TOKEN, T, PRELOAD, row, startServer, request, prepare, SCENARIOS, cannon, ndjsonBody, ingest };
