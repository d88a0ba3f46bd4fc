/**
 * SQL benchmark: the same fixed query set over 100,000 rows, run by our engine (real TenantStore,
 * sync off) and by SQLite (better-sqlite3, in memory) in the same run. Prints per-query times and ratios.
 * Run: node tools/bench/sql/run.js   (ROWS=100000 by default)
 */
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import Database from 'better-sqlite3';
import { spawn } from 'child_process';
import { readFileSync } from 'fs';
import * as https from 'https';
import { TenantStore } from '@mmdb/storage';
import { SqlEngine } from '@mmdb/sql';
import { QUERIES, DDL, customerRows, productRows, orderRow } from './queries';

const N = Number(process.env.ROWS ?? 100_000);


/**
 * Wall and CPU (this process: user + system) milliseconds per run, in steady state: warm-up runs
 * until both 5 runs and 500 ms are done (the JIT has compiled the hot paths, the engine's background
 * table loads are finished — figures are warm-cache, like SQLite's in-memory database), then timed
 * runs until both 3 runs and 1 s are done.
 */
async function time(fn: () => unknown, settle: () => Promise<void> = async () => undefined): Promise<{ wall: number; cpu: number }> {
  const w0 = performance.now();
  for (let i = 0; i < 5 || performance.now() - w0 < 500; i++) {
    await fn();
    if (i === 1) await settle();
  }
  await settle();
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  let reps = 0;
  while (reps < 3 || performance.now() - t0 < 1000) { await fn(); reps++; }
  const c = process.cpuUsage(c0);
  return { wall: (performance.now() - t0) / reps, cpu: (c.user + c.system) / 1000 / reps };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-sql-'));
  const store = await TenantStore.open({ dir, sync: false });
  const sql = new SqlEngine(store);
  const db = new Database(':memory:');
  for (const d of DDL) { db.exec(d); await sql.run(d); }
  const load = async (table: string, rows: string[]) => {
    for (let i = 0; i < rows.length; i += 1000) {
      const s = `INSERT INTO ${table} VALUES ${rows.slice(i, i + 1000).join(',')}`;
      db.exec(s);
      await sql.run(s);
    }
  };
  await load('customers', customerRows(N));
  await load('products', productRows());
  await load('orders', Array.from({ length: N }, (_, i) => orderRow(i, N)));
  const out: { q: string; ours: number; sqlite: number; ratio: number; oursCpu: number; sqliteCpu: number; cpuRatio: number }[] = [];
  for (const [name, q] of QUERIES) {
    const ours = await time(() => sql.run(q), () => sql.tables.settled());
    const stmt = db.prepare(q);
    const lite = await time(() => stmt.all());
    out.push({ q: name, ours: ours.wall, sqlite: lite.wall, ratio: ours.wall / lite.wall, oursCpu: ours.cpu, sqliteCpu: lite.cpu, cpuRatio: ours.cpu / lite.cpu });
  }
  // wall time is what the targets speak of; CPU time (this process) is steadier on a loaded machine
  console.log(`rows: ${N}`);
  console.log('query'.padEnd(28) + 'ours ms'.padStart(12) + 'sqlite ms'.padStart(12) + 'ratio'.padStart(10) + 'ours cpu'.padStart(12) + 'sqlite cpu'.padStart(12) + 'cpu ratio'.padStart(11));
  for (const r of out) {
    console.log(r.q.padEnd(28) + r.ours.toFixed(3).padStart(12) + r.sqlite.toFixed(3).padStart(12) + r.ratio.toFixed(1).padStart(10)
      + r.oursCpu.toFixed(3).padStart(12) + r.sqliteCpu.toFixed(3).padStart(12) + r.cpuRatio.toFixed(1).padStart(11));
  }
  const med = (xs: number[]) => { const s = [...xs].sort((a, b) => a - b); return `median ${s[Math.floor(s.length / 2)].toFixed(1)}x, worst ${s[s.length - 1].toFixed(1)}x`; };
  console.log(`wall ratio: ${med(out.map((r) => r.ratio))}; cpu ratio: ${med(out.map((r) => r.cpuRatio))}`);
  await store.close();
  rmSync(dir, { recursive: true, force: true });
  if (process.env.HTTPS !== '0') await httpsPkLookup();
}

/**
 * pk lookup over HTTPS: the built server (npm run build; dist/apps/api/main.js) in a child process,
 * the orders table loaded through POST /sql, then sequential keep-alive requests of the pk lookup.
 */
async function httpsPkLookup(): Promise<void> {
  const root = join(__dirname, '../../..');
  const main = join(root, 'dist/apps/api/main.js');
  const data = mkdtempSync(join(tmpdir(), 'bench-sql-http-'));
  const tenant = '01ARZ3NDEKTSV4RRFFQ69G5FAV';
  const token = 'bench-sql-token-0123456789';
  const proc = spawn(process.execPath, [main], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', DB_DATA_DIR: data, DB_PORT: '0', DB_HOST: '127.0.0.1', DB_LOG_LEVEL: 'warn', DB_BOOTSTRAP_TENANT: tenant, DB_BOOTSTRAP_TOKEN: token, DB_SYNC: 'false' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    const url = await new Promise<string>((res, rej) => {
      let out = '';
      proc.stdout!.on('data', (d) => { out += d; const m = /listening on (\S+)/.exec(out); if (m) res(m[1]); });
      proc.on('exit', (c) => rej(new Error(`server exited ${c}`)));
    });
    const ca = readFileSync(join(data, 'tls/cert.pem'), 'utf8');
    const agent = new https.Agent({ keepAlive: true, ca, maxSockets: 1 });
    const post = (body: unknown) => new Promise<number>((res, rej) => {
      const req = https.request(`${url}/v1/tenants/${tenant}/sql`, { method: 'POST', agent, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } }, (r) => {
        r.resume();
        r.on('end', () => res(r.statusCode!));
      });
      req.on('error', rej);
      req.end(JSON.stringify(body));
    });
    await post({ sql: 'CREATE TABLE orders(id INTEGER PRIMARY KEY, customer_id INTEGER, product_id INTEGER, amount REAL)' });
    for (let i = 0; i < N; i += 1000) {
      const rows = Array.from({ length: Math.min(1000, N - i) }, (_, j) => orderRow(i + j, N));
      await post({ sql: `INSERT INTO orders VALUES ${rows.join(',')}` });
    }
    const q = { sql: 'SELECT * FROM orders WHERE id = $1', params: [77777] };
    // Steady state: the first few thousand requests pay for JIT tier-up (p99 around 4–6 ms).
    for (let i = 0; i < 3000; i++) await post(q);
    const lat: number[] = [];
    for (let i = 0; i < 5000; i++) {
      const t0 = performance.now();
      const st = await post(q);
      lat.push(performance.now() - t0);
      if (st !== 200) throw new Error(`HTTP ${st}`);
    }
    lat.sort((a, b) => a - b);
    const pct = (p: number) => lat[Math.min(lat.length - 1, Math.floor((p / 100) * lat.length))];
    console.log(`pk lookup over HTTPS (keep-alive, sequential, ${lat.length} requests): p50 ${pct(50).toFixed(3)} ms, p99 ${pct(99).toFixed(3)} ms after 3,000 warm-up requests (target p99 <= 2 ms)`);
    agent.destroy();
  } finally {
    proc.kill('SIGTERM');
    await new Promise((r) => proc.once('exit', r));
    rmSync(data, { recursive: true, force: true });
  }
}

void main();
