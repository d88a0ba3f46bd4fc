/** json, vector and 64-bit integer columns through SQL over a real TenantStore (issue 15). */
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { DbError } from '@mmdb/core';
import { TenantStore } from '@mmdb/storage';
import { SqlEngine, formatResult } from '@mmdb/sql';

const J = `namespace = "scratch"
table = "j"
primary_key = ["id"]
[[columns]]
name = "id"
ty = "str"
[[columns]]
name = "tags"
ty = "json"
[[columns]]
name = "n"
ty = "i64"
[[columns]]
name = "emb"
ty = "vector"
dim = 3
`;

let dir: string;
let store: TenantStore;
let sql: SqlEngine;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sql-values-'));
  store = await TenantStore.open({ dir, sync: false });
  sql = new SqlEngine(store);
  await store.registerSchema(J);
});

afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

async function env(q: string, params?: unknown[]): Promise<any> {
  const r = await sql.run(q, { params });
  return formatResult(r[r.length - 1]);
}

async function stored(id: string): Promise<unknown> {
  return (await store.snapshot().getRow('scratch.j', [id]))?.values;
}

async function code(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'ok';
  } catch (e) {
    return e instanceof DbError ? `${e.code}: ${e.message}` : String(e);
  }
}

describe('json columns in SQL', () => {
  it('an UPDATE that does not name a json column leaves it as it was (not its text)', async () => {
    await store.commit({ changes: [{ op: 'put', schema: 'scratch.j', row: { id: 'a', tags: ['x', 'y'], n: 1 } }] });
    expect(await env(`UPDATE scratch.j SET n = 2 WHERE id = 'a'`)).toMatchObject({ kind: 'update', count: 1 });
    expect(await stored('a')).toEqual({ id: 'a', tags: ['x', 'y'], n: 2, emb: null });
  });

  it('reads as the JSON value, typed json; writes JSON text (a string must be JSON-quoted)', async () => {
    await env(`INSERT INTO scratch.j (id, tags) VALUES ('b', '{"k":[1,"two",null],"ü":true}')`);
    expect(await stored('b')).toMatchObject({ tags: { k: [1, 'two', null], ü: true } });
    const s = await env(`SELECT id, tags FROM scratch.j WHERE id = 'b'`);
    expect(s.columns).toEqual([{ name: 'id', type: 'text' }, { name: 'tags', type: 'json' }]);
    expect(s.rows).toEqual([{ id: 'b', tags: { k: [1, 'two', null], ü: true } }]);
    await env(`INSERT INTO scratch.j (id, tags) VALUES ('s', '"hi"'), ('i', 5), ('p', $1)`, [{ a: [1, 2] }]);
    expect(await stored('s')).toMatchObject({ tags: 'hi' });
    expect(await stored('i')).toMatchObject({ tags: 5 });
    expect(await stored('p')).toMatchObject({ tags: { a: [1, 2] } });
    expect(await code(env(`INSERT INTO scratch.j (id, tags) VALUES ('x', 'not json')`))).toMatch(/^type_mismatch: column "tags" expects JSON text, got "not json"/);
  });

  it('keeps big integers inside json exactly, and refuses decimals a double cannot hold', async () => {
    await env(`INSERT INTO scratch.j (id, tags) VALUES ('big', '{"order_ref":12345678901234567891}')`);
    expect(await stored('big')).toMatchObject({ tags: { order_ref: 12345678901234567891n } });
    expect((await env(`SELECT tags FROM scratch.j WHERE id = 'big'`)).rows[0].tags).toEqual({ order_ref: 12345678901234567891n });
    expect(await code(env(`INSERT INTO scratch.j (id, tags) VALUES ('d', '[0.10000000000000000001]')`))).toMatch(/^type_mismatch: column "tags" \(json\) holds the number 0.10000000000000000001/);
  });

  it('an index on a json column finds rows by their JSON text', async () => {
    await store.registerSchema(J.replace('dim = 3\n', 'dim = 3\n[[indexes]]\nname = "by_tags"\ncolumns = ["tags"]\n'));
    await env(`INSERT INTO scratch.j (id, tags) VALUES ('h', '"hi"'), ('o', '{"b":1,"a":[2]}'), ('n', '7')`);
    expect((await env(`SELECT id FROM scratch.j WHERE tags = '"hi"'`)).rows).toEqual([{ id: 'h' }]);
    expect((await env(`SELECT id FROM scratch.j WHERE tags = '{"b":1,"a":[2]}'`)).rows).toEqual([{ id: 'o' }]);
    expect((await env(`SELECT id FROM scratch.j WHERE tags = '7'`)).rows).toEqual([{ id: 'n' }]);
    expect((await env(`SELECT id FROM scratch.j WHERE tags = 'hi'`)).rows).toEqual([]);
  });

  it('runs the SQLite JSON functions and operators on json columns', async () => {
    await env(`INSERT INTO scratch.j (id, tags) VALUES ('f', '{"a":{"b":[10,20,"x"]},"s":"str","r":1.5,"t":true,"big":9007199254740993}')`);
    const r = await env(
      `SELECT json_extract(tags, '$.a.b[1]') AS e1, json_extract(tags, '$.s') AS e2, json_extract(tags, '$.a') AS e3,
              json_type(tags) AS t0, json_type(tags, '$.r') AS t1, json_type(tags, '$.a.b') AS t2, json_type(tags, '$.nope') AS t3,
              tags -> '$.s' AS a1, tags ->> 's' AS a2, tags -> 'a' -> 'b' ->> 2 AS a3, tags ->> '$.big' AS a4,
              json('{ "x" : 1 }') AS j1, json_array(1, 'two', NULL, 2.5) AS j2, json_object('k', 1, 'v', 'w') AS j3,
              json_array_length(tags, '$.a.b') AS l1, json_extract(tags, '$.t') AS e4
         FROM scratch.j WHERE id = 'f'`,
    );
    expect(r.rows[0]).toEqual({
      e1: 20, e2: 'str', e3: '{"b":[10,20,"x"]}', t0: 'object', t1: 'real', t2: 'array', t3: null,
      a1: '"str"', a2: 'str', a3: 'x', a4: 9007199254740993n,
      j1: '{"x":1}', j2: '[1,"two",null,2.5]', j3: '{"k":1,"v":"w"}', l1: 3, e4: 1,
    });
    expect((await env(`SELECT id FROM scratch.j WHERE json_extract(tags, '$.a.b[0]') = 10`)).rows).toEqual([{ id: 'f' }]);
  });
});

