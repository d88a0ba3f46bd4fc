/**
 * The table cache patched from committed frames (exec/table-patch.ts), differentially: random
 * writes (inserts, updates, deletes, pk moves, composite keys, nulls, json and vector cells,
 * several changes a frame) interleaved with reads, over a real classic-level store on disk. After
 * each step the patched entry must equal what a cold full read of the same snapshot decodes (its
 * rows, pk map, key arrays, secondary orders, byte estimate), SQL must answer as it does from a
 * cold cache, and an entry a query already holds must keep its own snapshot.
 */
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import fc from 'fast-check';
import type { JsonValue, Row } from '@mmdb/core';
import { TenantStore, type Change, type Snapshot } from '@mmdb/storage';
import { SqlEngine, formatResult } from '@mmdb/sql';
import { pkKeyOf, topByScan, topRows, type CachedTable } from '../src/exec/table-cache';
import { tableBytes } from '../src/exec/cache-budget';
import { asStored, comparePk } from '../src/exec/pk-order';
import { sqlTable } from '../src/catalog';
import { readTable } from '../src/run/leaves';
import { encodeTuple } from '@mmdb/storage';
import { compareValues } from '../src/values';

jest.setTimeout(240_000);

const A = `namespace = "p"
table = "a"
primary_key = ["id"]
[[columns]]
name = "id"
ty = "i64"
[[columns]]
name = "s"
ty = "str"
[[columns]]
name = "x"
ty = "f64"
[[columns]]
name = "j"
ty = "json"
[[columns]]
name = "emb"
ty = "vector"
dim = 3
[[indexes]]
name = "by_x"
columns = ["x"]
[[indexes]]
name = "by_s"
columns = ["s"]
`;
const B = `namespace = "p"
table = "b"
primary_key = ["k", "n"]
[[columns]]
name = "k"
ty = "str"
[[columns]]
name = "n"
ty = "i64"
[[columns]]
name = "v"
ty = "str"
[[columns]]
name = "j"
ty = "json"
[[indexes]]
name = "by_v"
columns = ["v"]
`;
const C = `namespace = "p"
table = "c"
primary_key = ["id"]
[[columns]]
name = "id"
ty = "str"
[[columns]]
name = "w"
ty = "f64"
`;

const canon = (v: unknown) => JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? `${x}n` : ArrayBuffer.isView(x) ? Array.from(x as Float32Array) : x));

// ---- generated writes ----
const keyText = fc.constantFrom('a', 'b', 'ab', 'B', 'é', '\u{1F600}', '\uFFFD', 'z\u0000', '', 'k1', 'k10', 'k2');
const json = fc.oneof(fc.constant(null), fc.integer({ min: -5, max: 5 }), fc.string({ maxLength: 4 }), fc.constant({ b: 1, a: [2, null] }), fc.constant([1, 'x']));
const text = fc.oneof(fc.constant(null), fc.constantFrom('x', 'y', 'Z', 'é', ''), fc.string({ maxLength: 3 }));
const num = fc.oneof(fc.constant(null), fc.integer({ min: -3, max: 3 }), fc.double({ min: -1e6, max: 1e6, noNaN: true, noDefaultInfinity: true }));
const vec = fc.oneof(fc.constant(null), fc.array(fc.float({ min: -2, max: 2, noNaN: true, noDefaultInfinity: true }), { minLength: 3, maxLength: 3 }));

const rowA = fc.record({ id: fc.integer({ min: -20, max: 60 }), s: text, x: num, j: json, emb: vec });
const rowB = fc.record({ k: keyText, n: fc.integer({ min: -2, max: 3 }), v: text, j: json });
const rowC = fc.record({ id: keyText, w: num });

const strip = (r: Record<string, unknown>): Row => Object.fromEntries(Object.entries(r).filter(([, v]) => v !== null)) as Row;

type Op =
  | { kind: 'frame'; changes: Change[] }
  | { kind: 'sql'; q: string }
  | { kind: 'check' }
  | { kind: 'hold' }
  | { kind: 'snap' }
  | { kind: 'old' };

