/** The decoded-table cache over a real TenantStore: reuse per table LSN, snapshot consistency, budget. */
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { TenantStore, type Snapshot } from '@mmdb/storage';
import { SqlEngine, formatResult } from '@mmdb/sql';
import { TableCache } from '../src/exec/table-cache';
import { CachePool } from '../src/exec/cache-budget';
import { sqlTable } from '../src/catalog';
import { toTuple } from '../src/engine';

let dir: string;
let store: TenantStore;
let sql: SqlEngine;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sql-cache-'));
  store = await TenantStore.open({ dir, sync: false });
  sql = new SqlEngine(store);
  await sql.run('CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT); CREATE TABLE u(id INTEGER PRIMARY KEY, w INTEGER)');
  await sql.run(`INSERT INTO t VALUES (1,'a'),(2,'b'),(3,'c')`);
  await sql.run('INSERT INTO u VALUES (1,10),(2,20),(3,30)');
});

afterEach(async () => {
  await sql.tables.settled();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const rows = async (q: string) => {
  const r = await sql.run(q, { deleteMode: 'execute' });
  return (formatResult(r[r.length - 1], 'arrays') as { rows: unknown[] }).rows;
};

/** The same snapshot, reporting itself unstable (as one taken while a commit group is being applied). */
const unstable = (s: Snapshot): Snapshot => Object.create(s, { stable: { value: false } }) as Snapshot;

async function readAll(s: Snapshot, id: string) {
  const t = sqlTable(store, store.manifest(id)!);
  const out = { rows: [] as ReturnType<typeof toTuple>[], pks: [] as unknown[][] };
  for await (const b of s.scanRows(id)) for (const r of b) { out.rows.push(toTuple(t, r)); out.pks.push(r.pk); }
  return out;
}

describe('TableCache', () => {
  it('reuses decoded rows while the table LSN is unchanged, and patches them with a write instead of reloading', async () => {
    const c = sql.tables;
    expect(await rows('SELECT v FROM t ORDER BY id')).toEqual([['a'], ['b'], ['c']]);
    const after1 = c.stats();
    expect(await rows('SELECT v FROM t ORDER BY id DESC')).toEqual([['c'], ['b'], ['a']]);
    expect(c.stats().hits).toBeGreaterThan(after1.hits);
    expect(c.stats().misses).toBe(after1.misses);
    // a write to t changes its table LSN: the next read patches the entry with it (no decode of the table)
    await sql.run(`INSERT INTO t VALUES (4,'d')`);
    expect(await rows('SELECT count(*) FROM t')).toEqual([[4]]);
    expect(c.stats().misses).toBe(after1.misses);
    expect(c.stats().patches).toBe(after1.patches + 1);
    // a write to another table leaves t's entry valid
    await sql.run('INSERT INTO u VALUES (4,40)');
    const before = c.stats();
    expect(await rows('SELECT count(*) FROM t')).toEqual([[4]]);
    expect(c.stats().hits).toBe(before.hits + 1);
    // pk get and pk range are served from the cached entry and agree with the store
    expect(await rows('SELECT v FROM t WHERE id = 4')).toEqual([['d']]);
    expect(await rows('SELECT v FROM t WHERE id > 1 AND id <= 3')).toEqual([['b'], ['c']]);
    expect(await rows('SELECT v FROM t WHERE id >= 5')).toEqual([]);
  });

  it('keeps snapshot consistency: an older snapshot never sees rows cached from a newer one', async () => {
    const id = 'main.t';
    const old = store.snapshot();
    await sql.run(`UPDATE t SET v = 'B' WHERE id = 2`);
    const cur = store.snapshot();
    try {
      expect(old.stable && cur.stable).toBe(true);
      expect(cur.tableLsn(id)).toBeGreaterThan(old.tableLsn(id));
      const c = new TableCache(100);
      const t = sqlTable(store, store.manifest(id)!);
      const fresh = await c.rows(cur, t, () => readAll(cur, id));
      expect(fresh.map((r) => r[1])).toEqual(['a', 'B', 'c']);
      expect(c.lookup(old, t)).toBeUndefined();
      const past = await c.rows(old, t, () => readAll(old, id));
      expect(past.map((r) => r[1])).toEqual(['a', 'b', 'c']);
    } finally {
      await old.release();
      await cur.release();
    }
  });

  it('never caches what an unstable snapshot read', async () => {
    const s = store.snapshot();
    try {
      const c = new TableCache(100);
      const t = sqlTable(store, store.manifest('main.t')!);
      const u = unstable(s);
      expect((await c.rows(u, t, () => readAll(u, 'main.t'))).length).toBe(3);
      expect(c.stats().tables).toBe(0);
      expect(c.lookup(u, t)).toBeUndefined();
      await c.rows(s, t, () => readAll(s, 'main.t'));
      expect(c.lookup(s, t)).toBeDefined();
      expect(c.lookup(u, t)).toBeUndefined();
    } finally {
      await s.release();
    }
  });

  it("never caches a transaction's own writes", async () => {
    const r = await sql.run(`BEGIN; INSERT INTO t VALUES (9,'z'); SELECT count(*) FROM t; ROLLBACK;`);
    expect((formatResult(r[2], 'arrays') as { rows: unknown[] }).rows).toEqual([[4]]);
    expect(await rows('SELECT count(*) FROM t')).toEqual([[3]]);
    expect(await rows('SELECT count(*) FROM t')).toEqual([[3]]);
  });

  it('evicts the least recently used table past its row budget, and skips tables larger than it', async () => {
    const s = store.snapshot();
    try {
      const c = new TableCache(5);
      const t = sqlTable(store, store.manifest('main.t')!);
      const u = sqlTable(store, store.manifest('main.u')!);
      // u first: its rows (two small integers) are smaller in bytes than t's (an integer and a
      // string; small integers are shared bigints), and a hot table is only evicted for a table
      // at least as large (size-aware admission), so the least recently used one here is u
      await c.rows(s, u, () => readAll(s, 'main.u'));
      await c.rows(s, t, () => readAll(s, 'main.t'));
      expect(c.stats()).toMatchObject({ tables: 1, rows: 3, evictions: 1 });
      expect(c.lookup(s, u)).toBeUndefined();
      expect(c.lookup(s, t)).toBeDefined();
      const tiny = new TableCache(2);
      expect((await tiny.rows(s, t, () => readAll(s, 'main.t'))).length).toBe(3);
      expect(tiny.stats().tables).toBe(0);
    } finally {
      await s.release();
    }
  });

  it('does not admit a table by evicting a larger table in use: the smaller one is read from storage instead', async () => {
    await sql.run(`INSERT INTO t VALUES (4,'d'),(5,'e')`);
    const s = store.snapshot();
    try {
      const c = new TableCache(6);
      const t = sqlTable(store, store.manifest('main.t')!);
      const u = sqlTable(store, store.manifest('main.u')!);
      let reads = 0;
      const counted = (id: string) => () => (reads++, readAll(s, id));
      expect((await c.rows(s, t, counted('main.t'))).length).toBe(5);
      // u (3 rows) would evict t (5 rows, just used): refused, answered from its own read (once)
      expect((await c.rows(s, u, counted('main.u'))).map((r) => r[1])).toEqual([10n, 20n, 30n]);
      expect(reads).toBe(2);
      expect(c.stats()).toMatchObject({ tables: 1, rows: 5, evictions: 0, refusals: 1 });
      expect(c.lookup(s, t)).toBeDefined();
      // every later query over both reads only the small one again (before: each evicted the other)
      expect((await c.rows(s, t, counted('main.t'))).length).toBe(5);
      expect((await c.rows(s, u, counted('main.u'))).length).toBe(3);
      expect(reads).toBe(3);
    } finally {
      await s.release();
    }
  });

  it('loads a table read twice at the same LSN in the background, so point reads hit', async () => {
    await rows('SELECT w FROM u WHERE id = 2');
    await rows('SELECT w FROM u WHERE id = 3');
    await sql.tables.settled();
    const before = sql.tables.stats();
    expect(await rows('SELECT w FROM u WHERE id = 2')).toEqual([[20]]);
    expect(sql.tables.stats().hits).toBe(before.hits + 1);
  });
});

describe('joins on a cached table primary key', () => {
  it('probe the cached pk map instead of hashing the table, with the answers of a hash join', async () => {
    await sql.run(`INSERT INTO t VALUES ${Array.from({ length: 200 }, (_, i) => `(${i + 10}, 'v${i % 7}')`).join(', ')}`);
    await sql.run(`INSERT INTO u VALUES ${Array.from({ length: 50 }, (_, i) => `(${i * 5 + 10}, ${i % 3 === 0 ? 'NULL' : i})`).join(', ')}`);
    await rows('SELECT count(*) FROM t');
    await rows('SELECT count(*) FROM t'); // read twice at one LSN: the cache loads t in the background
    await sql.tables.settled();
    const cases = [
      // few rows on one side (a LIMIT subquery), the cached table's pk on the other, both orders
      'SELECT s.id, r.v FROM (SELECT w AS id FROM u WHERE w IS NOT NULL ORDER BY id LIMIT 5) s JOIN t r ON r.id = s.id + 10 ORDER BY 1',
      'SELECT r.v, s.id FROM t r JOIN (SELECT id FROM u ORDER BY id DESC LIMIT 4) s ON s.id = r.id ORDER BY 2',
      'SELECT s.id, r.v FROM (SELECT id FROM u ORDER BY id LIMIT 6) s LEFT JOIN t r ON r.id = s.id * 3 ORDER BY 1',
      'SELECT s.id FROM (SELECT id FROM u ORDER BY id LIMIT 8) s WHERE EXISTS (SELECT 1 FROM t r WHERE r.id = s.id AND r.v > \'v3\') ORDER BY 1',
      'SELECT s.id FROM (SELECT id FROM u ORDER BY id LIMIT 8) s WHERE NOT EXISTS (SELECT 1 FROM t r WHERE r.id = s.id AND r.v > \'v3\') ORDER BY 1',
      "SELECT s.id, r.v FROM (SELECT id FROM u ORDER BY id LIMIT 9) s JOIN t r ON r.id = s.id AND r.v <> 'v2' ORDER BY 1",
      'SELECT s.id, r.v FROM (SELECT w AS id FROM u ORDER BY id LIMIT 12) s LEFT JOIN t r ON r.id = s.id ORDER BY 1',
    ];
    const probes: string[] = [];
    for (const q of cases) {
      const probed = await sql.run(q, { explain: true });
      const tree = JSON.stringify((probed[0] as { explain: unknown }).explain);
      if (tree.includes('primary-key probe')) probes.push(q);
      // the same query with the hash join forced to hash (no cached entry: a fresh engine's first read)
      const fresh = new SqlEngine(store);
      const want = (formatResult((await fresh.run(q))[0], 'arrays') as { rows: unknown[] }).rows;
      expect([q, await rows(q)]).toEqual([q, want]);
      await fresh.tables.settled();
    }
    // the hash joins on the whole pk probe (inner in both orders, left); an expression key is a nested loop
    expect(probes).toEqual([cases[1], cases[5], cases[6]]);
  });
});

describe('the byte budget', () => {
  const wide = (n: number, from: number, width: number) =>
    Array.from({ length: n }, (_, i) => `(${from + i}, '${String.fromCharCode(97 + (i % 26)).repeat(width)}', ${i * 1.5})`).join(', ');

  beforeEach(async () => {
    await sql.run('CREATE TABLE w(id INTEGER PRIMARY KEY, s TEXT, x REAL); CREATE TABLE z(id INTEGER PRIMARY KEY, s TEXT, x REAL)');
    await sql.run(`INSERT INTO w VALUES ${wide(300, 1, 400)}`);
    await sql.run(`INSERT INTO z VALUES ${wide(300, 1, 40)}`);
  });

  it('estimates what rows hold: wider rows cost more, a sample stands for the table', async () => {
    const s = store.snapshot();
    try {
      const c = new TableCache(1_000_000);
      const w = sqlTable(store, store.manifest('main.w')!);
      const z = sqlTable(store, store.manifest('main.z')!);
      await c.rows(s, w, () => readAll(s, 'main.w'));
      const wBytes = c.stats().bytes;
      await c.rows(s, z, () => readAll(s, 'main.z'));
      const zBytes = c.stats().bytes - wBytes;
      // 300 rows of 400 one-byte chars: at least the characters; 40-char rows: far less
      expect(wBytes).toBeGreaterThan(300 * 400);
      expect(wBytes).toBeLessThan(300 * (400 + 400));
      expect(zBytes).toBeLessThan(wBytes / 2);
      expect(zBytes).toBeGreaterThan(300 * 40);
    } finally {
      await s.release();
    }
  });

  it('evicts by bytes, not only by rows, and never keeps a table over the byte budget', async () => {
    const s = store.snapshot();
    try {
      const probe = new TableCache(1_000_000);
      const w = sqlTable(store, store.manifest('main.w')!);
      const z = sqlTable(store, store.manifest('main.z')!);
      const t = sqlTable(store, store.manifest('main.t')!);
      await probe.rows(s, w, () => readAll(s, 'main.w'));
      const wBytes = probe.stats().bytes;
      // room for w alone and not one more row of any table (rows are far from the row budget)
      const c = new TableCache(1_000_000, { bytes: wBytes + 8 });
      await c.rows(s, z, () => readAll(s, 'main.z'));
      await c.rows(s, t, () => readAll(s, 'main.t'));
      expect(c.stats()).toMatchObject({ tables: 2, evictions: 0 });
      await new Promise((r) => setTimeout(r, 5));
      // w is larger than z and t: admitting it evicts them (least recently used first), bytes stay in budget
      expect((await c.rows(s, w, () => readAll(s, 'main.w'))).length).toBe(300);
      expect(c.stats()).toMatchObject({ tables: 1, evictions: 2 });
      expect(c.stats().bytes).toBeLessThanOrEqual(c.stats().budgetBytes);
      // a table over the whole byte budget is read but not kept
      const tiny = new TableCache(1_000_000, { bytes: Math.floor(wBytes / 2) });
      expect((await tiny.rows(s, w, () => readAll(s, 'main.w'))).length).toBe(300);
      expect(tiny.stats()).toMatchObject({ tables: 0, bytes: 0 });
      // lowering the cap evicts at once
      c.setBudgetBytes(1);
      expect(c.stats()).toMatchObject({ tables: 0, bytes: 0 });
    } finally {
      await s.release();
    }
  });

  it("keeps every store's cache together within the process pool, least recently used of any store first", async () => {
    const dir2 = mkdtempSync(join(tmpdir(), 'sql-cache-'));
    const store2 = await TenantStore.open({ dir: dir2, sync: false });
    const s = store.snapshot();
    try {
      const sql2 = new SqlEngine(store2);
      await sql2.run('CREATE TABLE w(id INTEGER PRIMARY KEY, s TEXT, x REAL)');
      await sql2.run(`INSERT INTO w VALUES ${wide(300, 1, 400)}`);
      const s2 = store2.snapshot();
      try {
        const w = sqlTable(store, store.manifest('main.w')!);
        const w2 = sqlTable(store2, store2.manifest('main.w')!);
        const one = new TableCache(1_000_000);
        await one.rows(s, w, () => readAll(s, 'main.w'));
        const pool = new CachePool(Math.ceil(one.stats().bytes * 1.5)); // room for one of the two
        const a = new TableCache(1_000_000, { pool });
        const b = new TableCache(1_000_000, { pool });
        await a.rows(s, w, () => readAll(s, 'main.w'));
        await new Promise((r) => setTimeout(r, 5));
        const read2 = async () => {
          const out = { rows: [] as ReturnType<typeof toTuple>[], pks: [] as unknown[][] };
          for await (const batch of s2.scanRows('main.w')) for (const r of batch) { out.rows.push(toTuple(w2, r)); out.pks.push(r.pk); }
          return out;
        };
        await b.rows(s2, w2, read2);
        // b's admission evicted a's entry (the least recently used of the pool)
        expect(a.stats()).toMatchObject({ tables: 0, bytes: 0, evictions: 1 });
        expect(b.stats().tables).toBe(1);
        expect(pool.bytes).toBe(b.stats().bytes);
        expect(b.stats().poolBytes).toBeLessThanOrEqual(b.stats().poolBudgetBytes);
      } finally {
        await s2.release();
      }
    } finally {
      await s.release();
      await store2.close();
      rmSync(dir2, { recursive: true, force: true });
    }
  });

  it('answers the same under constant eviction as with room for everything', async () => {
    const queries = [
      'SELECT count(*), sum(length(s)), sum(x) FROM w',
      'SELECT w.id, z.x, t.v FROM w JOIN z ON z.id = w.id JOIN t ON t.id = w.id ORDER BY w.id',
      'SELECT s, count(*) FROM z GROUP BY s ORDER BY s',
      'SELECT x FROM w WHERE id = 17',
      'SELECT id FROM z WHERE id > 250 AND id <= 260 ORDER BY id',
      'SELECT a.id FROM w a WHERE EXISTS (SELECT 1 FROM z b WHERE b.id = a.id + 1 AND b.x > 100) ORDER BY a.id LIMIT 20',
      'SELECT u.w, t.v FROM u JOIN t ON t.id = u.id ORDER BY 1',
    ];
    const run = async () => {
      const out: unknown[] = [];
      for (let pass = 0; pass < 3; pass++) {
        for (const q of queries) {
          out.push(await rows(q));
          await sql.tables.settled();
          const st = sql.tables.stats();
          expect(st.bytes).toBeLessThanOrEqual(st.budgetBytes);
        }
      }
      return out;
    };
    const roomy = await run();
    expect(sql.tables.stats().tables).toBeGreaterThanOrEqual(3);
    // room for the wide table w alone: queries reading w and z evict or refuse one of them
    const s = store.snapshot();
    const probe = new TableCache(1_000_000);
    await probe.rows(s, sqlTable(store, store.manifest('main.w')!), () => readAll(s, 'main.w'));
    await s.release();
    sql.tables.setBudgetBytes(Math.ceil(probe.stats().bytes * 1.1));
    const before = sql.tables.stats();
    expect(await run()).toEqual(roomy);
    const after = sql.tables.stats();
    expect(after.evictions + after.refusals).toBeGreaterThan(before.evictions + before.refusals);
    expect(after.misses).toBeGreaterThan(before.misses);
    sql.tables.setBudgetBytes(Infinity);
  });
});
