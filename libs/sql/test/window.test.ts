/**
 * Window functions vs SQLite (better-sqlite3): every function, ROWS / RANGE / GROUPS frames with
 * every bound kind and EXCLUDE, PARTITION BY, ORDER BY with ties and NULLs, named windows and
 * FILTER. Generated queries (the generator approach of tools/sqllogictest/scripts/diff.js).
 */
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import Database from 'better-sqlite3';
import { TenantStore } from '@mmdb/storage';
import { SqlEngine } from '@mmdb/sql';

jest.setTimeout(60_000); // 3,000 queries: minutes on a loaded 2-core CI host, not the default 5 s

let seed = 4242;
const rnd = (n: number) => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed % n; };
const pick = <T>(xs: readonly T[]): T => xs[rnd(xs.length)];

const NUM = ['a', 'b', 'c'];
const ANY = ['a', 'b', 'c', 'g', 's'];
/** Single ORDER BY terms (RANGE offsets): numbers, and `m` mixing numbers, text and NULL. */
const ORDER1 = ['a', 'b', 'c', 'm'];
const AGGS = ['count(*)', 'count(%)', 'sum(%)', 'total(%)', 'avg(%)', 'min(%)', 'max(%)', 'group_concat(%)', "group_concat(%, '-')"];

function bound(start: boolean, unit: string): string {
  const n = rnd(4);
  const kinds = start ? ['UNBOUNDED PRECEDING', `${n} PRECEDING`, 'CURRENT ROW', `${n} FOLLOWING`] : [`${n} PRECEDING`, 'CURRENT ROW', `${n} FOLLOWING`, 'UNBOUNDED FOLLOWING'];
  const k = pick(kinds);
  return unit === 'RANGE' && /\d/.test(k) && rnd(3) === 0 ? k.replace(/\d+/, `${n}.5`) : k;
}

function frame(orderTerms: number): string {
  if (rnd(3) === 0) return '';
  let unit = pick(['ROWS', 'RANGE', 'GROUPS']);
  if (unit === 'RANGE' && orderTerms !== 1) unit = 'ROWS';
  if (orderTerms === 0 && unit === 'GROUPS') unit = 'ROWS';
  const order = ['UNBOUNDED PRECEDING', 'PRECEDING', 'CURRENT ROW', 'FOLLOWING', 'UNBOUNDED FOLLOWING'];
  let s: string;
  let e: string;
  do {
    s = bound(true, unit);
    e = bound(false, unit);
  } while (order.indexOf(s.replace(/^[\d.]+ /, '')) > order.indexOf(e.replace(/^[\d.]+ /, '')));
  const excl = rnd(4) === 0 ? ` EXCLUDE ${pick(['NO OTHERS', 'CURRENT ROW', 'GROUP', 'TIES'])}` : '';
  return rnd(5) === 0 && !s.includes('FOLLOWING') ? ` ${unit} ${s}${excl}` : ` ${unit} BETWEEN ${s} AND ${e}${excl}`;
}

function over(): string {
  const parts: string[] = [];
  if (rnd(2)) parts.push(`PARTITION BY ${pick(['g', 'a % 2', 'g, b IS NULL'])}`);
  const nOrder = rnd(3);
  const terms = [];
  for (let i = 0; i < nOrder; i++) terms.push(`${i === 0 && nOrder === 1 ? pick(ORDER1) : pick(ANY)}${pick(['', ' DESC', ' ASC', ' NULLS LAST', ' DESC NULLS FIRST'])}`);
  if (terms.length) parts.push(`ORDER BY ${terms.join(', ')}`);
  return `(${parts.join(' ')}${frame(nOrder)})`;
}

function fn(): string {
  switch (rnd(8)) {
    case 0: return pick(['row_number()', 'rank()', 'dense_rank()', 'percent_rank()', 'cume_dist()']);
    case 1: return `ntile(${1 + rnd(5)})`;
    case 2: return `${pick(['lag', 'lead'])}(${pick(ANY)}${rnd(2) ? `, ${rnd(3)}` : ''}${rnd(3) === 0 ? ', -1' : ''})`;
    case 3: return `${pick(['first_value', 'last_value'])}(${pick(ANY)})`;
    case 4: return `nth_value(${pick(ANY)}, ${1 + rnd(3)})`;
    case 5: return pick(AGGS).replace('%', pick(NUM)) + (rnd(4) === 0 ? ` FILTER (WHERE ${pick(NUM)} > 1)` : '');
    default: return pick(AGGS).replace('%', pick(NUM));
  }
}

