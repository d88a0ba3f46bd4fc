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
  await sql.run('CREATE TABLE c(id INTEGER PRIMARY KEY, k INTEGER, s TEXT); CREATE INDEX c_k ON c(k); CREATE INDEX c_s ON c(s)');
  await sql.run("INSERT INTO c VALUES (1,5,'p'),(2,7,'q'),(3,5,'r'),(4,NULL,NULL),(5,9,'q')");
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
  it('predicate_pushdown works inside a recursive CTE step: the cross-side conjunct becomes the join condition', async () => {
    const q = 'WITH RECURSIVE r(node, d) AS (SELECT 1, 0 UNION SELECT b.id, r.d + 1 FROM r, b WHERE b.a_id = r.node AND r.d < 3) SELECT node, d FROM r ORDER BY d, node';
    const step = json((sql.planSql(q).plan as unknown as { ctes: { plan: { right: unknown } }[] }).ctes[0].plan.right);
    expect(step).toContain('"op":"join","kind":"inner"');
    expect(step).not.toContain('"kind":"cross"');
    // same answer as SQLite: 1 reaches b rows 1 and 2 (a_id = 1); 3 is reached from nothing at depth 1
    const r = await sql.run(q);
    expect((r[0] as { rows: unknown[][] }).rows).toEqual([[1n, 0n], [1n, 1n], [2n, 1n], [1n, 2n], [2n, 2n], [1n, 3n], [2n, 3n]]);
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
  it('pk_selection applies integer pk bounds exactly (no filter left) and keeps non-integer bounds in the filter', async () => {
    const p = sql.planSql('SELECT v FROM a WHERE id > 1 AND id <= 3');
    expect(p.plan).toMatchObject({ op: 'project', input: { op: 'index_scan', index: 'primary' } });
    const rows = async (q: string) => (await sql.run(q))[0] as { rows: unknown[][] };
    expect((await rows('SELECT id FROM a WHERE id > 1.5')).rows).toEqual([[2n], [3n]]);
    expect((await rows('SELECT id FROM a WHERE id > 1 AND id <= 2')).rows).toEqual([[2n]]);
  });
  it('index_selection uses a secondary index for an equality or a range, with the same answers', async () => {
    const eq = sql.planSql('SELECT id FROM c WHERE k = 5');
    expect(json(eq.plan)).toContain('"op":"index_scan","schema":"main.c","alias":"c","index":"c_k","prefix"');
    expect(eq.passes.find((x) => x.name === 'index_selection')!.changed).toBe(true);
    expect(json(sql.planSql("SELECT id FROM c WHERE s >= 'q'").plan)).toContain('"index":"c_s","lower"');
    const rows = async (q: string) => ((await sql.run(q))[0] as { rows: unknown[][] }).rows;
    expect(await rows('SELECT id FROM c WHERE k = 5 ORDER BY id')).toEqual([[1n], [3n]]);
    expect(await rows('SELECT id FROM c WHERE k < 8 ORDER BY id')).toEqual([[1n], [2n], [3n]]);
    expect(await rows("SELECT id FROM c WHERE s > 'p' AND s < 'r' ORDER BY id")).toEqual([[2n], [5n]]);
    expect(await rows("SELECT id FROM c WHERE k = '7'")).toEqual([[2n]]);
    const r = await sql.run('SELECT id FROM c WHERE k = 9', { explain: true });
    expect(json((r[0] as { explain: unknown }).explain)).toContain('main.c via c_k');
  });
  it('join_ordering puts the smaller input on the build side and keeps the column order', async () => {
    // c (5 rows) JOIN a WHERE a.id = 2 (a get: 1 row): the get becomes the right (build) side
    const p = sql.planSql('SELECT * FROM a JOIN c ON c.k > a.v WHERE a.id = 2');
    expect(p.passes.find((x) => x.name === 'join_ordering')!.changed).toBe(true);
    expect(json(p.plan)).toMatch(/"op":"join".*"left":\{"op":"scan","schema":"main.c".*"right":\{"op":"filter","input":\{"op":"get"/);
    const r = await sql.run('SELECT a.id, c.id FROM a JOIN c ON c.k < a.v WHERE a.id = 1 ORDER BY 2');
    expect((r[0] as { rows: unknown[][] }).rows).toEqual([[1n, 1n], [1n, 2n], [1n, 3n], [1n, 5n]]);
  });
  it('a sort under LIMIT keeps only the top rows, ties in input order', async () => {
    const r = await sql.run('SELECT id, k FROM c ORDER BY k DESC NULLS LAST LIMIT 3');
    expect((r[0] as { rows: unknown[][] }).rows).toEqual([[5n, 9n], [2n, 7n], [1n, 5n]]);
    const all = await sql.run('SELECT id FROM c ORDER BY k LIMIT 2 OFFSET 1');
    expect((all[0] as { rows: unknown[][] }).rows).toEqual([[1n], [3n]]);
  });
  it('optimized plans give the same answers', async () => {
    const r = await sql.run('SELECT a.v, b.w FROM a, b WHERE a.id = b.a_id AND a.v > 5 ORDER BY b.w', { explain: true });
    const sel = r[0] as { rows: unknown[][]; explain: { tree: { rows_out: number } } };
    expect(sel.rows).toEqual([[10n, 'x'], [10n, 'y'], [30n, 'z']]);
    expect(sel.explain.tree.rows_out).toBe(3);
  });
});
