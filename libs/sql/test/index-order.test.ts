/**
 * sort_pushdown and index_order over a real store: ORDER BY an indexed column … LIMIT reads only the
 * candidate rows (index_scan top), on both the storage path and the table-cache path, and answers
 * exactly what the same query over an unindexed copy of the table answers (ties and NULLs included).
 */
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { TenantStore } from '@mmdb/storage';
import { SqlEngine, formatResult } from '@mmdb/sql';

let dir: string;
let store: TenantStore;
let sql: SqlEngine;

const N = 600;
// few distinct values (many ties), NULLs, negative and real values
const k = (i: number) => (i % 13 === 0 ? 'NULL' : String((i * 7919) % 23 - 11));
const r = (i: number) => (i % 17 === 0 ? 'NULL' : String(((i * 31) % 97) / 4));
const s = (i: number) => (i % 11 === 0 ? 'NULL' : `'s${(i * 13) % 29}'`);

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sql-index-order-'));
  store = await TenantStore.open({ dir, sync: false });
  sql = new SqlEngine(store);
  for (const t of ['ix', 'plain']) {
    await sql.run(`CREATE TABLE ${t}(id INTEGER PRIMARY KEY, k INTEGER, r REAL, s TEXT)`);
    await sql.run(`INSERT INTO ${t} VALUES ${Array.from({ length: N }, (_, i) => `(${i + 1}, ${k(i)}, ${r(i)}, ${s(i)})`).join(',')}`);
  }
  await sql.run('CREATE INDEX ix_k ON ix(k); CREATE INDEX ix_r ON ix(r); CREATE INDEX ix_s ON ix(s)');
});
afterAll(async () => {
  await sql.tables.settled();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const rows = async (q: string) => (formatResult((await sql.run(q))[0], 'arrays') as { rows: unknown[][] }).rows;

const QUERIES = [
  'SELECT id, k FROM T ORDER BY k LIMIT 5',
  'SELECT id, k FROM T ORDER BY k DESC LIMIT 5',
  'SELECT * FROM T ORDER BY k DESC LIMIT 40',
  'SELECT id FROM T ORDER BY k, id DESC LIMIT 7 OFFSET 3',
  'SELECT id, r FROM T ORDER BY r DESC LIMIT 10',
  'SELECT id, r FROM T ORDER BY r LIMIT 60',
  'SELECT s, id FROM T ORDER BY s DESC LIMIT 12',
  'SELECT s, id FROM T ORDER BY s LIMIT 3',
  'SELECT id FROM T ORDER BY k LIMIT 0',
  `SELECT id FROM T ORDER BY k DESC LIMIT ${N + 5}`,
  'SELECT id, k FROM T ORDER BY k NULLS LAST LIMIT 5',
  'SELECT id FROM T ORDER BY id DESC LIMIT 4',
];

describe('ORDER BY an indexed column … LIMIT', () => {
  it('plans an index_scan with top (reverse for DESC), the sort kept above it, the project above the sort', () => {
    const p = sql.planSql('SELECT id, k FROM ix ORDER BY k DESC LIMIT 5');
    expect(p.plan).toMatchObject({ op: 'limit', input: { op: 'project', input: { op: 'sort', limit: 5, input: { op: 'index_scan', index: 'ix_k', top: 5, reverse: true } } } });
    expect(p.passes.filter((x) => x.changed).map((x) => x.name)).toEqual(expect.arrayContaining(['sort_pushdown', 'index_order']));
    // not the index order: NULLS LAST ascending; and no index on the plain copy
    expect(JSON.stringify(sql.planSql('SELECT id FROM ix ORDER BY k NULLS LAST LIMIT 5').plan)).not.toContain('"top"');
    expect(JSON.stringify(sql.planSql('SELECT id FROM plain ORDER BY k LIMIT 5').plan)).not.toContain('index_scan');
    // a project that computes is not crossed
    expect(sql.planSql('SELECT k + 1 FROM ix ORDER BY 1 LIMIT 5').plan).toMatchObject({ op: 'limit', input: { op: 'sort' } });
  });

  it('answers as the unindexed table does, from storage and from the table cache', async () => {
    for (const q of QUERIES) expect([q, await rows(q.replace(' T ', ' ix '))]).toEqual([q, await rows(q.replace(' T ', ' plain '))]);
    // warm the cache (two full reads), then again: the first top query scans, later ones use the built order
    await rows('SELECT count(*) FROM ix');
    await rows('SELECT count(*) FROM ix');
    await sql.tables.settled();
    for (let pass = 0; pass < 3; pass++) {
      for (const q of QUERIES) expect([q, await rows(q.replace(' T ', ' ix '))]).toEqual([q, await rows(q.replace(' T ', ' plain '))]);
    }
  });

  it('sees writes: a new extreme value and a deleted one', async () => {
    await sql.run(`INSERT INTO ix VALUES (${N + 1}, 1000, 0.5, 'zz'); INSERT INTO plain VALUES (${N + 1}, 1000, 0.5, 'zz')`);
    await sql.run('DELETE FROM ix WHERE id = 2; DELETE FROM plain WHERE id = 2', { deleteMode: 'execute' });
    for (const q of QUERIES) expect([q, await rows(q.replace(' T ', ' ix '))]).toEqual([q, await rows(q.replace(' T ', ' plain '))]);
    expect(await rows('SELECT id FROM ix ORDER BY k DESC LIMIT 1')).toEqual([[N + 1]]);
  });

  it('refuses top combined with bounds in a JSON plan', async () => {
    await expect(sql.runPlan({ op: 'index_scan', schema: 'main.ix', index: 'ix_k', top: 3, lower: { value: { kind: 'lit', value: 1 }, inclusive: true } })).rejects.toMatchObject({ code: 'validation_failed' });
    const r = await sql.runPlan({ op: 'index_scan', schema: 'main.ix', index: 'ix_k', top: 2, reverse: true });
    // the highest k, then the second highest with all its ties, in pk order
    const ks = r.rows.map((x) => x[1]);
    expect(ks[ks.length - 1]).toBe(1000n);
    expect(new Set(ks.slice(0, -1))).toEqual(new Set([11n]));
    expect(ks.length - 1).toBe((await rows('SELECT count(*) FROM plain WHERE k = 11'))[0][0]);
  });
});
