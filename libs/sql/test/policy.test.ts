/**
 * The Policy port over a real TenantStore: WITH CHECK on the writer (INSERT VALUES / SELECT,
 * UPDATE, scripts), a query's conjuncts pushed below the mask projection after the policy filter
 * (a key range still used, the query's predicate never run on a hidden row), and masks of columns
 * a plan never names not computed.
 */
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { TenantStore } from '@mmdb/storage';
import { DbError } from '@mmdb/core';
import type { Expr, PlanNode } from '@mmdb/plan';
import { SqlEngine, formatResult, type Policy, type QueryOptions } from '@mmdb/sql';

let dir: string;
let store: TenantStore;
let sql: SqlEngine;

const col = (name: string): Expr => ({ kind: 'col', name });
const eq = (l: Expr, v: string): Expr => ({ kind: 'binary', op: '=', left: l, right: { kind: 'lit', value: v } });
const strict = (e: Expr): Expr => ({ kind: 'case', whens: [{ when: e, then: { kind: 'lit', value: 1 } }], else: { kind: 'lit', value: 0 } });
let maskCalls = 0;

/** Rows of region 'eu' only; `secret` masked by upper(); new rows must be 'eu'. */
const policy: Policy = {
  leafFilter: (leaf) => strict(eq(col(leaf.alias ? `${leaf.alias}.region` : 'region'), 'eu')),
  leafMasks: (leaf) => {
    maskCalls++;
    const name = leaf.alias ? `${leaf.alias}.secret` : 'secret';
    return new Map([[name.toLowerCase(), { kind: 'call', name: 'upper', args: [col(name)] } as Expr]]);
  },
  writeCheck: () => eq(col('region'), 'eu'),
};
const as: QueryOptions = { policy, policyKey: 'eu-user' };

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sql-policy-'));
  store = await TenantStore.open({ dir, sync: false });
  sql = new SqlEngine(store);
  store.setCheckEvaluator(sql.checkEvaluator);
  await sql.run("CREATE TABLE t(id INTEGER PRIMARY KEY, region TEXT NOT NULL, secret TEXT, js TEXT)");
  await sql.run("INSERT INTO t VALUES (1,'eu','a','{}'),(2,'eu','b','{}'),(3,'us','c','not json'),(4,'us','d','not json')");
  maskCalls = 0;
});

afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

async function rows(q: string, opts: QueryOptions = as): Promise<unknown[]> {
  const r = await sql.run(q, opts);
  return (formatResult(r[r.length - 1], 'arrays') as { rows: unknown[] }).rows;
}

async function refused(q: string): Promise<string> {
  try {
    await sql.run(q, as);
  } catch (e) {
    return (e as DbError).code;
  }
  return 'ran';
}

describe('the Policy port', () => {
  it('WITH CHECK: every new row of INSERT (VALUES, SELECT) and UPDATE; a failing one writes nothing', async () => {
    expect(await refused("INSERT INTO t VALUES (5,'eu','x','{}'),(6,'us','y','{}')")).toBe('forbidden');
    expect(await refused("INSERT INTO t (id, region) SELECT id + 10, 'us' FROM t")).toBe('forbidden');
    expect(await refused("UPDATE t SET region = 'us' WHERE id = 1")).toBe('forbidden');
    expect(await refused("BEGIN; INSERT INTO t VALUES (7,'eu','x','{}'); INSERT INTO t VALUES (8,'us','y','{}'); COMMIT")).toBe('forbidden');
    expect(await rows('SELECT count(*) FROM t', {})).toEqual([[4]]);
    await sql.run("INSERT INTO t (id, region, secret) SELECT id + 10, region, 'z' FROM t", as); // reads eu rows only
    expect(await rows('SELECT id FROM t WHERE id > 10 ORDER BY id', {})).toEqual([[11], [12]]);
  });

  it('a query\'s conjuncts over unmasked columns go below the mask projection, after the policy', async () => {
    const q = "SELECT id, secret FROM t WHERE id >= 2 AND id <= 4 AND json_extract(js, '$.a') IS NULL";
    await expect(sql.run(q)).rejects.toThrow(/JSON/i); // the owner reads the us rows' malformed JSON
    expect(await rows(q)).toEqual([[2, 'B']]);
    const ex = (await sql.run(q, { ...as, explain: true }))[0] as { explain?: { plan: PlanNode } };
    expect(JSON.stringify(ex.explain?.plan)).toContain('"index_scan"');
    // a predicate over the masked column compares masks, above the projection
    expect(await rows("SELECT id FROM t WHERE secret = 'a'")).toEqual([]);
    expect(await rows("SELECT id FROM t WHERE secret = 'A'")).toEqual([[1]]);
  });

  it('a masked column no part of the plan names is NULL, not computed; named ones are masked', async () => {
    expect(await rows('SELECT id FROM t ORDER BY id')).toEqual([[1], [2]]);
    const plan = async (q: string) => JSON.stringify(((await sql.run(q, { ...as, explain: true }))[0] as { explain?: { plan: PlanNode } }).explain?.plan);
    expect(await plan('SELECT id FROM t ORDER BY id')).not.toContain('"upper"');
    expect(await plan('SELECT id, secret FROM t ORDER BY id')).toContain('"upper"');
    expect(await rows('SELECT id, secret FROM t ORDER BY id')).toEqual([[1, 'A'], [2, 'B']]);
    expect(await rows('SELECT max(secret) FROM t')).toEqual([['B']]);
    // an aggregate over the mask projection takes the masks in place (no masked row copies): still masks
    expect(await rows('SELECT secret, count(*), min(lower(secret)) FROM t GROUP BY secret ORDER BY 1')).toEqual([['A', 1, 'a'], ['B', 1, 'b']]);
    expect(await rows('SELECT max((SELECT max(x.secret) FROM t x WHERE x.id = t.id)) FROM t')).toEqual([['B']]);
    const tree = JSON.stringify(((await sql.run('SELECT count(*), max(secret) FROM t', { ...as, explain: true }))[0] as { explain?: { tree: unknown } }).explain?.tree);
    // the aggregate counts its rows; the projection it absorbed ran no row of its own
    expect(tree).toMatch(/"op":"aggregate","rows_out":1,.*"op":"project","rows_out":0,.*"op":"filter","rows_out":2/);
    // a plan whose root outputs the leaf's columns as they are keeps every mask
    const r = await sql.runPlan({ op: 'scan', schema: 't' }, as);
    expect(r.rows.map((x) => x[2])).toEqual(['A', 'B']);
    expect(maskCalls).toBeGreaterThan(0);
  });

  it('mask_partial: **** and the last n characters (code points); NULL stays NULL', async () => {
    expect(await rows("SELECT mask_partial('123456', 2), mask_partial(NULL, 2), mask_partial('ab', 4), mask_partial('\u{1F600}x\u{1F600}', 2), mask_partial(12345, 3)", {})).toEqual([
      ['****56', null, '****ab', '****x\u{1F600}', '****345'],
    ]);
  });
});