const put = (schema: string, r: Record<string, unknown>): Change => ({ op: 'put', schema, row: strip(r) });
const change = fc.oneof(
  rowA.map((r) => put('p.a', r)),
  rowB.map((r) => put('p.b', r)),
  rowC.map((r) => put('p.c', r)),
  fc.integer({ min: -20, max: 60 }).map((id): Change => ({ op: 'delete', schema: 'p.a', pk: [id] })),
  fc.tuple(keyText, fc.integer({ min: -2, max: 3 })).map(([k, n]): Change => ({ op: 'delete', schema: 'p.b', pk: [k, n] })),
  keyText.map((id): Change => ({ op: 'delete', schema: 'p.c', pk: [id] })),
);
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.array(change, { minLength: 1, maxLength: 6 }).map((changes) => ({ kind: 'frame' as const, changes })) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      // pk moves, many rows a statement, nulls
      'UPDATE p.a SET id = id + 100 WHERE id % 3 = 0 AND id < 40',
      'UPDATE p.a SET id = id - 100 WHERE id >= 100',
      'UPDATE p.a SET x = NULL, s = \'moved\' WHERE id % 2 = 0',
      'DELETE FROM p.a WHERE x > 0',
      "UPDATE p.b SET n = n + 10 WHERE k > 'a'",
      "DELETE FROM p.b WHERE v IS NULL",
      "UPDATE p.c SET w = 1.5 WHERE id < 'b'",
    ).map((q) => ({ kind: 'sql' as const, q })),
  },
  { weight: 3, arbitrary: fc.constant({ kind: 'check' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'hold' as const }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'snap' as const }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'old' as const }) },
);

// ---- the comparison ----
const SCHEMAS = ['p.a', 'p.b', 'p.c'];

interface Held { e: CachedTable; snap: Snapshot; rows: string }

async function checkEntry(store: TenantStore, sql: SqlEngine, snap: Snapshot, id: string, written: Set<string>): Promise<CachedTable | undefined> {
  const t = sqlTable(store, store.manifest(id)!);
  const cold = await readTable(snap, t, () => undefined);
  let e = sql.tables.lookup(snap, t);
  if (!e) {
    const read = await sql.tables.rows(snap, t, () => readTable(snap, t, () => undefined));
    e = sql.tables.lookup(snap, t);
    // an older snapshot than the cached versions: read, not admitted
    if (!e) {
      expect(canon(read)).toBe(canon(cold.rows));
      return undefined;
    }
  }
  expect(e.lsn).toBe(snap.tableLsn(id));
  expect(canon(e.rows)).toBe(canon(cold.rows));
  // the pk map: every stored key to its row (the same tuple object as in rows), deleted keys to nothing
  const present = new Set<string>();
  cold.pks.forEach((pk, i) => {
    expect(e!.byPk.get(pkKeyOf(pk))).toBe(e!.rows[i]);
    present.add(canon(pkKeyOf(pk)));
  });
  for (const w of written) if (w.startsWith(`${id}|`) && !present.has(w.slice(id.length + 1))) expect(e.byPk.get(JSON.parse(w.slice(id.length + 1)))).toBeUndefined();
  if (e.pkNums) expect(Array.from(e.pkNums)).toEqual(cold.pks.map((p) => p[0]));
  else expect(e.keys).toEqual(cold.pks.map(pkKeyOf));
  // keys in stored order: comparePk agrees with the scan
  for (let i = 1; i < cold.pks.length; i++) expect(comparePk(cold.pks[i - 1], cold.pks[i])).toBeLessThan(0);
  // secondary orders: asked for twice so they are built, then carried by later patches
  for (const ix of t.manifest.indexes) {
    const col = t.manifest.columns.findIndex((c) => c.name === ix.columns[0]);
    for (const [n, rev] of [[3, false], [5, true]] as const) {
      const want = canon(topByScan(cold.rows, col, n, rev));
      expect(canon(topRows(e, ix.name, col, n, rev))).toBe(want);
      expect(canon(topRows(e, ix.name, col, n, rev))).toBe(want);
    }
    // the order itself (built here or carried by patches) is the one a fresh sort makes
    const order = Array.from({ length: cold.rows.length }, (_, i) => i).sort((a, b) => compareValues(cold.rows[a][col], cold.rows[b][col]) || a - b);
    expect(Array.from(e.orders.get(ix.name)!)).toEqual(order);
  }
  // bytes: the live rows as an admission estimates them (exact under SAMPLE_ROWS rows), plus what compaction frees
  const live = tableBytes(cold.rows, cold.pks, t.manifest.indexes.length);
  expect(Math.abs(e.bytes - e.retained - live)).toBeLessThanOrEqual(cold.rows.length + 1);
  return e;
}

