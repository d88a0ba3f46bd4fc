/**
 * Many-table join benchmark: planning + execution of `FROM t1, …, tN WHERE …` chains and stars
 * (tools/sqllogictest/scripts/many-joins.js, tables of ROWS rows, shuffled order) by our engine
 * (real TenantStore, sync off) and by SQLite (better-sqlite3, in memory) in the same run,
 * in-process. Every timed run has a distinct statement text, so ours parses, binds and optimizes
 * each time (no plan-cache hit) as SQLite prepares each time. Target ≤ max(10× SQLite, 20 ms).
 * Run: node tools/bench/sql/joins.js   (SIZES=8,16,32,64 ROWS=4 REPS=20)
 */
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import Database from 'better-sqlite3';
import { TenantStore } from '@mmdb/storage';
import { SqlEngine } from '@mmdb/sql';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { manyJoins } = require(join(__dirname, '../../sqllogictest/scripts/many-joins.js')) as {
  manyJoins(n: number, shape: string, seed: number, rows: number): { setup: string[]; query: string };
};
const SIZES = (process.env.SIZES ?? '8,16,32,64').split(',').map(Number);
const ROWS = Number(process.env.ROWS ?? 4);
const REPS = Number(process.env.REPS ?? 20);

async function main(): Promise<void> {
  console.log(`| tables | shape | mmdb ms | SQLite ms | ratio | target ms |`);
  console.log(`|---|---|---|---|---|---|`);
  for (const n of SIZES) {
    for (const shape of ['chain', 'star']) {
      const dir = mkdtempSync(join(tmpdir(), 'bench-joins-'));
      const store = await TenantStore.open({ dir, sync: false });
      const sql = new SqlEngine(store);
      const db = new Database(':memory:');
      const g = manyJoins(n, shape, n, ROWS);
      for (const s of g.setup) { db.exec(s); await sql.run(s); }
      const text = (i: number) => g.query.replace(/^SELECT /, `SELECT ${i} AS r, `);
      for (let i = 0; i < 3; i++) { await sql.run(text(-i - 1)); db.prepare(text(-i - 1)).raw().all(); }
      let t0 = performance.now();
      for (let i = 0; i < REPS; i++) await sql.run(text(i));
      const ours = (performance.now() - t0) / REPS;
      t0 = performance.now();
      for (let i = 0; i < REPS; i++) db.prepare(text(i)).raw().all();
      const lite = (performance.now() - t0) / REPS;
      const target = Math.max(10 * lite, 20);
      console.log(`| ${n} | ${shape} | ${ours.toFixed(2)} | ${lite.toFixed(3)} | ${(ours / lite).toFixed(1)}× | ${target.toFixed(1)}${ours <= target ? '' : ' (missed)'} |`);
      db.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }
}
main().catch((e) => { console.error(e); process.exit(1); });
