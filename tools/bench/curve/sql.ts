/**
 * The curve's SQL child: one system (ours: TenantStore + SqlEngine, sync off; or sqlite:
 * better-sqlite3 in memory) at one size, the SQL benchmark's query set (tools/bench/sql/queries.ts).
 */
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import Database from 'better-sqlite3';
import { TenantStore } from '@mmdb/storage';
import { SqlEngine, DEFAULT_LIMITS } from '@mmdb/sql';
import { QUERIES, DDL, customerRows, productRows, orderRow, orderValues, regionOf } from '../sql/queries';
import { time, memory, report, log, settledMemory } from './common';

export async function runSql(system: string, n: number): Promise<void> {
  const t0 = performance.now();
  const base = memory();
  if (system === 'sqlite') {
    const db = new Database(':memory:');
    for (const d of DDL) db.exec(d);
    const insC = db.prepare('INSERT INTO customers VALUES (?, ?)');
    const insP = db.prepare('INSERT INTO products VALUES (?, ?)');
    const insO = db.prepare('INSERT INTO orders VALUES (?, ?, ?, ?)');
    db.transaction(() => {
      for (let i = 0; i < n / 10; i++) insC.run(i + 1, regionOf(i));
      for (let i = 0; i < 100; i++) insP.run(i + 1, `cat${i % 10}`);
    })();
    for (let i = 0; i < n; i += 100_000) {
      db.transaction(() => {
        for (let k = i; k < Math.min(n, i + 100_000); k++) insO.run(...orderValues(k, n));
      })();
    }
    const loadS = (performance.now() - t0) / 1000;
    const loaded = memory();
    log(`sqlite ${n}: loaded in ${loadS.toFixed(1)} s`);
    const queries: Record<string, unknown> = {};
    for (const [name, q] of QUERIES) {
      const stmt = db.prepare(q);
      queries[name] = await time(() => stmt.all());
      log(`sqlite ${n}: ${name}`, queries[name]);
    }
    report({ area: 'sql', system, size: n, loadS, base, loaded, after: memory(), settled: settledMemory(), queries });
    db.close();
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), 'curve-sql-'));
  const store = await TenantStore.open({ dir, sync: false });
  // the service's row budget (DEFAULT_LIMITS), but no 30 s timeout: on a loaded host a query that
  // needs a few CPU seconds at 1M rows passes 30 s of wall time, and the curve measures time, not budgets
  const sql = new SqlEngine(store, undefined, { limits: { ...DEFAULT_LIMITS, timeoutMs: 30 * 60_000 } });
  for (const d of DDL) await sql.run(d);
  // the rule: a size that does not load in 10 minutes here is reported as such (CURVE_LOAD_LIMIT_S)
  const limitS = Number(process.env.CURVE_LOAD_LIMIT_S ?? 600);
  const load = async (table: string, rows: (i: number) => string, count: number) => {
    for (let i = 0; i < count; i += 1000) {
      if (performance.now() - t0 > limitS * 1000) throw new Error(`did not load in ${limitS} s: ${i} of ${count} ${table} rows after ${((performance.now() - t0) / 1000).toFixed(0)} s`);
      const vs: string[] = [];
      for (let k = i; k < Math.min(count, i + 1000); k++) vs.push(rows(k));
      await sql.run(`INSERT INTO ${table} VALUES ${vs.join(',')}`);
      if (i % 1_000_000 === 0 && i) log(`ours ${n}: ${table} ${i} rows`);
    }
  };
  const cs = customerRows(n);
  await load('customers', (i) => cs[i], cs.length);
  const ps = productRows();
  await load('products', (i) => ps[i], ps.length);
  await load('orders', (i) => orderRow(i, n), n);
  const loadS = (performance.now() - t0) / 1000;
  const loaded = memory();
  log(`ours ${n}: loaded in ${loadS.toFixed(1)} s`);
  const queries: Record<string, unknown> = {};
  for (const [name, q] of QUERIES) {
    try {
      queries[name] = await time(() => sql.run(q), () => sql.tables.settled());
    } catch (e) {
      // a refusal (e.g. resource_exhausted: the query would hold more rows than the budget) is a figure too
      queries[name] = { error: `${(e as { code?: string }).code ?? ''} ${(e as Error).message}` };
    }
    log(`ours ${n}: ${name}`, queries[name]);
  }
  report({ area: 'sql', system, size: n, loadS, base, loaded, after: memory(), settled: settledMemory(), cache: sql.tables.stats(), queries });
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