const QUERIES = [
  'SELECT * FROM p.a ORDER BY id',
  'SELECT id, x FROM p.a ORDER BY x LIMIT 4',
  'SELECT id, s FROM p.a ORDER BY s DESC LIMIT 3',
  'SELECT id, j, emb FROM p.a WHERE id > 5 AND id <= 40 ORDER BY id',
  'SELECT s FROM p.a WHERE id = 7',
  'SELECT * FROM p.b ORDER BY k, n',
  "SELECT v, j FROM p.b WHERE k = 'ab' AND n = 1",
  'SELECT v, count(*) FROM p.b GROUP BY v ORDER BY v',
  'SELECT * FROM p.c ORDER BY id',
  'SELECT b.k, b.n, c.w FROM p.b b JOIN p.c c ON c.id = b.k ORDER BY 1, 2',
];

const answer = async (sql: SqlEngine, q: string) => canon((formatResult((await sql.run(q))[0], 'arrays') as { rows: unknown[] }).rows);

/** A fresh store on disk with these manifests, and an engine over it, for one test or run. */
async function withStore(manifests: string[], body: (store: TenantStore, sql: SqlEngine) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'sql-patch-'));
  const store = await TenantStore.open({ dir, sync: false });
  try {
    for (const m of manifests) await store.registerSchema(m);
    await body(store, new SqlEngine(store));
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function run(ops: Op[]): Promise<void> {
  await withStore([A, B, C], async (store, sql) => {
    // new base pk maps built after a few changed keys, two keys a step: every run meets rebuilds in progress
    sql.tables.compactAt = () => 3;
    sql.tables.rebaseStep = () => 2;
    const written = new Set<string>();
    const held: Held[] = [];
    const idle: Snapshot[] = [];
    for (const o of ops) {
      if (o.kind === 'frame') {
        for (const c of o.changes) {
          const pk = c.op === 'put' ? store.manifest(c.schema)!.primary_key.map((k) => (c.row[k] ?? null) as JsonValue) : c.op === 'delete' ? c.pk : [];
          if ('schema' in c) written.add(`${c.schema}|${canon(pkKeyOf(asStored(pk)))}`);
        }
        // a change refused (e.g. a null pk column) refuses its frame: nothing written
        await store.commit({ changes: o.changes }).catch(() => undefined);
      } else if (o.kind === 'sql') {
        await sql.run(o.q, { deleteMode: 'execute' }).catch(() => undefined);
      } else if (o.kind === 'hold') {
        const snap = store.snapshot();
        const e = await checkEntry(store, sql, snap, 'p.a', written);
        if (e) held.push({ e, snap, rows: canon(e.rows) });
        else await snap.release();
      } else if (o.kind === 'snap') {
        // a snapshot no read has used yet (a query that took it and has not read)
        idle.push(store.snapshot());
      } else if (o.kind === 'old') {
        // a read on a snapshot older than the cached version (from the previous version, patched forward, or read)
        const snap = idle.shift();
        if (snap) {
          for (const id of SCHEMAS) await checkEntry(store, sql, snap, id, written);
          await snap.release();
        }
      } else {
        const snap = store.snapshot();
        try {
          for (const id of SCHEMAS) await checkEntry(store, sql, snap, id, written);
        } finally {
          await snap.release();
        }
      }
    }
    // the byte count never drifts: evicting every entry (and the versions kept beside) leaves 0
    sql.tables.setBudgetBytes(0);
    expect(sql.tables.stats()).toMatchObject({ bytes: 0, rows: 0 });
    sql.tables.setBudgetBytes(Infinity);
    // SQL from the patched cache answers as from a cold one (same snapshot: no write between)
    const warm: string[] = [];
    for (const q of QUERIES) warm.push(await answer(sql, q));
    sql.tables.clear();
    for (let i = 0; i < QUERIES.length; i++) expect([QUERIES[i], await answer(sql, QUERIES[i])]).toEqual([QUERIES[i], warm[i]]);
    // entries held while writes landed: unchanged, and still their snapshot's rows
    for (const h of held) {
      expect(canon(h.e.rows)).toBe(h.rows);
      const t = h.e.table;
      const cold = await readTable(h.snap, t, () => undefined);
      expect(canon(h.e.rows)).toBe(canon(cold.rows));
      cold.pks.forEach((pk, i) => expect(h.e.byPk.get(pkKeyOf(pk))).toBe(h.e.rows[i]));
      await h.snap.release();
    }
    for (const s of idle) await s.release();
    await sql.tables.settled();
    patched += sql.tables.stats().patches;
  });
}
let patched = 0;

describe('the table cache patched by writes', () => {
  it('equals a cold read of the same snapshot after any interleaving of writes and reads', async () => {
    await fc.assert(fc.asyncProperty(fc.array(op, { minLength: 4, maxLength: 40 }), run), { numRuns: Number(process.env.PATCH_RUNS ?? 100) });
    // the checks met entries patched forward, not only fresh loads
    expect(patched).toBeGreaterThan(20);
  });

  it('patches instead of reloading, and reloads on a manifest change or past the journal cap', async () => {
    await withStore([C], async (store, sql) => {
    await store.commit({ changes: Array.from({ length: 100 }, (_, i) => put('p.c', { id: `k${i}`, w: i })) });
    const count = async () => (await sql.run('SELECT count(*), sum(w) FROM p.c'))[0];
    await count();
    const s0 = sql.tables.stats();
    await store.commit({ changes: [put('p.c', { id: 'k5', w: -1 }), { op: 'delete', schema: 'p.c', pk: ['k7'] }, put('p.c', { id: 'new', w: 1000 })] });
    expect(formatResult(await count(), 'arrays')).toMatchObject({ rows: [[100, 4950 - 5 - 1 - 7 + 1000]] });
    const s1 = sql.tables.stats();
    expect(s1).toMatchObject({ misses: s0.misses, patches: s0.patches + 1, patchedRows: s0.patchedRows + 3 });
    // a manifest change: the layout is new, the table is read whole
    await store.registerSchema(C.replace('ty = "f64"\n', 'ty = "f64"\n[[indexes]]\nname = "by_w"\ncolumns = ["w"]\n'));
    await count();
    expect(sql.tables.stats().misses).toBe(s1.misses + 1);
    // more changes than the journal keeps (1024 + a quarter of the rows): read whole again
    const s2 = sql.tables.stats();
    for (let i = 0; i < 3; i++) await store.commit({ changes: Array.from({ length: 400 }, (_, j) => put('p.c', { id: `m${i}-${j}`, w: 1 })) });
    expect(formatResult(await count(), 'arrays')).toMatchObject({ rows: [[1300, expect.anything()]] });
    expect(sql.tables.stats()).toMatchObject({ misses: s2.misses + 1, patches: s2.patches });
    await sql.tables.settled();
    });
  });

  it('folds the pk map delta into a new base once it passes 1024 + rows/8 keys, freeing what the old base kept', async () => {
    await withStore([A], async (store, sql) => {
    await store.commit({ changes: Array.from({ length: 1200 }, (_, i) => put('p.a', { id: i, s: `s${i % 13}`, x: i })) });
    await sql.run('SELECT count(*) FROM p.a');
    const deltas: number[] = [];
    for (let k = 0; k < 4; k++) {
      await store.commit({ changes: Array.from({ length: 300 }, (_, j) => put('p.a', { id: k * 300 + j, s: 'u', x: -j })) });
      await sql.run('SELECT count(*) FROM p.a');
      const snap = store.snapshot();
      const e = (await checkEntry(store, sql, snap, 'p.a', new Set()))!;
      deltas.push(e.byPk.delta?.size ?? 0);
      if (k === 3) expect(e.retained).toBe(0);
      await snap.release();
    }
    // 300, 600, 900 changed keys over the shared base, then 1,200 > 1,174: one map again
    expect(deltas).toEqual([300, 600, 900, 0]);
    });
  });

  it('builds the new base map in steps, taking each patch\'s changes of keys already copied (the last copied one too)', async () => {
    await withStore([C], async (store, sql) => {
      sql.tables.compactAt = () => 0;
      sql.tables.rebaseStep = () => 3;
      await store.commit({ changes: Array.from({ length: 10 }, (_, i) => put('p.c', { id: `k${i}`, w: i })) });
      await sql.run('SELECT count(*) FROM p.c');
      // each write is patched in by the next read, which copies the next 3 keys: k0-k2, k3-k5, k6-k8, k9
      for (const ids of [['k1'], ['k2'], ['k5', 'k9', 'k0'], ['k8', 'k3']]) {
        await store.commit({ changes: ids.map((id, j) => put('p.c', { id, w: 100 + j })) });
        await sql.run('SELECT count(*) FROM p.c');
        const snap = store.snapshot();
        await checkEntry(store, sql, snap, 'p.c', new Set());
        await snap.release();
      }
      const snap = store.snapshot();
      const e = (await checkEntry(store, sql, snap, 'p.c', new Set()))!;
      expect(e.byPk.delta).toBeNull();
      expect(e.retained).toBe(0);
      await snap.release();
    });
  });

  it('drops an entry a patch grew past the byte cap (the query still reads that version), and keeps the count right', async () => {
    await withStore([C], async (store, sql) => {
    await store.commit({ changes: Array.from({ length: 100 }, (_, i) => put('p.c', { id: `k${i}`, w: i })) });
    await sql.run('SELECT count(*) FROM p.c');
    const fits = sql.tables.stats().bytes;
    sql.tables.setBudgetBytes(Math.ceil(fits * 1.2));
    expect(sql.tables.stats().tables).toBe(1);
    await store.commit({ changes: Array.from({ length: 50 }, (_, i) => put('p.c', { id: `n${i}`, w: 1 })) });
    expect(formatResult((await sql.run('SELECT count(*), sum(w) FROM p.c'))[0], 'arrays')).toMatchObject({ rows: [[150, 4950 + 50]] });
    expect(sql.tables.stats()).toMatchObject({ tables: 0, bytes: 0, rows: 0, patches: 1 });
    sql.tables.setBudgetBytes(Infinity);
    await sql.tables.settled();
    });
  });

  it('keeps an in-flight read on its snapshot while writes land and later reads patch the entry', async () => {
    await withStore([A], async (store, sql) => {
    await store.commit({ changes: Array.from({ length: 50 }, (_, i) => put('p.a', { id: i, s: `s${i % 7}`, x: i * 1.5 })) });
    await sql.run('SELECT count(*) FROM p.a');
    // a scan that stops half way, as a query iterating its leaf rows between turns would
    const snap = store.snapshot();
    const t = sqlTable(store, store.manifest('p.a')!);
    const e = sql.tables.lookup(snap, t)!;
    const before = canon(e.rows);
    const seen: unknown[] = [];
    const it = e.rows[Symbol.iterator]();
    for (let i = 0; i < 25; i++) seen.push(it.next().value);
    for (let k = 0; k < 5; k++) {
      await store.commit({ changes: [put('p.a', { id: k * 10, s: 'new', x: -k }), { op: 'delete', schema: 'p.a', pk: [k * 10 + 1] }, put('p.a', { id: 100 + k, x: 0 })] });
      await sql.run('SELECT count(*) FROM p.a WHERE x < 0');
    }
    for (let r = it.next(); !r.done; r = it.next()) seen.push(r.value);
    expect(canon(seen)).toBe(before);
    expect(canon(e.rows)).toBe(canon((await readTable(snap, t, () => undefined)).rows));
    expect(e.byPk.get(1)).toBe(e.rows[1]);
    expect(sql.tables.stats().patches).toBeGreaterThanOrEqual(5);
    // snapshots older than the cached version, taken before a query patched it: the previous
    // version as it is (same LSN) or patched forward to theirs, never a read of the table
    const exact = store.snapshot();
    await store.commit({ changes: [put('p.a', { id: 7, s: 'later' })] });
    const mid = store.snapshot();
    await store.commit({ changes: [{ op: 'delete', schema: 'p.a', pk: [8] }] });
    const misses = sql.tables.stats().misses;
    await sql.run('SELECT count(*) FROM p.a');
    const patches = sql.tables.stats().patches;
    for (const [s, more] of [[exact, 0], [mid, 1]] as const) {
      const m = sql.tables.lookup(s, t)!;
      expect(m).toBeDefined();
      expect(canon(m.rows)).toBe(canon((await readTable(s, t, () => undefined)).rows));
      expect(sql.tables.stats()).toMatchObject({ misses, patches: patches + more });
      await s.release();
    }
    // the current entry has the writes
    expect(formatResult((await sql.run('SELECT count(*) FROM p.a'))[0], 'arrays')).toMatchObject({ rows: [[49]] });
    await snap.release();
    });
  });
});

describe('a query that scans tables, while a commit group is in flight', () => {
  it('waits for the group to apply (a stable snapshot) rather than reading the tables whole, for up to 20 ms', async () => {
    await withStore([C], async (store, sql) => {
    await store.commit({ changes: Array.from({ length: 30 }, (_, i) => put('p.c', { id: `k${i}`, w: i })) });
    const real = store.snapshot.bind(store);
    // the store's own answer, reporting itself unstable (taken between a group's write and its apply)
    const unstable = () => { const s = real(); return Object.create(s, { stable: { value: false } }) as Snapshot; };
    // the snapshot a query asks for (TenantStore.readSnapshot)
    const spy = jest.spyOn(store, 'readSnapshot');
    spy.mockImplementationOnce(unstable).mockImplementationOnce(unstable);
    expect(formatResult((await sql.run('SELECT count(*), sum(w) FROM p.c'))[0], 'arrays')).toMatchObject({ rows: [[30, 435]] });
    expect(sql.tables.stats()).toMatchObject({ unstableReads: 0, tables: 1 });
    // a point read does not wait (it reads one key of its snapshot, no cache involved)
    spy.mockImplementationOnce(unstable);
    expect(formatResult((await sql.run("SELECT w FROM p.c WHERE id = 'k3'"))[0], 'arrays')).toMatchObject({ rows: [[3]] });
    // a group that stays in flight: after the wait, the unstable snapshot is read whole (not cached)
    sql.tables.clear();
    spy.mockImplementation(unstable);
    expect(formatResult((await sql.run('SELECT count(*), sum(w) FROM p.c'))[0], 'arrays')).toMatchObject({ rows: [[30, 435]] });
    expect(sql.tables.stats()).toMatchObject({ unstableReads: 1, tables: 0 });
    spy.mockRestore();
    });
  });
});

describe('comparePk', () => {
  const part = fc.oneof(
    fc.constant(null), fc.boolean(), fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).filter((b) => b > 2n ** 53n || b < -(2n ** 53n)),
    fc.string({ unit: 'binary', maxLength: 4 }), fc.constantFrom('a\u0000', 'a', '\uFFFF', '\u{10000}', '\uD800'),
    fc.constantFrom<JsonValue>({ a: 1 }, [1, 2], { b: [null] }),
  );
  it('orders stored pk tuples as their key bytes', () => {
    fc.assert(fc.property(fc.array(part, { minLength: 1, maxLength: 3 }), fc.array(part, { minLength: 1, maxLength: 3 }), (a, b) => {
      const x = asStored(a);
      const y = asStored(b);
      expect(Math.sign(comparePk(x, y))).toBe(Math.sign(Buffer.compare(encodeTuple(x), encodeTuple(y))));
    }), { numRuns: 3000 });
  });
});
