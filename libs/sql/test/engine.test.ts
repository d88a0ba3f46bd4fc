/** The engine over a real TenantStore in a temp dir. */
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { TenantStore } from '@mmdb/storage';
import { DbError } from '@mmdb/core';
import { SqlEngine, formatResult, type RawResult } from '@mmdb/sql';

let dir: string;
let store: TenantStore;
let sql: SqlEngine;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sql-'));
  store = await TenantStore.open({ dir, sync: false });
  sql = new SqlEngine(store);
  store.setCheckEvaluator(sql.checkEvaluator);
  await sql.run(`CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT NOT NULL, age INTEGER CHECK (age >= 0), score REAL);
                 CREATE TABLE orders(id INTEGER PRIMARY KEY, user_id INTEGER REFERENCES users(id), amount REAL);
                 CREATE TABLE notes(body TEXT)`);
  await sql.run(`INSERT INTO users VALUES (1,'ann',30,1.5),(2,'bob',20,NULL),(3,'cy',40,3.0)`);
  await sql.run(`INSERT INTO orders VALUES (10,1,5.0),(11,1,7.5),(12,2,1.0)`);
});

afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

async function one(q: string, opts = {}): Promise<RawResult> {
  const r = await sql.run(q, opts);
  return r[r.length - 1];
}

async function rows(q: string, params?: unknown[]): Promise<unknown[]> {
  return (formatResult(await one(q, { params }), 'arrays') as { rows: unknown[] }).rows;
}

