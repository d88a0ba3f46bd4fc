/** Optimizer passes, asserted on explain output over a real store. */
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { TenantStore } from '@mmdb/storage';
import { SqlEngine } from '@mmdb/sql';

let dir: string;
let store: TenantStore;
let sql: SqlEngine;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'opt-'));
  store = await TenantStore.open({ dir, sync: false });
  sql = new SqlEngine(store);
  await sql.run('CREATE TABLE a(id INTEGER PRIMARY KEY, v INTEGER); CREATE TABLE b(id INTEGER PRIMARY KEY, a_id INTEGER, w TEXT)');
  await sql.run('INSERT INTO a VALUES (1,10),(2,20),(3,30)');
  await sql.run("INSERT INTO b VALUES (1,1,'x'),(2,1,'y'),(3,3,'z')");
});
afterAll(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const json = (x: unknown) => JSON.stringify(x);

describe('optimizer passes', () => {
  it('pk_selection turns a pk equality into a get', () => {
    const p = sql.planSql('SELECT v FROM a WHERE id = 2');
    expect(json(p.plan)).toContain('"op":"get"');
    expect(p.passes.find((x) => x.name === 'pk_selection')!.changed).toBe(true);
  });
  it('pk_selection turns a pk range into an index_scan on the primary key', () => {
    expect(json(sql.planSql('SELECT v FROM a WHERE id > 1').plan)).toContain('"index":"primary"');
  });
  it('predicate_pushdown moves conditions to their side and hash_join uses the equality', () => {
    const p = sql.planSql('SELECT a.v, b.w FROM a, b WHERE a.id = b.a_id AND a.v > 5 AND b.w <> $1');
    const s = json(p.plan);
    expect(s).toContain('"strategy":"hash"');
    expect(s).toMatch(/"op":"join","kind":"inner"/);
    expect(p.passes.filter((x) => x.changed).map((x) => x.name)).toEqual(expect.arrayContaining(['predicate_pushdown', 'hash_join']));
  });
  it('limit_pushdown bounds the sort', () => {
    expect(json(sql.planSql('SELECT v FROM a ORDER BY v DESC LIMIT 2').plan)).toMatch(/"op":"sort".*"limit":2/);
  });
  it('constant_folding evaluates constant expressions', () => {
    expect(json(sql.planSql('SELECT 1 + 2 * 3 FROM a').plan)).toContain('"value":7');
  });
  it('optimized plans give the same answers', async () => {
    const r = await sql.run('SELECT a.v, b.w FROM a, b WHERE a.id = b.a_id AND a.v > 5 ORDER BY b.w', { explain: true });
    const sel = r[0] as { rows: unknown[][]; explain: { tree: { rows_out: number } } };
    expect(sel.rows).toEqual([[10n, 'x'], [10n, 'y'], [30n, 'z']]);
    expect(sel.explain.tree.rows_out).toBe(3);
  });
});