describe('vector columns in SQL', () => {
  it('INSERT takes pgvector text or a $n array; SELECT answers the array typed vector', async () => {
    await env(`INSERT INTO scratch.j (id, emb) VALUES ('v1', '[1,2,3]'), ('v2', $1)`, [[0.5, -0.25, 1e-300]]);
    expect(await stored('v1')).toMatchObject({ emb: [1, 2, 3] });
    expect(await stored('v2')).toMatchObject({ emb: [0.5, -0.25, 1e-300] });
    const s = await env(`SELECT id, emb FROM scratch.j ORDER BY id`);
    expect(s.columns).toEqual([{ name: 'id', type: 'text' }, { name: 'emb', type: 'vector' }]);
    expect(s.rows).toEqual([{ id: 'v1', emb: [1, 2, 3] }, { id: 'v2', emb: [0.5, -0.25, 1e-300] }]);
  });

  it('UPDATE sets a vector, or leaves it as it was when it does not name it', async () => {
    await env(`INSERT INTO scratch.j (id, emb, n) VALUES ('v', '[1,2,3]', 1)`);
    await env(`UPDATE scratch.j SET n = 2 WHERE id = 'v'`);
    expect(await stored('v')).toMatchObject({ emb: [1, 2, 3], n: 2 });
    await env(`UPDATE scratch.j SET emb = '[3,2,1]' WHERE id = 'v'`);
    expect(await stored('v')).toMatchObject({ emb: [3, 2, 1] });
    const ret = await env(`UPDATE scratch.j SET emb = $1 WHERE id = 'v' RETURNING emb, n`, [[4, 5, 6]]);
    expect(ret.rows).toEqual([{ emb: [4, 5, 6], n: 2 }]);
  });

  it('refuses a vector of another length or a non-vector, naming the column', async () => {
    expect(await code(env(`INSERT INTO scratch.j (id, emb) VALUES ('w', '[1,2]')`))).toMatch(/^dim_mismatch: column "emb"/);
    expect(await code(env(`INSERT INTO scratch.j (id, emb) VALUES ('w', 'abc')`))).toMatch(/^type_mismatch: column "emb" expects a vector/);
    expect(await code(env(`INSERT INTO scratch.j (id, emb) VALUES ('w', 7)`))).toMatch(/^type_mismatch: column "emb" expects a vector/);
    expect(await code(env(`INSERT INTO scratch.j (id, emb) VALUES ('w', '[1,2,1e400]')`))).toMatch(/^type_mismatch: column "emb" .*1e400/);
  });
});

