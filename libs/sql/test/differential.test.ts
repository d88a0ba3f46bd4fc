/** Differential test: generated queries run by our engine and by SQLite (better-sqlite3) on the same data. */
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import Database from 'better-sqlite3';
import { TenantStore } from '@mmdb/storage';
import { SqlEngine } from '@mmdb/sql';

let seed = 12345;
const rnd = (n: number) => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed % n; };
const pick = <T>(xs: T[]): T => xs[rnd(xs.length)];

const COLS = ['t1.a', 't1.b', 't1.c', 't2.x', 't2.y'];
function expr(d = 0): string {
  const r = rnd(d > 2 ? 3 : 8);
  switch (r) {
    case 0: return pick(COLS);
    case 1: return String(rnd(40) - 10);
    case 2: return pick(['NULL', "'abc'", '2.5', '0']);
    case 3: return `(${expr(d + 1)} ${pick(['+', '-', '*', '/', '%'])} ${expr(d + 1)})`;
    case 4: return `CASE WHEN ${pred(d + 1)} THEN ${expr(d + 1)} ELSE ${expr(d + 1)} END`;
    case 5: return `${pick(['abs', 'coalesce', 'nullif'])}(${expr(d + 1)}${rnd(2) ? `, ${expr(d + 1)}` : ', 1'})`.replace('abs(', 'abs(').replace(/abs\(([^,]*), [^)]*\)$/, 'abs($1)');
    case 6: return `CAST(${expr(d + 1)} AS ${pick(['INTEGER', 'REAL', 'TEXT'])})`;
    default: return `- ${expr(d + 1)}`;
  }
}
function pred(d = 0): string {
  switch (rnd(6)) {
    case 0: return `${expr(d + 1)} ${pick(['=', '<>', '<', '<=', '>', '>='])} ${expr(d + 1)}`;
    case 1: return `${expr(d + 1)} IS ${pick(['', 'NOT '])}NULL`;
    case 2: return `${expr(d + 1)} ${pick(['', 'NOT '])}BETWEEN ${expr(d + 1)} AND ${expr(d + 1)}`;
    case 3: return `${expr(d + 1)} ${pick(['', 'NOT '])}IN (${expr(d + 1)}, ${expr(d + 1)}, NULL)`;
    case 4: return `(${pred(d + 1)} ${pick(['AND', 'OR'])} ${pred(d + 1)})`;
    default: return `NOT (${pred(d + 1)})`;
  }
}
function query(): string {
  const agg = rnd(3) === 0;
  if (agg) return `SELECT ${pick(['count(*)', `sum(${pick(COLS)})`, `avg(${pick(COLS)})`, `min(${expr()})`, `max(${expr()})`, `count(DISTINCT ${pick(COLS)})`, `total(${pick(COLS)})`])} FROM t1 LEFT JOIN t2 ON t1.a = t2.x WHERE ${pred()}`;
  return `SELECT ${expr()}, ${expr()} FROM t1 ${pick(['JOIN', 'LEFT JOIN', 'CROSS JOIN'])} t2 ${rnd(2) ? 'ON t1.a = t2.x' : 'ON 1'} WHERE ${pred()}`;
}

const canon = (rows: unknown[][]) => rows.map((r) => JSON.stringify(r.map((v) => (typeof v === 'bigint' ? `i${v}` : typeof v === 'number' ? `r${v.toPrecision(12)}` : v)))).sort();

describe('differential vs SQLite', () => {
  let dir: string;
  let store: TenantStore;
  let sql: SqlEngine;
  const db = new Database(':memory:');
  db.defaultSafeIntegers(true);
  const setup = `CREATE TABLE t1(a INTEGER, b INTEGER, c REAL); CREATE TABLE t2(x INTEGER, y TEXT);
    INSERT INTO t1 VALUES (1,2,3.5),(2,NULL,0.0),(3,-4,NULL),(NULL,5,1.25),(7,7,-2.0);
    INSERT INTO t2 VALUES (1,'a'),(3,'10'),(3,NULL),(9,'z'),(NULL,'5');`;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'diff-'));
    store = await TenantStore.open({ dir, sync: false });
    sql = new SqlEngine(store);
    db.exec(setup);
    for (const s of setup.split(';').map((x) => x.trim()).filter(Boolean)) await sql.run(s);
  });
  afterAll(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('agrees with SQLite on 400 generated queries', async () => {
    const mismatches: string[] = [];
    let answered = 0;
    for (let i = 0; i < 400; i++) {
      const q = query();
      let want: unknown[][] | string;
      let got: unknown[][] | string;
      try { want = canon(db.prepare(q).raw().all() as unknown[][]) as never; } catch { want = 'error'; }
      try { const r = await sql.run(q); got = canon((r[0] as { rows: unknown[][] }).rows) as never; answered++; } catch { got = 'error'; }
      if (JSON.stringify(want) !== JSON.stringify(got)) mismatches.push(`${q}\n  sqlite: ${JSON.stringify(want)}\n  ours:   ${JSON.stringify(got)}`);
    }
    expect(mismatches.slice(0, 5)).toEqual([]);
    expect(answered).toBeGreaterThan(300);
  });
});