describe('SqlEngine', () => {
  it('creates manifests from CREATE TABLE (types, NOT NULL, CHECK, FK, hidden row id)', () => {
    const u = store.manifest('main.users')!;
    expect(u.primary_key).toEqual(['id']);
    expect(u.columns.map((c) => [c.name, c.ty, c.required])).toEqual([['id', 'i64', false], ['name', 'str', true], ['age', 'i64', false], ['score', 'f64', false]]);
    expect(u.checks[0].expr).toBe('age >= 0');
    expect(store.manifest('main.orders')!.foreign_keys[0].references).toBe('main.users');
    const n = store.manifest('main.notes')!;
    expect(n.hidden_rowid).toBe(true);
    expect(n.primary_key).toEqual(['_rowid']);
  });

  it('joins, groups and orders', async () => {
    expect(await rows('SELECT u.name, count(o.id), sum(o.amount) FROM users u LEFT JOIN orders o ON o.user_id = u.id GROUP BY u.name ORDER BY 1')).toEqual([
      ['ann', 2, 12.5], ['bob', 1, 1], ['cy', 0, null],
    ]);
  });

  it('binds $n parameters and answers envelopes with column types', async () => {
    const env = formatResult(await one('SELECT name, age FROM users WHERE age > $1 ORDER BY age', { params: [25] }));
    expect(env).toEqual({ kind: 'select', columns: [{ name: 'name', type: 'text' }, { name: 'age', type: 'integer' }], rows: [{ name: 'ann', age: 30 }, { name: 'cy', age: 40 }] });
  });

  it('gives duplicate output columns distinct names', async () => {
    const env = formatResult(await one('SELECT 1 AS a, 2 AS a, 3')) as { columns: { name: string }[] };
    expect(env.columns.map((c) => c.name)).toEqual(['a', 'a_2', '3']);
  });

  it('INSERT … RETURNING and UPDATE … RETURNING', async () => {
    const ins = formatResult(await one(`INSERT INTO users(name, age) VALUES ('dee', 5) RETURNING id, name`));
    expect(ins).toMatchObject({ kind: 'insert', schema: 'main.users', returning: [{ id: 4, name: 'dee' }] });
    const up = formatResult(await one(`UPDATE users SET age = age + 1 WHERE age < 25 RETURNING name, age`));
    expect(up).toMatchObject({ kind: 'update', schema: 'main.users', count: 2 });
    expect((up as { rows: unknown[] }).rows).toEqual(expect.arrayContaining([{ name: 'bob', age: 21 }, { name: 'dee', age: 6 }]));
  });

  it('DELETE only translates by default', async () => {
    const d = formatResult(await one('DELETE FROM users WHERE age > 25'));
    expect(d).toEqual({ kind: 'delete', schema: 'main.users', pks: [[1], [3]], note: expect.stringMatching(/^translated only: no row was removed/) });
    expect(await rows('SELECT count(*) FROM users')).toEqual([[3]]);
    // one row: `pk` is the row route's {pk} segment (a string), `pks` keeps the tuples
    const d1 = formatResult(await one('DELETE FROM users WHERE id = 2'));
    expect(d1).toMatchObject({ pk: '2', pks: [[2]], note: expect.stringContaining('DELETE /v1/tenants/{tenant}/rows/main.users/{pk}') });
  });

  it('enforces CHECK through the store with check_violation naming the constraint', async () => {
    await expect(sql.run(`INSERT INTO users VALUES (9,'x',-1,0)`)).rejects.toMatchObject({ code: 'check_violation' });
    await expect(sql.run(`INSERT INTO users VALUES (9,NULL,1,0)`)).rejects.toMatchObject({ code: 'missing_required' });
  });

  it('commits BEGIN … COMMIT as one frame, ROLLBACK discards', async () => {
    await sql.run(`BEGIN; INSERT INTO notes VALUES ('a'); INSERT INTO notes VALUES ('b'); COMMIT;`);
    await sql.run(`BEGIN; INSERT INTO notes VALUES ('c'); ROLLBACK;`);
    expect(await rows('SELECT body FROM notes ORDER BY body')).toEqual([['a'], ['b']]);
  });

  it('a transaction that lost to a concurrent write fails with write_conflict', async () => {
    const slow = sql.run(`BEGIN; UPDATE users SET age = 99 WHERE id = 1; COMMIT;`);
    // a write to the same row lands between the transaction's read and its commit
    await store.put('main.users', { id: 1, name: 'ann', age: 31, score: 1.5 });
    const r = await slow.then(() => null, (e: DbError) => e);
    // either the transaction read after the write (no conflict) or it lost: never a silent overwrite of a newer version
    if (r) expect(r.code).toBe('write_conflict');
    else expect(await rows('SELECT age FROM users WHERE id = 1')).toEqual([[99]]);
  });

  it('SQLite arithmetic: integer division, division by zero, 64-bit overflow goes REAL, sum() overflow is an error', async () => {
    expect(await rows('SELECT 7/2, 7.0/2, 1/0, 5 % 0, -7 % 3')).toEqual([[3, 3.5, null, null, -1]]);
    expect(await rows('SELECT typeof(9223372036854775807 + 1), typeof(9223372036854775806 + 1), typeof(-(-9223372036854775807 - 1)), 4611686018427387904 * 4')).toEqual([
      ['real', 'integer', 'real', 18446744073709552000],
    ]);
    await expect(sql.run('SELECT sum(v) FROM (SELECT 9223372036854775807 AS v UNION ALL SELECT 1)')).rejects.toMatchObject({ code: 'validation_failed' });
  });

  it('follows SQLite where affinity and built-ins have corners (each checked against SQLite 3)', async () => {
    await sql.run(`CREATE TABLE aff(a TEXT, b REAL, c NUMERIC)`);
    await sql.run(`INSERT INTO aff VALUES (' 12', 12, ' 12 '), ('x', 1000, '5')`);
    // BETWEEN: the lower bound takes comparisons; the upper bound stops at BETWEEN's own level
    expect(await rows(`SELECT 1 BETWEEN 0 = 0 AND 2, 5 BETWEEN 1 AND 9 = 1, 0 BETWEEN 1 AND 0 = 0`)).toEqual([[1, 1, 1]]);
    // IN (list): the list's values have no affinity, even CASTs; only the left operand's applies
    expect(await rows(`SELECT '56' IN (CAST('56' AS NUMERIC), 1), a IN (12, 0), c IN ('12', 0) FROM aff ORDER BY b`)).toEqual([[0, 0, 1], [0, 0, 0]]);
    // CASE x WHEN y compares as x = y: a TEXT against a NUMERIC column takes numeric affinity
    expect(await rows(`SELECT CASE a WHEN c THEN 'eq' ELSE 'ne' END, a = c, CASE a WHEN 12 THEN 'eq' ELSE 'ne' END FROM aff ORDER BY b`)).toEqual([['eq', 1, 'ne'], ['ne', 0, 'ne']]);
    // abs() of text is REAL; sign() of text that is not wholly a number is NULL
    expect(await rows(`SELECT abs('55'), typeof(abs('55')), abs('-3abc'), sign('x'), sign(' 4 '), sign('-2.5')`)).toEqual([[55, 'real', 3, null, 1, -1]]);
    // sum(): wholly-integer text adds as integers; any other text makes the sum REAL
    expect(await rows(`SELECT typeof(sum(v)), sum(v) FROM (SELECT '12' AS v UNION ALL SELECT '12')`)).toEqual([['integer', 24]]);
    expect(await rows(`SELECT typeof(sum(v)), sum(v) FROM (SELECT '12' AS v UNION ALL SELECT 'abc')`)).toEqual([['real', 12]]);
    // replace(): an empty pattern gives X back as text, even with a NULL replacement
    expect(await rows(`SELECT replace(1.5, '', NULL), typeof(replace(1.5, '', 'x')), replace('abc', 'b', NULL), replace(NULL, '', 'x')`)).toEqual([['1.5', 'text', null, null]]);
  });

  it('COLLATE NOCASE / RTRIM / BINARY: explicit and declared, in comparisons, IN, CASE, ORDER BY, GROUP BY, joins and over indexes (answers checked against SQLite 3)', async () => {
    await sql.run(`CREATE TABLE c1(id INTEGER PRIMARY KEY, name TEXT COLLATE NOCASE, tag TEXT);
                   CREATE INDEX c1_name ON c1(name); CREATE INDEX c1_tag ON c1(tag);
                   CREATE TABLE c2(k TEXT COLLATE NOCASE, v INTEGER)`);
    await sql.run(`INSERT INTO c1 VALUES (1,'Apple','b'),(2,'apple','B'),(3,'banana','a'),(4,'APPLE ','A'); INSERT INTO c2 VALUES ('APPLE',10),('b',20)`);
    const ids = async (q: string) => (await rows(q)).map((r) => (r as unknown[])[0]);
    // the declared collation of the column (an index on it must not turn this into a BINARY lookup)
    expect(await ids(`SELECT id FROM c1 WHERE name = 'APPLE' ORDER BY id`)).toEqual([1, 2]);
    expect(await ids(`SELECT id FROM c1 WHERE 'APPLE' = name ORDER BY id`)).toEqual([1, 2]);
    expect(await ids(`SELECT id FROM c1 WHERE name > 'APPLE' ORDER BY id`)).toEqual([3, 4]);
    // an explicit COLLATE wins over the column's; BINARY columns stay BINARY
    expect(await ids(`SELECT id FROM c1 WHERE tag = 'b' ORDER BY id`)).toEqual([1]);
    expect(await ids(`SELECT id FROM c1 WHERE tag = 'b' COLLATE NOCASE ORDER BY id`)).toEqual([1, 2]);
    expect(await ids(`SELECT id FROM c1 WHERE name = 'apple ' COLLATE RTRIM ORDER BY id`)).toEqual([2]);
    expect(await ids(`SELECT id FROM c1 WHERE tag COLLATE NOCASE IN ('a') ORDER BY id`)).toEqual([3, 4]);
    expect(await ids(`SELECT id FROM c1 WHERE name IN (SELECT 'APPLE') ORDER BY id`)).toEqual([1, 2]);
    expect(await rows(`SELECT 'a' = 'A' COLLATE NOCASE, 'a' COLLATE BINARY = 'A', 'a ' = 'a' COLLATE RTRIM, CASE name WHEN 'APPLE' THEN 1 ELSE 0 END FROM c1 WHERE id = 1`)).toEqual([[1, 0, 1, 1]]);
    // ORDER BY and GROUP BY compare with the key's collation
    expect(await ids(`SELECT id FROM c1 ORDER BY tag COLLATE NOCASE, id`)).toEqual([3, 4, 1, 2]);
    expect(await ids(`SELECT id FROM c1 ORDER BY tag, id`)).toEqual([4, 2, 3, 1]);
    expect(await ids(`SELECT id FROM c1 ORDER BY name DESC, id LIMIT 2`)).toEqual([3, 4]);
    expect(await rows(`SELECT name, count(*) FROM c1 GROUP BY name ORDER BY 1`)).toEqual([['Apple', 2], ['APPLE ', 1], ['banana', 1]]);
    // DISTINCT, set operations, min/max and count(DISTINCT …) tell TEXT apart the same way
    expect(await rows(`SELECT DISTINCT name FROM c1 ORDER BY 1`)).toEqual([['Apple'], ['APPLE '], ['banana']]);
    expect(await rows(`SELECT DISTINCT tag COLLATE NOCASE FROM c1 ORDER BY 1`)).toHaveLength(2);
    expect(await rows(`SELECT name FROM c1 EXCEPT SELECT 'APPLE' ORDER BY 1`)).toEqual([['APPLE '], ['banana']]);
    expect(await rows(`SELECT 'BANANA' UNION SELECT name FROM c1 ORDER BY 1`)).toHaveLength(3);
    expect(await rows(`SELECT min(name), max(name), min(tag), max(tag), count(DISTINCT name), count(DISTINCT tag) FROM c1`)).toEqual([['Apple', 'banana', 'A', 'b', 3, 4]]);
    // a derived table's column keeps the collation of its expression
    expect(await ids(`SELECT id FROM (SELECT id, tag COLLATE NOCASE AS t FROM c1) WHERE t = 'A' ORDER BY 1`)).toEqual([3, 4]);
    // joins: the left column's collation (BINARY for tag), so no hash join on NOCASE keys either
    expect(await rows(`SELECT c1.id, c2.v FROM c1 JOIN c2 ON c2.k = c1.name ORDER BY 1`)).toEqual([[1, 10], [2, 10]]);
    expect(await rows(`SELECT c1.id, c2.v FROM c1 JOIN c2 ON c1.tag = c2.k ORDER BY 1`)).toEqual([[1, 20]]);
    // the declared collation survives a manifest rewrite
    await sql.run(`ALTER TABLE c1 ADD COLUMN z INTEGER`);
    expect(await ids(`SELECT id FROM c1 WHERE name = 'APPLE' ORDER BY id`)).toEqual([1, 2]);
    await expect(sql.run(`SELECT 1 COLLATE klingon`)).rejects.toMatchObject({ code: 'validation_failed', message: 'no such collation sequence: klingon' });
  });

  it('orders UNION/EXCEPT/INTERSECT rows tied on the ORDER BY by the other columns, as SQLite does', async () => {
    const q = (op: string) => `SELECT a, b FROM (SELECT 1 AS a, 2 AS b UNION ALL SELECT 1, 1) ${op} SELECT 1, NULL ORDER BY 1 DESC LIMIT 2`;
    expect(await rows(q('UNION'))).toEqual([[1, null], [1, 1]]);
    expect(await rows(`SELECT 2 AS a, 9 AS b UNION SELECT 2, 3 UNION SELECT 1, 5 ORDER BY 1 DESC`)).toEqual([[2, 3], [2, 9], [1, 5]]);
    expect(await rows(`SELECT 2 AS a, 9 AS b INTERSECT SELECT 2, 9 ORDER BY 1`)).toEqual([[2, 9]]);
    // UNION ALL keeps its rows as the two sides give them
    expect(await rows(`SELECT 2 AS a, 9 AS b UNION ALL SELECT 2, 3 ORDER BY 1`)).toEqual([[2, 9], [2, 3]]);
  });

  it('correlated subqueries, EXISTS, IN, CTEs and recursive CTEs', async () => {
    expect(await rows('SELECT name FROM users u WHERE EXISTS (SELECT 1 FROM orders o WHERE o.user_id = u.id) ORDER BY name')).toEqual([['ann'], ['bob']]);
    expect(await rows('SELECT name, (SELECT max(amount) FROM orders o WHERE o.user_id = u.id) FROM users u ORDER BY id')).toEqual([['ann', 7.5], ['bob', 1], ['cy', null]]);
    expect(await rows('WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM n WHERE x < 5) SELECT sum(x) FROM n')).toEqual([[15]]);
  });

  it('explain reports passes and per-node rows', async () => {
    const r = await one('SELECT name FROM users WHERE id = 2', { explain: true });
    const ex = (r as { explain: { passes: { name: string }[]; tree: { rows_out: number } } }).explain;
    expect(ex.passes.map((p) => p.name)).toEqual(['constant_folding', 'predicate_pushdown', 'fts_predicate', 'topk_pushdown', 'graph_join', 'join_search', 'pk_selection', 'index_selection', 'join_ordering', 'hash_join', 'limit_pushdown', 'sort_pushdown', 'index_order']);
    expect(ex.tree.rows_out).toBe(1);
  });

  it('counts plan cache hits for repeated statements', async () => {
    const before = sql.planCache.hits;
    await sql.run('SELECT * FROM users');
    await sql.run('SELECT  *  FROM users');
    expect(sql.planCache.hits).toBe(before + 1);
  });

  it('memoizes cache keys of statement-sized texts only, so bulk INSERT texts are not kept', async () => {
    const memo = (sql as unknown as { keyMemo: Map<string, string> }).keyMemo;
    memo.clear();
    await sql.run('CREATE TABLE bulk(id INTEGER PRIMARY KEY, s TEXT)');
    for (let b = 0; b < 5; b++) {
      await sql.run(`INSERT INTO bulk VALUES ${Array.from({ length: 300 }, (_, i) => `(${b * 300 + i}, 'text of row ${i}')`).join(', ')}`);
    }
    expect([...memo.keys()].every((k) => k.length <= 4096)).toBe(true);
    // a long SELECT still answers, and repeated, still hits the plan cache (its key is recomputed)
    const long = `SELECT count(*) AS n FROM bulk WHERE id IN (${Array.from({ length: 1200 }, (_, i) => i * 2).join(', ')})`;
    expect(long.length).toBeGreaterThan(4096);
    const before = sql.planCache.hits;
    expect((await one(long) as { rows: unknown[][] }).rows).toEqual([[750n]]);
    expect((await one(long) as { rows: unknown[][] }).rows).toEqual([[750n]]);
    expect(sql.planCache.hits).toBe(before + 1);
    expect(memo.has(long)).toBe(false);
  });

  it('stops a query over its memory budget with resource_exhausted', async () => {
    await expect(sql.run('SELECT * FROM users a, users b, users c ORDER BY 1', { maxRows: 10 })).rejects.toMatchObject({ code: 'resource_exhausted' });
  });

  it('cancels a running query with query_cancelled', async () => {
    await sql.run('INSERT INTO notes SELECT * FROM (WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM n WHERE x < 300) SELECT x FROM n)');
    const p = sql.run('SELECT count(*) FROM notes a, notes b, notes c', { queryId: '01J00000000000000000000000' });
    setTimeout(() => sql.cancel('01J00000000000000000000000'), 30);
    await expect(p).rejects.toMatchObject({ code: 'query_cancelled' });
  });

  it('runs JSON plan trees', async () => {
    const r = await sql.runPlan({ op: 'filter', input: { op: 'scan', schema: 'main.users' }, predicate: { kind: 'binary', op: '>', left: { kind: 'col', name: 'age' }, right: { kind: 'lit', value: 25 } } });
    expect(r.rows.length).toBe(2);
  });
});