describe('i64 over the full signed 64-bit range', () => {
  it('stores and answers integers beyond ±2^53 exactly (bigint), refuses beyond 64 bits', async () => {
    await env(`INSERT INTO scratch.j (id, n) VALUES ('max', 9223372036854775807), ('min', -9223372036854775808), ('p', $1)`, [9007199254740993n]);
    expect(await stored('max')).toMatchObject({ n: 9223372036854775807n });
    expect(await stored('min')).toMatchObject({ n: -9223372036854775808n });
    expect(await stored('p')).toMatchObject({ n: 9007199254740993n });
    const s = await env(`SELECT n FROM scratch.j WHERE n > 9007199254740992 ORDER BY n`);
    expect(s.rows).toEqual([{ n: 9007199254740993n }, { n: 9223372036854775807n }]);
    expect(s.columns).toEqual([{ name: 'n', type: 'integer' }]);
    expect((await env(`SELECT 9007199254740993 AS x`)).rows).toEqual([{ x: 9007199254740993n }]);
    expect(await code(env(`INSERT INTO scratch.j (id, n) VALUES ('o', 9223372036854775807 + 1)`))).toMatch(/integer overflow/);
  });

  it('a DEFAULT beyond 2^53 is kept in the manifest exactly (CREATE TABLE and ALTER TABLE)', async () => {
    await env(`CREATE TABLE d(id INTEGER PRIMARY KEY, n INTEGER DEFAULT 9223372036854775807, j JSON)`);
    await env(`ALTER TABLE d ADD COLUMN m INTEGER DEFAULT -9007199254740993`);
    await env(`INSERT INTO d(id, j) VALUES (1, '[1]')`);
    const s = await env(`SELECT n, m, j FROM d`);
    expect(s.rows).toEqual([{ n: 9223372036854775807n, m: -9007199254740993n, j: [1] }]);
    expect(s.columns.map((c: { type: string }) => c.type)).toEqual(['integer', 'integer', 'json']);
  });

  it('an i64 primary key beyond 2^53: point reads, ranges, updates and joins keep neighbours apart', async () => {
    await env(`CREATE TABLE big(id INTEGER PRIMARY KEY, v TEXT)`);
    await env(`INSERT INTO big VALUES (9007199254740992, 'a'), (9007199254740993, 'b'), (9223372036854775807, 'c'), (-9223372036854775808, 'd')`);
    expect((await env(`SELECT v FROM big WHERE id = 9007199254740993`)).rows).toEqual([{ v: 'b' }]);
    expect((await env(`SELECT v FROM big WHERE id = $1`, [9007199254740993n])).rows).toEqual([{ v: 'b' }]);
    expect((await env(`SELECT id FROM big WHERE id > 9007199254740992 ORDER BY id`)).rows).toEqual([{ id: 9007199254740993n }, { id: 9223372036854775807n }]);
    await env(`UPDATE big SET v = 'B' WHERE id = 9007199254740993`);
    expect((await env(`SELECT id, v FROM big ORDER BY id`)).rows).toEqual([
      { id: -9223372036854775808n, v: 'd' }, { id: 9007199254740992n, v: 'a' }, { id: 9007199254740993n, v: 'B' }, { id: 9223372036854775807n, v: 'c' },
    ]);
    expect((await env(`SELECT a.v AS x, b.v AS y FROM big a JOIN big b ON a.id = b.id + 1`)).rows).toEqual([{ x: 'B', y: 'a' }]);
  });
});