function query(): string {
  const n = 1 + rnd(2);
  const cols = [];
  for (let i = 0; i < n; i++) cols.push(`${fn()} OVER ${over()} AS w${i}`);
  return `SELECT id, ${cols.join(', ')} FROM t${rnd(4) === 0 ? ' WHERE b IS NOT NULL' : ''}`;
}

const canon = (rows: unknown[][]) => rows.map((r) => JSON.stringify(r.map((v) => (typeof v === 'bigint' ? `i${v}` : typeof v === 'number' ? (Number.isInteger(v) && !Object.is(v, -0) ? `r${v}` : `r${v.toPrecision(10)}`) : v)))).sort();

describe('window functions vs SQLite', () => {
  let dir: string;
  let store: TenantStore;
  let sql: SqlEngine;
  const db = new Database(':memory:');
  db.defaultSafeIntegers(true);
  const rows: string[] = [];
  for (let i = 1; i <= 24; i++) {
    const v = (x: number) => (x % 7 === 0 ? 'NULL' : String(x));
    const m = i % 6 === 0 ? `'t${i % 4}'` : i % 7 === 3 ? 'NULL' : String(((i * 13) % 17) / 2);
    rows.push(`(${i}, ${v((i * 5) % 9)}, ${v((i * 3) % 11)}, ${i % 5 === 0 ? 'NULL' : ((i * 7) % 10) / 2}, '${'pqr'[i % 3]}', '${String.fromCharCode(97 + ((i * 11) % 6))}', ${m})`);
  }
  const setup = `CREATE TABLE t(id INTEGER PRIMARY KEY, a INTEGER, b INTEGER, c REAL, g TEXT, s TEXT, m); INSERT INTO t VALUES ${rows.join(', ')}`;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'win-'));
    store = await TenantStore.open({ dir, sync: false });
    sql = new SqlEngine(store);
    db.exec(setup);
    for (const s of setup.split(';').map((x) => x.trim()).filter(Boolean)) await sql.run(s);
  });
  afterAll(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const run = async (q: string) => {
    let want: unknown;
    let got: unknown;
    try { want = canon(db.prepare(q).raw().all() as unknown[][]); } catch { want = 'error'; }
    try { got = canon(((await sql.run(q))[0] as { rows: unknown[][] }).rows); } catch (e) { got = `error: ${(e as Error).message}`; }
    return { want, got };
  };

  it('named windows, FILTER, window over an aggregate, ORDER BY a window value', async () => {
    for (const q of [
      'SELECT id, sum(a) OVER w, count(*) OVER w FROM t WINDOW w AS (PARTITION BY g ORDER BY id)',
      'SELECT id, sum(a) OVER (w ROWS 1 PRECEDING) FROM t WINDOW w AS (ORDER BY b, id)',
      'SELECT g, sum(a), rank() OVER (ORDER BY sum(a) DESC) FROM t GROUP BY g',
      'SELECT id, count(*) FILTER (WHERE a > 3) OVER (ORDER BY id) FROM t',
      'SELECT id FROM t ORDER BY row_number() OVER (ORDER BY c DESC, id) LIMIT 5',
      'SELECT id, a, row_number() OVER (ORDER BY a) AS rn FROM t ORDER BY rn',
    ]) {
      const { want, got } = await run(q);
      expect([q, got]).toEqual([q, want]);
    }
  });

  it('agrees with SQLite on 3000 generated queries', async () => {
    const mismatches: string[] = [];
    let answered = 0;
    for (let i = 0; i < 3000; i++) {
      const q = query();
      const { want, got } = await run(q);
      if (want !== 'error') answered++;
      if (JSON.stringify(want) !== JSON.stringify(got)) mismatches.push(`${q}\n  sqlite: ${JSON.stringify(want).slice(0, 300)}\n  ours:   ${JSON.stringify(got).slice(0, 300)}`);
    }
    expect(mismatches.slice(0, 4)).toEqual([]);
    expect(answered).toBeGreaterThan(2400);
  });
});
